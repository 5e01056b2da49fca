"""ONNX model -> .tflite bytes and the io.json entries, the TFLite writer's one entry point."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from edgebench.converters.base import ConversionError

from . import layout, ops_conv, ops_math, ops_resize, ops_tensor  # noqa: F401  (registration)
from .fusion import fuse
from .graph import TARGET, read_graph
from .lowering import TRANSLATORS, Lowering, Value
from .model_builder import ModelBuilder
from .optimize import optimize

log = logging.getLogger(__name__)
WRITER_VERSION = "edgebench-tflite-1"


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output: ONNX name and shape, the TFLite tensor's name and shape,
    and ``perm`` (ONNX -> TFLite axis order) when it is stored NHWC."""

    onnx_name: str
    onnx_shape: list[int]
    name: str
    shape: list[int]
    perm: list[int] | None
    dtype: str


@dataclass(frozen=True)
class Converted:
    flatbuffer: bytes
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    op_counts: dict[str, int]


def convert_model(
    model: onnx.ModelProto, input_shapes: dict[str, list[int]], precision: str = "fp32"
) -> Converted:
    if precision not in ("fp32", "fp16"):
        raise ConversionError("failed", f"{TARGET} writer has no precision {precision!r}")
    graph = read_graph(model, input_shapes)
    fuse(graph)
    builder = ModelBuilder()
    lowering = Lowering(graph, builder, half=precision == "fp16")

    inputs: list[TensorInfo] = []
    input_tensors: list[int] = []
    for graph_input in graph.inputs:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(graph_input.elem_type))
        if dtype == np.float64 or dtype.kind != "f":
            raise ConversionError(
                "failed", f"{TARGET} writer takes float inputs; {graph_input.name!r} is {dtype}"
            )
        nhwc = len(graph_input.dims) == 4
        tensor = lowering.define(graph_input.name, nhwc=nhwc, dtype=np.float32)
        input_tensors.append(tensor)
        inputs.append(_info(builder, graph_input.name, graph_input.dims, tensor, nhwc, "float32"))

    for node in graph.nodes:
        translate = TRANSLATORS.get(node.op)
        if translate is None:
            raise lowering.unsupported(node)
        translate(lowering, node)

    outputs: list[TensorInfo] = []
    output_tensors: list[int] = []
    for name in graph.outputs:
        value = lowering.value(name)
        tensor = _own_output(lowering, name, value, input_tensors, output_tensors)
        output_tensors.append(tensor)
        dtype_name = builder.tensors[tensor].dtype.name
        shape = list(lowering.shape(name))
        outputs.append(_info(builder, name, shape, tensor, value.nhwc, dtype_name))

    optimize(builder, output_tensors)
    counts: dict[str, int] = {}
    for op in builder.ops:
        counts[op.code] = counts.get(op.code, 0) + 1
    data = builder.serialize(input_tensors, output_tensors, f"{WRITER_VERSION} from ONNX")
    return Converted(data, inputs, outputs, counts)


def _own_output(
    lowering: Lowering, name: str, value: Value, inputs: list[int], taken: list[int]
) -> int:
    """The tensor of output ``name``; a copy when it would be a constant, an input or another
    output's tensor (TFLite outputs must be distinct computed tensors)."""
    tensor = value.tensor
    builder = lowering.builder
    if builder.tensors[tensor].data is None and tensor not in inputs and tensor not in taken:
        return tensor
    shape = builder.tensors[tensor].shape
    copy = builder.tensor(name, shape, builder.tensors[tensor].dtype)
    lowering.reshape_into(tensor, copy, shape)
    return copy


def _info(
    builder: ModelBuilder,
    onnx_name: str,
    onnx_shape: list[int],
    tensor: int,
    nhwc: bool,
    dtype: str,
) -> TensorInfo:
    record = builder.tensors[tensor]
    return TensorInfo(
        onnx_name,
        [int(d) for d in onnx_shape],
        record.name,
        list(record.shape),
        list(layout.TO_NHWC) if nhwc else None,
        dtype,
    )
