"""ONNX -> MNN with MNN's native converter, reached without MNN.tools.

Importing ``MNN.tools`` (what the ``mnnconvert`` console script does) runs pip and uploads usage
logs, so the converter is called through the ``_tools`` extension directly, in a subprocess.
INT8 (calibrated, and weight-only) is in mnn_quant.py.

MNNConvert reads input shapes only from the ONNX file, and keeps a symbolic dim as -1 (batch
as 1): the session resizes such a model to any input shape (``resizeTensor`` +
``resizeSession``). So a dynamic conversion (``ConversionOptions.dynamic``) converts the model
as it is, and a fixed one first writes ``input_shapes`` into a copy of it, so that MNN
folds what those shapes make constant, as for a model exported at that shape.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from .base import ConversionError, ConversionOptions, Converter, read_onnx
from .isolation import convert_in_python_subprocess
from .mnn_quant import QUANT_VERSION, quantize_int8, weight_only_quant
from .subprocess_tools import scratch_dir, stage_model

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
    dynamic_shapes: ClassVar[bool] = True
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
        self.check_dynamic(onnx_path, options)
        target = Path(out_dir) / "model.mnn"
        with _source(Path(onnx_path), Path(out_dir), options) as source:
            if options.precision == "int8":
                self.last_log, self.last_quant = quantize_int8(
                    source,
                    target,
                    options,
                    lambda fp32: self._mnnconvert(source, fp32, "fp32"),
                    self.timeout_s,
                )
                return ["model.mnn"]
            self.last_log = self._mnnconvert(source, target, options.precision)
            if options.precision == "int8-weights":
                self.last_quant = weight_only_quant(target, source, options, self.timeout_s)
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


@contextmanager
def _source(onnx_path: Path, out_dir: Path, options: ConversionOptions) -> Iterator[Path]:
    """The ONNX file to convert: the model itself when it is dynamic or already has the
    input shapes, else a copy with ``input_shapes`` written in (removed afterwards)."""
    if options.dynamic or not _changes_shapes(onnx_path, options.input_shapes):
        yield onnx_path
        return
    with scratch_dir(out_dir.resolve(), "mnn") as work:
        yield stage_model(onnx_path.resolve(), work, options.input_shapes).path


def _changes_shapes(onnx_path: Path, input_shapes: dict[str, list[int]]) -> bool:
    """Whether ``input_shapes`` differ from what the model's inputs declare."""
    if not input_shapes:
        return False
    try:
        model = read_onnx(onnx_path, weights=False)
    except ConversionError:  # not ONNX: MNNConvert's own error says so, with its log
        return False
    declared: dict[str, list[int]] = {}
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        declared[value.name] = [d.dim_value if d.HasField("dim_value") else -1 for d in dims]
    return any(declared.get(name) != list(shape) for name, shape in input_shapes.items())
