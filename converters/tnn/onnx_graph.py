"""The TNN converter's view of an ONNX model: ``graph.read_folded`` plus what the .tnnproto
text format needs of the names."""

from __future__ import annotations

import onnx

from edgebench.converters.base import ConversionError
from edgebench.converters.graph import GraphInput, Node, OnnxGraph, read_folded

__all__ = ["TARGET", "GraphInput", "Node", "OnnxGraph", "load_graph"]

TARGET = "TNN"
# Characters that would break the comma/space/quote separated .tnnproto text.
_BAD_NAME_CHARS = frozenset(' \t\r\n,"')


def load_graph(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> OnnxGraph:
    """Fix the input shapes, fold shape subgraphs and constant nodes, and check that every name
    can go into a .tnnproto."""
    _check_inputs(model, input_shapes)
    graph = read_folded(model, input_shapes, TARGET)
    for name in [*(n.name for n in graph.nodes), *(o for n in graph.nodes for o in n.outputs if o)]:
        _check_name(name)
    return graph


def _check_inputs(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> None:
    """What TNN needs of the inputs before folding: names the .tnnproto can hold, and a shape
    for every dynamic dimension but the batch (which becomes 1, as onnx2tnn does)."""
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        _check_name(value.name)
        if ":" in value.name:  # ':' separates inputs on the .tnnproto input line
            raise ConversionError("failed", f"input name {value.name!r} contains ':'")
        if value.name in input_shapes:
            continue
        for index, dim in enumerate(value.type.tensor_type.shape.dim):
            if index > 0 and not (dim.HasField("dim_value") and dim.dim_value > 0):
                raise ConversionError(
                    "failed",
                    f"input {value.name!r} has a dynamic dimension {index}; "
                    "give its shape with input_shapes",
                )


def _check_name(name: str) -> None:
    if not name or _BAD_NAME_CHARS.intersection(name):
        raise ConversionError(
            "failed", f"name {name!r} cannot go into a .tnnproto (empty, space, comma or quote)"
        )
