"""An ONNX model as the converter sees it: static shapes, constants and plain node records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from edgebench.converters.base import ConversionError, unsupported_op

TARGET = "TNN"
# Characters that would break the comma/space/quote separated .tnnproto text.
_BAD_NAME_CHARS = frozenset(' \t\r\n,"')


@dataclass
class Node:
    """One ONNX node, detached from protobuf so fusion passes can rewrite it."""

    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphInput:
    name: str
    dims: list[int]
    elem_type: int


@dataclass
class OnnxGraph:
    nodes: list[Node]
    constants: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    inputs: list[GraphInput]
    outputs: list[str]
    opset: int


def load_graph(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> OnnxGraph:
    """Fix the input shapes, infer every other shape and split constants from computation."""
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    graph = model_copy.graph
    initializers = {t.name for t in graph.initializer}
    inputs = _fix_inputs(graph, initializers, input_shapes)
    del graph.value_info[:]
    try:
        inferred = shape_inference.infer_shapes(model_copy, data_prop=True)
    except Exception as exc:  # onnx raises several unrelated types here
        raise ConversionError("failed", f"ONNX shape inference failed: {exc}") from exc

    constants = {t.name: numpy_helper.to_array(t) for t in inferred.graph.initializer}
    nodes: list[Node] = []
    used_names: set[str] = set()
    for proto in inferred.graph.node:
        name = proto.name or proto.output[0]
        if proto.domain not in ("", "ai.onnx"):
            raise unsupported_op(f"{proto.domain}.{proto.op_type}", name, TARGET)
        if proto.op_type == "Constant":
            constants[proto.output[0]] = _constant_value(proto)
            continue
        # TNN keys layer resources by layer name, so names must be unique.
        unique = name
        suffix = 1
        while unique in used_names:
            unique = f"{name}_{suffix}"
            suffix += 1
        used_names.add(unique)
        attrs = {a.name: _attribute(a) for a in proto.attribute}
        nodes.append(Node(proto.op_type, unique, list(proto.input), list(proto.output), attrs))

    for name in [*(n.name for n in nodes), *(o for n in nodes for o in n.outputs if o)]:
        _check_name(name)
    return OnnxGraph(
        nodes=nodes,
        constants=constants,
        shapes=_static_shapes(inferred.graph, constants),
        inputs=inputs,
        outputs=[o.name for o in inferred.graph.output],
        opset=_default_opset(inferred),
    )


def _fix_inputs(
    graph: onnx.GraphProto, initializers: set[str], input_shapes: dict[str, list[int]]
) -> list[GraphInput]:
    real = [i for i in graph.input if i.name not in initializers]
    unknown = sorted(set(input_shapes) - {i.name for i in real})
    if unknown:
        raise ConversionError("failed", f"input_shapes names unknown inputs: {', '.join(unknown)}")
    result = []
    for value in real:
        _check_name(value.name)
        if ":" in value.name:  # ':' separates inputs on the .tnnproto input line
            raise ConversionError("failed", f"input name {value.name!r} contains ':'")
        tensor_type = value.type.tensor_type
        if value.name in input_shapes:
            dims = [int(d) for d in input_shapes[value.name]]
        else:
            dims = []
            for index, dim in enumerate(tensor_type.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    dims.append(dim.dim_value)
                elif index == 0:
                    dims.append(1)  # a dynamic batch becomes 1, as onnx2tnn does
                else:
                    raise ConversionError(
                        "failed",
                        f"input {value.name!r} has a dynamic dimension {index}; "
                        "give its shape with input_shapes",
                    )
        del tensor_type.shape.dim[:]
        for dim in dims:
            tensor_type.shape.dim.add().dim_value = dim
        result.append(GraphInput(value.name, dims, tensor_type.elem_type))
    return result


def _static_shapes(
    graph: onnx.GraphProto, constants: dict[str, np.ndarray]
) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if not value.type.HasField("tensor_type"):
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        dims = tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    for name, array in constants.items():
        shapes[name] = array.shape
    return shapes


def _constant_value(proto: onnx.NodeProto) -> np.ndarray:
    attr = proto.attribute[0]
    if attr.name == "value":
        return numpy_helper.to_array(attr.t)
    kinds = {
        "value_float": np.float32,
        "value_floats": np.float32,
        "value_int": np.int64,
        "value_ints": np.int64,
    }
    if attr.name not in kinds:
        raise unsupported_op("Constant", proto.name or proto.output[0], TARGET)
    return np.asarray(helper.get_attribute_value(attr), dtype=kinds[attr.name])


def _attribute(attr: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return value


def _default_opset(model: onnx.ModelProto) -> int:
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return 1


def _check_name(name: str) -> None:
    if not name or _BAD_NAME_CHARS.intersection(name):
        raise ConversionError(
            "failed", f"name {name!r} cannot go into a .tnnproto (empty, space, comma or quote)"
        )
