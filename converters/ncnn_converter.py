"""ONNX -> ncnn with pnnx's native binary, run from the ``ncnn`` toolchain venv.

pnnx writes a dozen files next to its input (``*.pnnx.*``, ``*_pnnx.py``, ``*_ncnn.py``, ...);
only ``model.ncnn.param`` / ``model.ncnn.bin`` are kept, as ``model.param`` / ``model.bin``.
pnnx names the blobs ``in0, in1, ...`` and ``out0, out1, ...`` in ONNX input/output order;
``io.json`` records that mapping for the runner.

int8: pnnx writes the fp32 model, then ``ncnn_int8`` rewrites it into ncnn's int8 format,
calibrated on the calibration set.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from .base import ConversionError, ConversionOptions, unsupported_op
from .calibration_data import load_calibration
from .ncnn_int8 import WRITER_VERSION, quantize_ncnn
from .subprocess_tools import (
    ModelIO,
    StagedModel,
    TensorSpec,
    ToolchainConverter,
    known_shape,
    tensor_entry,
    write_io_json,
)

FILES = ["model.param", "model.bin", "io.json"]
# pnnx's inputshape type suffix by ONNX input dtype (float32 needs none).
_TYPE_SUFFIX = {"float16": "f16", "float64": "f64", "int32": "i32", "int64": "i64", "int8": "i8"}
_TODO = re.compile(r"^todo (\S+)", re.MULTILINE)
_UNKNOWN_OP = re.compile(r"unexpected op_type (\S+)")


class NcnnConverter(ToolchainConverter):
    format = "ncnn"
    framework = "ncnn"
    tool = "pnnx"
    precisions = ("fp32", "fp16", "int8")

    def cache_version(self, options: ConversionOptions) -> str:
        return self.version() + (f"+{WRITER_VERSION}" if options.precision == "int8" else "")

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.last_quant = None
        if options.precision != "int8":
            return super().convert(onnx_path, out_dir, options)
        arrays = load_calibration(options)  # before pnnx runs: a bad set fails fast
        files = super().convert(onnx_path, out_dir, replace(options, precision="fp32"))
        self.last_quant = quantize_ncnn(Path(out_dir).resolve(), arrays, str(options.calibration))
        return files

    def convert_staged(self, staged: StagedModel, out_dir: Path, precision: str) -> list[str]:
        args = [staged.path.name]
        if staged.io and staged.io.inputs:
            args.append("inputshape=" + ",".join(_shape_arg(s) for s in staged.io.inputs))
        args.append(f"fp16={int(precision == 'fp16')}")
        run = self.run_tool(args, staged)
        param, weights = staged.work / "model.ncnn.param", staged.work / "model.ncnn.bin"
        if not (param.is_file() and weights.is_file()) or staged.io is None:
            raise ConversionError("failed", "pnnx wrote no ncnn model", run.log)
        _check_param(param.read_text(), staged.io, run.log)
        os.replace(param, out_dir / "model.param")
        os.replace(weights, out_dir / "model.bin")
        write_io_json(
            out_dir / "io.json",
            "ncnn",
            [_entry(s, f"in{i}") for i, s in enumerate(staged.io.inputs)],
            [_entry(s, f"out{i}") for i, s in enumerate(staged.io.outputs)],
        )
        return list(FILES)

    def unsupported_in(self, log: str, crashed: bool) -> str | None:
        """pnnx prints ``todo <Op>`` for an operator it cannot lower to ncnn and still exits 0."""
        found = _TODO.search(log) or (_UNKNOWN_OP.search(log) if crashed else None)
        return found.group(1) if found else None


def _entry(spec: TensorSpec, blob: str) -> dict:
    """ncnn blobs have no batch axis: ONNX [1,C,H,W] is the blob [C,H,W]."""
    shape = spec.shape if known_shape(spec.shape) else None
    if shape and len(shape) > 1 and shape[0] == 1:
        shape = shape[1:]
    return tensor_entry(spec, blob, shape, None)


def _shape_arg(spec: TensorSpec) -> str:
    dims = ",".join(str(d) for d in spec.shape)
    return f"[{dims}]{_TYPE_SUFFIX.get(spec.dtype, '')}"


def _check_param(text: str, io: ModelIO, log: str) -> None:
    """Every layer must be an ncnn layer and every in<i>/out<i> blob must exist."""
    blobs: set[str] = set()
    for line in text.splitlines()[2:]:
        fields = line.split()
        if len(fields) < 4:
            continue
        layer_type, name = fields[0], fields[1]
        if "." in layer_type or "::" in layer_type:  # pnnx/torch op left untranslated
            error = unsupported_op(layer_type, name, "ncnn")
            error.log = log
            raise error
        n_in, n_out = int(fields[2]), int(fields[3])
        blobs.update(fields[4 : 4 + n_in + n_out])
    expected = [f"in{i}" for i in range(len(io.inputs))]
    expected += [f"out{i}" for i in range(len(io.outputs))]
    missing = [b for b in expected if b not in blobs]
    if missing:
        raise ConversionError(
            "failed", f"pnnx's ncnn param lacks the blobs {missing} for the model's inputs/outputs"
        )
