"""ONNX -> ncnn with pnnx's native binary, run from the ``ncnn`` toolchain venv.

pnnx writes a dozen files next to its input (``*.pnnx.*``, ``*_pnnx.py``, ``*_ncnn.py``, ...);
only ``model.ncnn.param`` / ``model.ncnn.bin`` are kept, as ``model.param`` / ``model.bin``.
pnnx names the blobs ``in0, in1, ...`` and ``out0, out1, ...`` in ONNX input/output order;
``io.json`` records that mapping for the runner.

int8: pnnx writes the fp32 model, then ``ncnn_int8`` rewrites it into ncnn's int8 format,
calibrated on the calibration set.

Before pnnx reads the staged model, a Resize's ``roi`` input is emptied where the Resize ignores
it (every coordinate mode but ``tf_crop_and_resize``): pnnx lowers a Resize to ncnn's Interp only
with an empty roi, and paddle2onnx fills it with ones (PP-OCR's FPN upsampling). A Pad without
a ``mode`` gets its default written out, which pnnx needs to lower it.

Dynamic (``ConversionOptions.dynamic``): pnnx gets the model with its symbolic dims and two
shapes, ``inputshape`` (the representative one in ``input_shapes``) and ``inputshape2`` (its
symbolic axes doubled); where the two traces differ it writes shape expressions (a Reshape
becomes ``6="*(0h,0w),85,3"``) instead of constants, so the param runs at any size. ncnn's
Mats have no batch axis, so the batch stays 1. ``io.json`` records -1 for every dim that
differs between the two shapes.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnx
from onnx import numpy_helper

from .base import ConversionError, ConversionOptions, read_onnx, unsupported_op
from .calibration_data import load_calibration
from .ncnn_int8 import WRITER_VERSION, quantize_ncnn
from .subprocess_tools import (
    ModelIO,
    StagedModel,
    TensorSpec,
    ToolchainConverter,
    known_shape,
    scratch_dir,
    stage_model,
    tensor_entry,
    write_io_json,
)
from .toolchains import require_toolchain

FILES = ["model.param", "model.bin", "io.json"]
# pnnx's inputshape type suffix by ONNX input dtype (float32 needs none).
_TYPE_SUFFIX = {"float16": "f16", "float64": "f64", "int32": "i32", "int64": "i64", "int8": "i8"}
_TODO = re.compile(r"^todo (\S+)", re.MULTILINE)
_UNKNOWN_OP = re.compile(r"unexpected op_type (\S+)")
#: The empty tensor that replaces an ignored Resize roi.
EMPTY_ROI = "edgebench_empty_roi"


class NcnnConverter(ToolchainConverter):
    format = "ncnn"
    framework = "ncnn"
    tool = "pnnx"
    precisions = ("fp32", "fp16", "int8")
    dynamic_shapes: ClassVar[bool] = True
    #: Dynamic conversions: the model's inputs and outputs at ``inputshape2``.
    _second: ModelIO | None = None

    def cache_version(self, options: ConversionOptions) -> str:
        return self.version() + (f"+{WRITER_VERSION}" if options.precision == "int8" else "")

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.last_quant = None
        axes = self.check_dynamic(onnx_path, options)
        if options.dynamic:
            return self._convert_dynamic(Path(onnx_path).resolve(), Path(out_dir), options, axes)
        if options.precision != "int8":
            return super().convert(onnx_path, out_dir, options)
        arrays = load_calibration(options)  # before pnnx runs: a bad set fails fast
        files = super().convert(onnx_path, out_dir, replace(options, precision="fp32"))
        self.last_quant = quantize_ncnn(Path(out_dir).resolve(), arrays, str(options.calibration))
        return files

    def _convert_dynamic(
        self,
        onnx_path: Path,
        out_dir: Path,
        options: ConversionOptions,
        axes: dict[str, list[int]],
    ) -> list[str]:
        """pnnx on the model as it is (symbolic dims kept), with two input shapes; the model
        is staged at each shape only to learn the inputs' and outputs' shapes there."""
        require_toolchain(self.toolchain)
        model = read_onnx(onnx_path, weights=False)
        first, second = _shape_pair(model, axes, options.input_shapes)
        with scratch_dir(out_dir.resolve(), self.tool) as work:
            ios = []
            for label, shapes in (("first", first), ("second", second)):
                (work / label).mkdir()
                ios.append(stage_model(onnx_path, work / label, shapes).io)
            target = work / "model.onnx"
            if _has_external_data(model):  # the copy must carry the weights itself
                onnx.save(read_onnx(onnx_path), str(target))
            else:
                shutil.copyfile(onnx_path, target)
            self._second = ios[1]
            try:
                return self.convert_staged(StagedModel(target, ios[0]), out_dir, options.precision)
            finally:
                self._second = None

    def convert_staged(self, staged: StagedModel, out_dir: Path, precision: str) -> list[str]:
        if staged.io is not None:
            model = read_onnx(staged.path)
            emptied = empty_ignored_roi(model)
            if spell_out_pad_mode(model) or emptied:
                onnx.save(model, str(staged.path))
        args = [staged.path.name]
        scalars = [s.name for s in (staged.io.inputs if staged.io else []) if not s.shape]
        if scalars:
            # pnnx's inputshape list drops an empty [] (and ncnn Mats have no rank 0), so pnnx
            # would only say it counted one shape fewer than the model's inputs.
            raise ConversionError(
                "failed",
                f"ncnn cannot take a rank-0 (scalar) input: {', '.join(map(repr, scalars))}; "
                "pnnx reads only inputs of rank 1 or more",
            )
        int8_io = (
            [
                f"{s.name!r} ({s.dtype})"
                for s in (*staged.io.inputs, *staged.io.outputs)
                if s.dtype in ("int8", "uint8")
            ]
            if staged.io
            else []
        )
        if int8_io:
            # An int8 .tflite's twin keeps its int8 io; pnnx stops at its first Cast.
            raise ConversionError(
                "failed",
                f"ncnn cannot take int8 inputs or outputs: {', '.join(int8_io)}; ncnn blobs "
                "are float (its int8 models quantize inside, from float io)",
            )
        if staged.io and staged.io.inputs:
            args.append("inputshape=" + ",".join(_shape_arg(s) for s in staged.io.inputs))
        second = self._second
        if second is not None:
            args.append("inputshape2=" + ",".join(_shape_arg(s) for s in second.inputs))
        args.append(f"fp16={int(precision == 'fp16')}")
        run = self.run_tool(args, staged)
        param, weights = staged.work / "model.ncnn.param", staged.work / "model.ncnn.bin"
        if not (param.is_file() and weights.is_file()) or staged.io is None:
            raise ConversionError("failed", "pnnx wrote no ncnn model", run.log)
        _check_param(param.read_text(), staged.io, run.log)
        os.replace(param, out_dir / "model.param")
        os.replace(weights, out_dir / "model.bin")
        ins, outs = (second.inputs, second.outputs) if second else ([], [])
        inputs = [_entry(s, f"in{i}", _at(ins, i)) for i, s in enumerate(staged.io.inputs)]
        outputs = [_entry(s, f"out{i}", _at(outs, i)) for i, s in enumerate(staged.io.outputs)]
        write_io_json(out_dir / "io.json", "ncnn", inputs, outputs)
        return list(FILES)

    def unsupported_in(self, log: str, crashed: bool) -> str | None:
        """pnnx prints ``todo <Op>`` for an operator it cannot lower to ncnn and still exits 0."""
        found = _TODO.search(log) or (_UNKNOWN_OP.search(log) if crashed else None)
        return found.group(1) if found else None


def empty_ignored_roi(model: onnx.ModelProto) -> bool:
    """Point every Resize whose ``roi`` its coordinate mode ignores at an empty tensor, in
    place; True when a Resize changed. (The roi is read only by ``tf_crop_and_resize``, and
    from opset 11 on: opset 10's Resize has no roi input.)"""
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 11:
        return False
    empty = {t.name for t in graph.initializer if 0 in t.dims}
    empty |= {
        n.output[0]
        for n in graph.node
        if n.op_type == "Constant" and any(a.name == "value" and 0 in a.t.dims for a in n.attribute)
    }
    changed = False
    for node in graph.node:
        if node.op_type != "Resize" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        mode = attrs.get("coordinate_transformation_mode", b"half_pixel")
        if mode == b"tf_crop_and_resize" or not node.input[1] or node.input[1] in empty:
            continue
        node.input[1] = EMPTY_ROI
        changed = True
    if changed and EMPTY_ROI not in empty:
        graph.initializer.append(numpy_helper.from_array(np.zeros([0], np.float32), EMPTY_ROI))
    return changed


def spell_out_pad_mode(model: onnx.ModelProto) -> bool:
    """Give every Pad without a ``mode`` attribute its default, ``mode="constant"``, in
    place; True when one changed. pnnx lowers a Pad to ncnn's Padding only when the attribute
    is written out (it prints ``todo Pad`` otherwise); .tflite twins and some exporters leave
    the default unsaid."""
    changed = False
    for node in model.graph.node:
        if node.op_type != "Pad" or node.domain not in ("", "ai.onnx"):
            continue
        if not any(a.name == "mode" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("mode", "constant"))
            changed = True
    return changed


def _entry(spec: TensorSpec, blob: str, second: TensorSpec | None = None) -> dict:
    """ncnn blobs have no batch axis: ONNX [1,C,H,W] is the blob [C,H,W]. With ``second``
    (the tensor at pnnx's ``inputshape2``), the dims that differ between the two are -1."""
    shape = spec.shape if known_shape(spec.shape) else None
    if shape and second is not None:
        other = second.shape if known_shape(second.shape) else None
        if other is not None and len(other) == len(shape):
            shape = [d if d == e else -1 for d, e in zip(shape, other, strict=True)]
        else:  # unknown at the second shape: nothing about it is fixed
            shape = None
    blob_shape = shape[1:] if shape and len(shape) > 1 and shape[0] == 1 else shape
    entry = tensor_entry(spec, blob, blob_shape, None)
    entry["onnx_shape"] = shape
    return entry


def _at(specs: list[TensorSpec], index: int) -> TensorSpec | None:
    return specs[index] if index < len(specs) else None


def _shape_pair(
    model: onnx.ModelProto, axes: dict[str, list[int]], given: dict[str, list[int]]
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """pnnx's ``inputshape`` and ``inputshape2`` by input name: the representative shapes
    (``given``, or the model's own for a static input), then the same with every symbolic
    axis but the batch doubled (doubling keeps a network's strides aligned)."""
    initializers = {init.name for init in model.graph.initializer}
    first: dict[str, list[int]] = {}
    second: dict[str, list[int]] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        free = axes.get(value.name, [])
        shape = given.get(value.name)
        if shape is None and free:
            raise ConversionError(
                "failed",
                f"pnnx needs a representative shape for the dynamic input {value.name!r} "
                "(input_shapes, --shape NAME=1,3,H,W)",
            )
        if shape is None:
            shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if 0 in free and shape and shape[0] != 1:
            raise ConversionError(
                "failed",
                f"ncnn runs one sample at a time (its Mats have no batch axis): give input "
                f"{value.name!r} batch 1, not {shape[0]}",
            )
        first[value.name] = list(shape)
        second[value.name] = [2 * d if i in free and i != 0 else d for i, d in enumerate(shape)]
    if first == second:
        raise ConversionError(
            "failed",
            "only the batch of this model is dynamic, and ncnn runs batch 1: "
            "convert a fixed ncnn artifact instead",
        )
    return first, second


def _has_external_data(model: onnx.ModelProto) -> bool:
    return any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)


def _shape_arg(spec: TensorSpec) -> str:
    # Only inputs staged at fixed shapes get here (convert refuses shapeless ones first).
    assert spec.shape is not None, spec.name
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
