"""``tflite_to_onnx``: a .tflite file -> an ONNX model in NCHW whose inputs and outputs keep
the .tflite's names, shapes and NHWC order (a Transpose at each 4-D input and output)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from edgebench.errors import UserError
from edgebench.models.graph import OPSET

from . import ops_conv, ops_math, ops_tensor  # noqa: F401  (registration)
from .emitter import TRANSLATORS, Emitter, Held, dequantize
from .reader import TensorSpec, TfliteGraph, read_tflite

log = logging.getLogger(__name__)
READER_VERSION = "edgebench-tflite-reader-1"
_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9}


@dataclass(frozen=True)
class IoTensor:
    """One model input or output, as in the .tflite: name, shape, dtype and layout ("NHWC"
    for 4-D images, kept at the ONNX twin's edge; "as is" for the rest)."""

    name: str
    shape: list[int]
    dtype: str
    layout: str


@dataclass
class ImportReport:
    source: Path
    onnx_path: Path
    op_counts: dict[str, int]
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    dequantized: bool
    warnings: list[str] = field(default_factory=list)


def tflite_to_onnx(tflite: Path, onnx_out: Path) -> ImportReport:
    graph = read_tflite(tflite)
    model, report = build_onnx(graph)
    onnx_out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, onnx_out)
    report.onnx_path = onnx_out
    for warning in report.warnings:
        log.warning("%s: %s", tflite.name, warning)
    return report


def build_onnx(graph: TfliteGraph) -> tuple[onnx.ModelProto, ImportReport]:
    em = Emitter(graph)
    inputs = [_input(em, index) for index in graph.inputs]
    counts: dict[str, int] = {}
    for op in graph.ops:
        counts[op.kind] = counts.get(op.kind, 0) + 1
        translate = TRANSLATORS.get(op.kind)
        if translate is None:
            raise em.unsupported(op)
        try:
            translate(em, op)
        except (IndexError, KeyError, ValueError, TypeError, ArithmeticError) as exc:
            # A malformed operator (missing inputs, options of the wrong table) or a reader bug.
            detail = (str(exc).splitlines() or [""])[0]
            raise UserError(
                f"{graph.path.name}: op {op.index} ({op.code}) could not be read "
                f"({type(exc).__name__}: {detail}); check the file in LiteRT, or report it "
                "with the file"
            ) from exc
    outputs = [_output(em, index) for index in graph.outputs]
    onnx_graph = helper.make_graph(
        em.nodes,
        graph.path.stem,
        [_value_info(graph.tensors[i]) for i in graph.inputs],
        [_value_info(graph.tensors[i]) for i in graph.outputs],
        em.initializers,
    )
    model = helper.make_model(
        onnx_graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="edgebench",
        producer_version=READER_VERSION,
    )
    model.ir_version = min(model.ir_version, 8)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(
            f"{graph.path.name}: edgebench's .tflite reader made an invalid ONNX model "
            f"({first}); report it with the file"
        ) from exc
    report = ImportReport(
        graph.path, Path(), counts, inputs, outputs, em.dequantized, list(em.warnings)
    )
    return model, report


def _layout(spec: TensorSpec) -> str:
    return "NHWC" if len(spec.shape) == 4 else "as is"


def _input(em: Emitter, index: int) -> IoTensor:
    """The ONNX input; 4-D ones are transposed to NCHW once, int8 ones dequantized."""
    spec = em.spec(index)
    name = spec.name
    if spec.dtype.kind in "iu" and spec.quantization is not None:
        name = _dequantized_input(em, spec)
    em.held[index] = Held(name)
    if len(spec.shape) == 4:
        em.hold_nchw(index)
    return IoTensor(spec.name, list(spec.shape), spec.dtype.name, _layout(spec))


def _dequantized_input(em: Emitter, spec: TensorSpec) -> str:
    """``scale * (q - zero_point)`` written with Cast, Sub and Mul rather than DequantizeLinear,
    which ncnn's converter refuses and MNN's converts into a graph it cannot run."""
    scale, zero = _per_tensor(em, spec)
    em.flag_dequantized(f"int8 input {spec.name!r} dequantized inside the ONNX twin")
    wide = em.node("Cast", [spec.name], spec.name + "__wide", to=_ONNX_TYPES["float32"])
    centred = em.node("Sub", [wide, zero], spec.name + "__centred")
    return em.node("Mul", [centred, scale], spec.name + "__float")


def _output(em: Emitter, index: int) -> IoTensor:
    """The op writing the ONNX output under the .tflite's name: the transpose back to NHWC,
    a requantization for int8 outputs, or an Identity."""
    spec = em.spec(index)
    held = em.value(index)
    source = held.name
    if held.nchw:
        source = em.as_is(index)
    if spec.dtype.kind in "iu" and spec.quantization is not None:
        source = _requantized(em, spec, source)
    em.nodes.append(helper.make_node("Identity", [source], [spec.name], name=f"out_{spec.name}"))
    return IoTensor(spec.name, list(spec.shape), spec.dtype.name, _layout(spec))


def _requantized(em: Emitter, spec: TensorSpec, source: str) -> str:
    """``clip(round(x / scale) + zero_point)`` in the output's integer type, written out with
    plain ops (as ``_dequantized_input``, for the converters that refuse QuantizeLinear)."""
    scale, zero = _per_tensor(em, spec)
    info = np.iinfo(spec.dtype)
    steps = em.node("Round", [em.node("Div", [source, scale], spec.name + "__steps")], "rounded")
    shifted = em.node("Add", [steps, zero], spec.name + "__shifted")
    low, high = (em.constant(np.float32(v), "int_bound") for v in (info.min, info.max))
    clipped = em.node("Clip", [shifted, low, high], spec.name + "__clipped")
    return em.node("Cast", [clipped], spec.name + "__q", to=_ONNX_TYPES[spec.dtype.name])


def _per_tensor(em: Emitter, spec: TensorSpec) -> tuple[str, str]:
    """The io tensor's scale and zero point, as float32 constants."""
    quant = spec.quantization
    assert quant is not None
    if quant.scale.size != 1:
        raise UserError(
            f"{em.graph.path.name}: io tensor {spec.name!r} is quantized per channel; "
            "edgebench's .tflite reader takes per-tensor int8 io only"
        )
    scale = em.constant(np.float32(quant.scale[0]), spec.name + "__scale")
    zero = em.constant(np.float32(quant.zero_point[0]), spec.name + "__zero")
    return scale, zero


def _value_info(spec: TensorSpec) -> onnx.ValueInfoProto:
    if spec.dtype.name not in _ONNX_TYPES:
        raise UserError(f"io tensor {spec.name!r} has type {spec.dtype}, not readable")
    return helper.make_tensor_value_info(spec.name, _ONNX_TYPES[spec.dtype.name], spec.shape)


def real_values(tflite: Path, names: list[str], arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Each array of an int8 (or uint8) quantized output of ``tflite``, by name, as the real
    values it stands for (``scale * (q - zero_point)``); other arrays as they are. Quantized
    outputs are compared as values, not as the integers that encode them."""
    graph = read_tflite(tflite)
    quantized = {
        spec.name: spec.quantization
        for spec in (graph.tensors[i] for i in graph.outputs)
        if spec.dtype.kind in "iu" and spec.quantization is not None
    }
    values = []
    for name, array in zip(names, arrays, strict=True):
        quant = quantized.get(name)
        if quant is not None and np.asarray(array).dtype.kind in "iu":
            array = dequantize(np.asarray(array), quant.scale, quant.zero_point, quant.axis)
        values.append(array)
    return values
