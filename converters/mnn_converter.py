"""ONNX -> MNN with MNN's native converter, reached without MNN.tools.

Importing ``MNN.tools`` (what the ``mnnconvert`` console script does) runs pip and uploads usage
logs, so the converter is called through the ``_tools`` extension directly, in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from .base import ConversionOptions, Converter
from .isolation import convert_in_python_subprocess

_SCRIPT = """
import sys
import _tools
args = ["mnnconvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
        "--bizCode", "edgebench"]
if sys.argv[3] == "fp16":
    args.append("--fp16")
ok = _tools.mnnconvert(args)
sys.exit(0 if ok in (0, True) else 3)
"""


class MnnConverter(Converter):
    format = "mnn"
    framework = "mnn"
    precisions = ("fp32", "fp16")
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

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        target = out_dir / "model.mnn"
        run = convert_in_python_subprocess(
            label="mnnconvert",
            script=_SCRIPT,
            args=[str(onnx_path), str(target), options.precision],
            out_dir=out_dir,
            expected=target,
            timeout=self.timeout_s,
            unsupported_markers=("not support", "unsupported"),
        )
        self.last_log = run.log
        return ["model.mnn"]
