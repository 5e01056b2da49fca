"""Parameter / MAC counting and I/O description of an ONNX model."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import onnx
from onnx import AttributeProto, TensorProto, helper

_FLOAT_TYPE_NAMES = (
    "FLOAT",
    "FLOAT16",
    "DOUBLE",
    "BFLOAT16",
    "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ",
    "FLOAT4E2M1",
    "FLOAT8E8M0",
)
FLOAT_TYPES = frozenset(
    getattr(TensorProto, n) for n in _FLOAT_TYPE_NAMES if hasattr(TensorProto, n)
)
_DEFAULT_DOMAINS = ("", "ai.onnx")

Dim = int | str | None
Shape = tuple[Dim, ...]


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int | str | None, ...]  # str for symbolic dims (dim_param), None for unknown
    dtype: str  # numpy dtype name, e.g. "float32"


@dataclass(frozen=True)
class ModelSummary:
    params: int  # elements of floating-point initializers
    macs: int  # multiply-accumulates of Conv/ConvTranspose/Gemm/MatMul (+ quantized variants)
    macs_complete: bool  # False if some MAC-bearing node had unknown shapes
    inputs: tuple[TensorSpec, ...]  # graph inputs that are not initializers
    outputs: tuple[TensorSpec, ...]
    opset: int
    op_types: tuple[str, ...]  # sorted distinct op types of the main graph


def _dtype_name(elem_type: int) -> str:
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).name
    except (KeyError, ValueError, TypeError):
        return TensorProto.DataType.Name(elem_type).lower()


def _tensor_spec(value: onnx.ValueInfoProto) -> TensorSpec:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return TensorSpec(value.name, (), str(kind))
    tensor = value.type.tensor_type
    dims: list[Dim] = []
    for dim in tensor.shape.dim:
        which = dim.WhichOneof("value")
        dims.append(dim.dim_value if which == "dim_value" else dim.dim_param or None)
    return TensorSpec(value.name, tuple(dims), _dtype_name(tensor.elem_type))


def _known(shape: Shape | None) -> tuple[int, ...] | None:
    if shape is None:
        return None
    dims = tuple(d for d in shape if isinstance(d, int))
    return dims if len(dims) == len(shape) else None


# Each rule returns the MAC count, or None when a needed shape is unknown.
MacRule = Callable[[onnx.NodeProto, dict[str, Shape]], int | None]


def _io(node: onnx.NodeProto, shapes: dict[str, Shape], index: int) -> tuple[int, ...] | None:
    if index >= len(node.input) or not node.input[index]:
        return None
    return _known(shapes.get(node.input[index]))


def _out(node: onnx.NodeProto, shapes: dict[str, Shape]) -> tuple[int, ...] | None:
    return _known(shapes.get(node.output[0])) if node.output else None


def _conv_rule(weight_index: int) -> MacRule:
    # out elements * (Cin / group) * kernel area; the weight is [Cout, Cin / group, *kernel].
    def rule(node: onnx.NodeProto, shapes: dict[str, Shape]) -> int | None:
        weight, out = _io(node, shapes, weight_index), _out(node, shapes)
        if weight is None or out is None:
            return None
        return math.prod(out) * math.prod(weight[1:])

    return rule


def _conv_transpose(node: onnx.NodeProto, shapes: dict[str, Shape]) -> int | None:
    # Every input element is multiplied by a (Cout / group) x kernel slice of the weight.
    x, weight = _io(node, shapes, 0), _io(node, shapes, 1)
    if x is None or weight is None:
        return None
    return math.prod(x) * math.prod(weight[1:])


def _matmul(node: onnx.NodeProto, shapes: dict[str, Shape]) -> int | None:
    # Output elements (batch included) times the contracted dimension.
    a, out = _io(node, shapes, 0), _out(node, shapes)
    if a is None or out is None or not a:
        return None
    return math.prod(out) * a[-1]


def _gemm(node: onnx.NodeProto, shapes: dict[str, Shape]) -> int | None:
    a, out = _io(node, shapes, 0), _out(node, shapes)
    if a is None or out is None or len(a) != 2:
        return None
    trans_a = any(attr.name == "transA" and attr.i for attr in node.attribute)
    return math.prod(out) * (a[0] if trans_a else a[1])


MAC_RULES: dict[str, MacRule] = {
    "Conv": _conv_rule(1),
    "ConvInteger": _conv_rule(1),
    "QLinearConv": _conv_rule(3),
    "ConvTranspose": _conv_transpose,
    "MatMul": _matmul,
    "MatMulInteger": _matmul,
    "QLinearMatMul": _matmul,
    "Gemm": _gemm,
}


def _shape_table(graph: onnx.GraphProto) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            shapes[value.name] = _tensor_spec(value).shape
    for init in graph.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)


def _count_macs(model: onnx.ModelProto) -> tuple[int, bool]:
    graph = model.graph
    shapes = _shape_table(graph)
    local_functions = {(f.domain, f.name) for f in model.functions}
    total, complete = 0, True
    for node in graph.node:
        if _has_subgraph(node) or (node.domain, node.op_type) in local_functions:
            complete = False  # control flow / functions may hide MACs we do not count
            continue
        rule = MAC_RULES.get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
        if rule is None:
            continue
        macs = rule(node, shapes)
        if macs is None:
            complete = False
        else:
            total += macs
    return total, complete


def summarize_model(model: onnx.ModelProto) -> ModelSummary:
    """Count parameters and MACs and describe the I/O of ``model`` (which is not modified)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    initializer_names = {init.name for init in graph.initializer}
    params = sum(
        math.prod(init.dims) for init in graph.initializer if init.data_type in FLOAT_TYPES
    )
    macs, complete = _count_macs(inferred)
    opset = next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 0)
    return ModelSummary(
        params=params,
        macs=macs,
        macs_complete=complete,
        inputs=tuple(_tensor_spec(v) for v in graph.input if v.name not in initializer_names),
        outputs=tuple(_tensor_spec(v) for v in graph.output),
        opset=opset,
        op_types=tuple(sorted({node.op_type for node in graph.node})),
    )
