"""The state of one ONNX -> TFLite lowering: which TFLite tensor holds each ONNX value and in
which layout, with the helpers op translators use to read inputs and define outputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench.converters.base import ConversionError, unsupported_op
from edgebench.converters.graph import Node, OnnxGraph

from . import layout
from .graph import TARGET
from .model_builder import ModelBuilder

# Float constants smaller than this stay float32 in fp16 files (scalars, tiny vectors).
FP16_MIN_ELEMENTS = 16


@dataclass(frozen=True)
class Value:
    """The TFLite tensor of an ONNX value; ``nhwc``: a 4-D value stored NHWC."""

    tensor: int
    nhwc: bool = False


Translator = Callable[["Lowering", Node], None]
TRANSLATORS: dict[str, Translator] = {}


def translates(*ops: str) -> Callable[[Translator], Translator]:
    def register(function: Translator) -> Translator:
        for op in ops:
            TRANSLATORS[op] = function
        return function

    return register


class Lowering:
    def __init__(self, graph: OnnxGraph, builder: ModelBuilder, half: bool) -> None:
        self.graph = graph
        self.builder = builder
        self.half = half
        self.values: dict[str, Value] = {}
        self._views: dict[tuple[str, bool], int] = {}
        self._weights: dict[int, int] = {}

    # --- reading the ONNX graph -------------------------------------------------------------
    @property
    def opset(self) -> int:
        return self.graph.opset

    def shape(self, name: str) -> tuple[int, ...]:
        shape = self.graph.shapes.get(name)
        if shape is None:
            raise ConversionError("failed", f"{TARGET} converter needs a static shape for {name!r}")
        return tuple(int(d) for d in shape)

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def const(self, name: str) -> np.ndarray | None:
        return self.graph.constants.get(name) if name else None

    def input_const(self, node: Node, index: int) -> np.ndarray | None:
        if index >= len(node.inputs) or not node.inputs[index]:
            return None
        return self.const(node.inputs[index])

    def require_const(self, node: Node, index: int, what: str) -> np.ndarray:
        value = self.input_const(node, index)
        if value is None:
            raise self.unsupported(node, f"{what} must be a constant")
        return value

    def has_input(self, node: Node, index: int) -> bool:
        return index < len(node.inputs) and bool(node.inputs[index])

    def unsupported(self, node: Node, detail: str = "") -> ConversionError:
        error = unsupported_op(node.op, node.name, TARGET)
        message = f"{error.message}: {detail}" if detail else error.message
        return ConversionError(error.kind, message)

    # --- TFLite tensors of ONNX values ----------------------------------------------------
    def value(self, name: str) -> Value:
        if name not in self.values:
            array = self.const(name)
            if array is None:
                raise ConversionError("failed", f"{TARGET} converter: {name!r} is never produced")
            self.values[name] = Value(self.constant(array, name))
        return self.values[name]

    def is_nhwc(self, name: str) -> bool:
        return self.value(name).nhwc

    def tensor(self, name: str, nhwc: bool) -> int:
        """The TFLite tensor of ``name`` in the asked layout, transposing once if needed."""
        value = self.value(name)
        if value.nhwc == nhwc:
            return value.tensor
        key = (name, nhwc)
        if key not in self._views:
            if nhwc and self.rank(name) != 4:
                raise ConversionError("failed", f"{name!r} is not 4-D and cannot be NHWC")
            array = self.const(name)
            if array is not None:
                view = np.transpose(array, layout.TO_NHWC if nhwc else layout.TO_NCHW)
                self._views[key] = self.constant(view, name)
            else:
                perm = layout.TO_NHWC if nhwc else layout.TO_NCHW
                self._views[key] = self.transpose(value.tensor, perm, name)
        return self._views[key]

    def onnx_order(self, name: str) -> int:
        return self.tensor(name, False)

    def nhwc(self, name: str) -> int:
        return self.tensor(name, True)

    def define(self, name: str, nhwc: bool = False, dtype: object = np.float32) -> int:
        """A new tensor for ONNX value ``name`` (static shape, in the given layout)."""
        shape = layout.to_layout(self.shape(name), nhwc)
        index = self.builder.tensor(name, shape, dtype)
        self.values[name] = Value(index, nhwc)
        return index

    def alias(self, name: str, value: Value) -> None:
        """``name`` is the same data as an existing value (a no-op in TFLite)."""
        self.values[name] = value

    def scratch(self, hint: str, shape: tuple[int, ...], dtype: object = np.float32) -> int:
        return self.builder.tensor(hint, shape, dtype)

    def constant(self, array: np.ndarray | np.generic, hint: str) -> int:
        return self.builder.constant(np.asarray(array), hint)

    def int32(self, values: object, hint: str) -> int:
        return self.builder.constant(np.asarray(values, dtype=np.int32), hint)

    def weight(self, array: np.ndarray, hint: str) -> int:
        """A float weight: float32, or in fp16 files a float16 constant behind a DEQUANTIZE."""
        array = np.asarray(array, dtype=np.float32)
        index = self.builder.constant(array, hint)
        if not self.half or array.size < FP16_MIN_ELEMENTS:
            return index
        if index not in self._weights:
            half = self.builder.constant(array.astype(np.float16), hint + "_fp16")
            full = self.builder.tensor(hint + "_dequantized", array.shape)
            self.emit("DEQUANTIZE", [half], [full])
            self._weights[index] = full
        return self._weights[index]

    def emit(
        self,
        code: str,
        inputs: list[int],
        outputs: list[int],
        options: str | None = None,
        **fields: Any,
    ) -> None:
        """``fields``: the options table's fields, and ``version`` (as ``ModelBuilder.op``)."""
        self.builder.op(code, inputs, outputs, options, **fields)

    def transpose(self, source: int, perm: tuple[int, ...], hint: str) -> int:
        """``numpy.transpose(source, perm)`` as a new tensor; a RESHAPE when only unit axes move."""
        shape = self.builder.tensors[source].shape
        new_shape = tuple(shape[a] for a in perm)
        out = self.scratch(f"{hint}_t", new_shape, self.builder.tensors[source].dtype)
        if layout.moves_only_unit_axes(shape, perm):
            self.reshape_into(source, out, new_shape)
        else:
            self.emit("TRANSPOSE", [source, self.int32(perm, "perm")], [out])
        return out

    def reshape_into(self, source: int, out: int, shape: tuple[int, ...]) -> None:
        self.emit(
            "RESHAPE",
            [source, self.int32(shape, "shape")],
            [out],
            "ReshapeOptions",
            newShape=[int(d) for d in shape],
        )
