"""An ONNX model as edgebench's own converters see it: folded to static shapes
(``folding.fold_model``), with constants split from computation and each node a plain record
that rewrite passes can change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgebench.converters.base import unsupported_op
from edgebench.converters.folding import fold_model


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


def read_folded(
    model: onnx.ModelProto, input_shapes: dict[str, list[int]], target: str
) -> OnnxGraph:
    """Fold ``model`` at the given input shapes and read it into records. Node names are made
    unique (a node without one takes its first output's); an op from another domain is
    unsupported by ``target``."""
    folded = fold_model(model, input_shapes)
    graph = folded.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes: list[Node] = []
    used_names: set[str] = set()
    for proto in graph.node:
        name = proto.name or proto.output[0]
        if proto.domain not in ("", "ai.onnx"):
            raise unsupported_op(f"{proto.domain}.{proto.op_type}", name, target)
        unique = name
        suffix = 1
        while unique in used_names:
            unique = f"{name}_{suffix}"
            suffix += 1
        used_names.add(unique)
        attrs = {a.name: _attribute(a) for a in proto.attribute}
        nodes.append(Node(proto.op_type, unique, list(proto.input), list(proto.output), attrs))
    shapes = _static_shapes(graph, constants)
    inputs = [
        GraphInput(v.name, list(shapes[v.name]), v.type.tensor_type.elem_type)
        for v in graph.input
        if v.name not in constants
    ]
    return OnnxGraph(
        nodes=nodes,
        constants=constants,
        shapes=shapes,
        inputs=inputs,
        outputs=[o.name for o in graph.output],
        opset=_default_opset(folded),
    )


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
        if all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    for name, array in constants.items():
        shapes[name] = array.shape
    return shapes


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
