"""The state of one .tflite -> ONNX translation: which ONNX value holds each TFLite tensor and
in which layout, plus the helpers the op translators use.

A 4-D activation made or read by an NHWC op (convolution, pooling, resize) is held NCHW, the
TFLite tensor transposed by ``TO_NCHW``; every other tensor is held as is, in TFLite's own axis
order. ``get(t, nchw)`` gives a tensor in the asked layout, adding one Transpose if needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgebench.errors import UserError

from ..tflite.layout import TO_NCHW, TO_NHWC
from .reader import OpSpec, Quantization, TensorSpec, TfliteGraph

#: fusedActivationFunction values of the schema: NONE 0, RELU 1, RELU_N1_TO_1 2, RELU6 3, TANH 4,
#: SIGN_BIT 5.
_ACTIVATION_BOUNDS = {1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_IGNORED_ACTIVATIONS = {4: "TANH", 5: "SIGN_BIT"}
_INT8_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


@dataclass(frozen=True)
class Held:
    """The ONNX value of a TFLite tensor; ``nchw``: a 4-D NHWC tensor held transposed."""

    name: str
    nchw: bool = False


@dataclass
class Emitter:
    graph: TfliteGraph
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    held: dict[int, Held] = field(default_factory=dict)
    folded: dict[int, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    dequantized: bool = False
    _names: set[str] = field(default_factory=set)
    _views: dict[tuple[int, bool], str] = field(default_factory=dict)
    _next: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The model's own io names are kept for the ONNX graph's inputs and outputs.
        for index in (*self.graph.inputs, *self.graph.outputs):
            self._names.add(self.graph.tensors[index].name)

    # --- names and nodes -----------------------------------------------------------------
    def unique(self, hint: str) -> str:
        """``hint``, or ``hint__N`` with the next free N (counted per hint, so that thousands
        of "shape" constants do not rescan the taken names)."""
        base = hint or "t"
        name, n = base, self._next.get(base, 1)
        while name in self._names:
            name = f"{base}__{n}"
            n += 1
        self._next[base] = n
        self._names.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], hint: str, **attrs: Any) -> str:
        (output,) = self.node_n(op_type, inputs, hint, 1, **attrs)
        return output

    def node_n(
        self, op_type: str, inputs: Sequence[str], hint: str, count: int, **attrs: Any
    ) -> list[str]:
        """``attrs`` are ONNX attribute values, as ``onnx.helper.make_node`` takes them."""
        outputs = [self.unique(hint) for _ in range(count)]
        name = self.unique(f"{op_type}_{hint}")
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs

    def constant(self, array: np.ndarray | np.generic, hint: str) -> str:
        name = self.unique(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def int64(self, values: object, hint: str) -> str:
        return self.constant(np.asarray(values, dtype=np.int64), hint)

    # --- TFLite tensors ------------------------------------------------------------------
    def spec(self, index: int) -> TensorSpec:
        return self.graph.tensors[index]

    def shape(self, index: int) -> tuple[int, ...]:
        return self.spec(index).shape

    def rank(self, index: int) -> int:
        return len(self.spec(index).shape)

    def const(self, index: int) -> np.ndarray | None:
        """A constant tensor as float (int8 and fp16 weights dequantized) or its own integers."""
        if index < 0:
            return None
        if index in self.folded:
            return self.folded[index]
        spec = self.spec(index)
        if spec.data is None:
            return None
        quant = spec.quantization
        if quant is not None and spec.dtype.kind in "iu" and spec.dtype != np.int64:
            value = dequantize(spec.data, quant.scale, quant.zero_point, quant.axis)
            kind = "biases" if spec.dtype == np.int32 else "weights"
            self.flag_dequantized(f"{spec.dtype.name} {kind} dequantized to float32")
            self.folded[index] = value
            return value
        if spec.dtype == np.float16:
            return spec.data.astype(np.float32)
        return spec.data

    def require_const(self, op: OpSpec, position: int, what: str) -> np.ndarray:
        value = self.const(op.inputs[position]) if position < len(op.inputs) else None
        if value is None:
            raise self.unsupported(op, f"{what} must be a constant")
        return value

    def is_nchw(self, index: int) -> bool:
        return self.value(index).nchw

    def value(self, index: int) -> Held:
        if index not in self.held:
            array = self.const(index)
            if array is None:
                spec = self.spec(index)
                raise UserError(
                    f"{self.graph.path.name}: tensor {index} ({spec.name!r}) is read before "
                    "any operator writes it; the file is malformed, export it again"
                )
            self.held[index] = Held(self.constant(array, self.spec(index).name))
        return self.held[index]

    def get(self, index: int, nchw: bool) -> str:
        """The ONNX value of tensor ``index`` in the asked layout."""
        held = self.value(index)
        if held.nchw == nchw:
            return held.name
        key = (index, nchw)
        if key not in self._views:
            perm = TO_NCHW if nchw else TO_NHWC
            array = self.const(index)
            hint = f"{self.spec(index).name}__{'nchw' if nchw else 'nhwc'}"
            if array is not None:
                self._views[key] = self.constant(np.transpose(array, perm), hint)
            else:
                self._views[key] = self.node("Transpose", [held.name], hint, perm=list(perm))
        return self._views[key]

    def as_is(self, index: int) -> str:
        return self.get(index, False)

    def nchw(self, index: int) -> str:
        if self.rank(index) != 4:
            spec = self.spec(index)
            raise UserError(
                f"{self.graph.path.name}: tensor {index} ({spec.name!r}) has shape "
                f"{list(spec.shape)}; an NHWC operator needs 4-D"
            )
        return self.get(index, True)

    def hold_nchw(self, index: int) -> None:
        """Hold a tensor held as is NCHW from now on; readers in NHWC order get the original."""
        as_is = self.value(index).name
        self.held[index] = Held(self.nchw(index), True)
        self._views[(index, False)] = as_is

    def alias(self, index: int, held: Held) -> None:
        self.held[index] = held

    def output(
        self,
        op: OpSpec,
        op_type: str,
        inputs: Sequence[str],
        nchw: bool,
        activation: int = 0,
        position: int = 0,
        /,
        **attrs: object,
    ) -> str:
        """Emit the op that writes output ``position`` of ``op``, then its fused activation."""
        index = op.outputs[position]
        result = self.node(op_type, inputs, self.spec(index).name, **attrs)
        result = self.activate(op, result, activation)
        result = self.saturate(op, index, result)
        self.held[index] = Held(result, nchw)
        return result

    def saturate(self, op: OpSpec, index: int, name: str) -> str:
        """An int8 (or uint8) activation computed in float, clamped to the range its int8
        values can hold, as LiteRT's int8 kernels saturate. Not needed when the op's first
        input has the same parameters (moving values cannot leave the range)."""
        spec = self.spec(index)
        quant = spec.quantization
        if quant is None or spec.dtype not in _INT8_TYPES or quant.scale.size != 1:
            return name
        source = self.spec(op.inputs[0]).quantization if op.inputs and op.inputs[0] >= 0 else None
        if source is not None and _same(source, quant) and op.code != "QUANTIZE":
            return name
        info = np.iinfo(spec.dtype)
        zero, scale = float(quant.zero_point.reshape(-1)[0]), float(quant.scale[0])
        bounds = [(info.min - zero) * scale, (info.max - zero) * scale]
        limits = [self.constant(np.float32(b), "int8_bound") for b in bounds]
        return self.node("Clip", [name, *limits], name + "_int8_range")

    def activate(self, op: OpSpec, name: str, activation: int) -> str:
        """The fused activation after ``name``. LiteRT's kernels clamp only for the ReLU
        family and ignore a fused TANH or SIGN_BIT, so the twin does too (and says so)."""
        if activation in _IGNORED_ACTIVATIONS:
            self.warnings.append(
                f"op {op.index} ({op.code}): fused activation {_IGNORED_ACTIVATIONS[activation]} "
                "ignored, as LiteRT's kernels ignore it"
            )
            return name
        if not activation:
            return name
        if activation not in _ACTIVATION_BOUNDS:
            raise self.unsupported(op, f"fused activation {activation}")
        low, high = _ACTIVATION_BOUNDS[activation]
        if high is None:
            return self.node("Relu", [name], name + "_relu")
        bounds = [self.constant(np.float32(b), "bound") for b in (low, high)]
        return self.node("Clip", [name, *bounds], name + "_clip")

    def flag_dequantized(self, warning: str) -> None:
        self.dequantized = True
        if warning not in self.warnings:
            self.warnings.append(warning)

    def unsupported(self, op: OpSpec, detail: str = "") -> UserError:
        custom = f' "{op.custom_code}"' if op.custom_code else ""
        what = f"{op.code}{custom}" + (f": {detail}" if detail else "")
        return UserError(
            f"{self.graph.path.name}: op {op.index} ({what}) is not supported by edgebench's "
            ".tflite reader; measure the model with tflite only, or convert it to ONNX with a "
            "tool that knows this op and pass the .onnx"
        )


def _same(a: Quantization, b: Quantization) -> bool:
    return np.array_equal(a.scale, b.scale) and np.array_equal(a.zero_point, b.zero_point)


def dequantize(
    data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int
) -> np.ndarray:
    values = data.astype(np.float32)
    if scale.size == 1 or data.ndim == 0:
        return (values - np.float32(zero_point.reshape(-1)[0])) * scale.reshape(-1)[0]
    shape = [1] * data.ndim
    shape[axis] = -1
    zero = zero_point.reshape(shape) if zero_point.size == scale.size else zero_point.reshape(-1)[0]
    return ((values - zero) * scale.reshape(shape)).astype(np.float32)


Translator = Callable[[Emitter, OpSpec], None]
TRANSLATORS: dict[str, Translator] = {}


def translates(*codes: str) -> Callable[[Translator], Translator]:
    def register(function: Translator) -> Translator:
        for code in codes:
            TRANSLATORS[code] = function
        return function

    return register


def to_held_axis(axis: int, rank: int, nchw: bool) -> int:
    """Where TFLite axis ``axis`` is in the ONNX value held in the given layout."""
    axis = axis + rank if axis < 0 else axis
    return TO_NHWC[axis] if nchw else axis


def held_constant(array: np.ndarray, rank: int, nchw: bool) -> np.ndarray:
    """A constant operand broadcast against a rank-``rank`` tensor held NCHW or as is."""
    value = np.asarray(array)
    if not nchw or value.ndim == 0:
        return value
    value = value.reshape((1,) * (rank - value.ndim) + value.shape)
    return np.transpose(value, TO_NCHW)
