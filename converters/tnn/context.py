"""What op translators produce (``Layer``) and what they may ask about the graph (``Context``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edgebench.converters.base import ConversionError, unsupported_op
from edgebench.converters.tnn.binary import half_truncated
from edgebench.converters.tnn.onnx_graph import TARGET, Node, OnnxGraph

# A layer resource is the sequence of values its TNN interpreter serializes, in order:
# int -> PutInt, str -> PutString, ndarray -> PutRaw.
ResourceItem = int | str | np.ndarray


@dataclass
class Layer:
    """One line of the .tnnproto and, if ``resource`` is set, one entry of the .tnnmodel."""

    type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    # The text after the output names, exactly as TNN's converter prints it.
    params: str = ""
    resource: Sequence[ResourceItem] | None = None
    # Constant blobs this layer reads as inputs; they go to the model's constant map.
    constant_inputs: list[str] = field(default_factory=list)


class Context:
    def __init__(self, graph: OnnxGraph, precision: str) -> None:
        if precision not in ("fp32", "fp16"):
            raise ConversionError("failed", f"TNN converter has no precision {precision!r}")
        self.graph = graph
        self.half = precision == "fp16"

    @property
    def opset(self) -> int:
        return self.graph.opset

    def const(self, name: str) -> np.ndarray | None:
        return self.graph.constants.get(name) if name else None

    def input_const(self, node: Node, index: int) -> np.ndarray | None:
        """The constant value of optional input ``index``, None when absent or computed."""
        if index >= len(node.inputs) or not node.inputs[index]:
            return None
        return self.const(node.inputs[index])

    def input_consts(self, node: Node) -> list[np.ndarray | None]:
        """Each input's constant value (None: computed at run time). A node whose inputs are
        all constants is unsupported: onnx2tnn leaves nothing for the layer to compute."""
        values = [self.const(name) for name in node.inputs]
        if all(value is not None for value in values):
            raise self.unsupported(node, "all inputs are constants")
        return values

    def constant_operand(self, node: Node) -> tuple[int, np.ndarray, str] | None:
        """For a two-input op: the position and value of its constant input and the name of
        the other input; None when neither input is a constant."""
        a, b = node.inputs
        const_a, const_b = self.input_consts(node)
        if const_b is not None:
            return 1, const_b, a
        return None if const_a is None else (0, const_a, b)

    def require_const(self, node: Node, index: int, what: str) -> np.ndarray:
        value = self.input_const(node, index)
        if value is None:
            raise self.unsupported(node, f"{what} must be a constant")
        return value

    def shape(self, name: str) -> tuple[int, ...]:
        shape = self.graph.shapes.get(name)
        if shape is None:
            raise ConversionError("failed", f"TNN converter needs a static shape for {name!r}")
        return shape

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def weight(self, values: np.ndarray) -> np.ndarray:
        """Float weights as onnx2tnn stores them for the chosen precision."""
        array = np.asarray(values, dtype=np.float32)
        return half_truncated(array) if self.half else array

    def unsupported(self, node: Node, detail: str) -> ConversionError:
        """An op variant TNN cannot express; same kind and first words as unsupported_op."""
        error = unsupported_op(node.op, node.name, TARGET)
        return ConversionError(error.kind, f"{error.message}: {detail}")


def as_tnn_tensor(values: np.ndarray) -> np.ndarray:
    """A constant as onnx2tnn writes it with DATA_TYPE_AUTO: float32, int32 or int8."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    if array.dtype == np.bool_:
        return array.astype(np.int8)
    if array.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        # np.clip turns a 0-d array into a scalar; keep it an array.
        return np.asarray(np.clip(array, info.min, info.max), dtype=np.int32)
    raise ConversionError("failed", f"TNN cannot store a constant of type {array.dtype}")


def axis_index(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis
