"""ONNX -> MNN with MNN's native converter, reached without MNN.tools.

Importing ``MNN.tools`` (what the ``mnnconvert`` console script does) runs pip and uploads usage
logs, so the converter is called through the ``_tools`` extension directly, in a subprocess.
INT8 (calibrated, and weight-only) is in mnn_quant.py.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from .base import ConversionOptions, Converter
from .isolation import convert_in_python_subprocess
from .mnn_quant import QUANT_VERSION, quantize_int8, weight_only_quant

_SCRIPT = """
import sys
import _tools
args = ["mnnconvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
        "--bizCode", "edgebench"]
if sys.argv[3] == "fp16":
    args.append("--fp16")
if sys.argv[3] == "int8-weights":
    args += ["--weightQuantBits", "8"]
ok = _tools.mnnconvert(args)
sys.exit(0 if ok in (0, True) else 3)
"""


class MnnConverter(Converter):
    format = "mnn"
    framework = "mnn"
    precisions = ("fp32", "fp16", "int8", "int8-weights")
    timeout_s = 600.0

    def version(self) -> str:
        try:
            return "mnnconvert-" + importlib.metadata.version("mnn")
        except importlib.metadata.PackageNotFoundError:
            return "mnnconvert-missing"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("_tools") is None:
            return "the MNN converter needs the mnn package: pip install 'edgebench[mnn]'"
        return None

    def cache_version(self, options: ConversionOptions) -> str:
        quantized = options.precision in ("int8", "int8-weights")
        return self.version() + (f"+{QUANT_VERSION}" if quantized else "")

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.last_quant = None
        target = out_dir / "model.mnn"
        if options.precision == "int8":
            self.last_log, self.last_quant = quantize_int8(
                onnx_path,
                target,
                options,
                lambda fp32: self._mnnconvert(onnx_path, fp32, "fp32"),
                self.timeout_s,
            )
            return ["model.mnn"]
        self.last_log = self._mnnconvert(onnx_path, target, options.precision)
        if options.precision == "int8-weights":
            self.last_quant = weight_only_quant(target, onnx_path, options, self.timeout_s)
        return ["model.mnn"]

    def _mnnconvert(self, onnx_path: Path, target: Path, precision: str) -> str:
        run = convert_in_python_subprocess(
            label="mnnconvert",
            script=_SCRIPT,
            args=[str(onnx_path), str(target), precision],
            out_dir=target.parent,
            expected=target,
            timeout=self.timeout_s,
            unsupported_markers=("not support", "unsupported"),
        )
        return run.log
