"""Elementwise ops, activations, normalisations, Softmax and matrix products."""

from __future__ import annotations

import math

import numpy as np

from edgebench.converters.graph import Node

from . import layout
from .lowering import Lowering, Value, translates

NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
_BINARY = {
    "Add": ("ADD", "AddOptions"),
    "Sub": ("SUB", "SubOptions"),
    "Mul": ("MUL", "MulOptions"),
    "Div": ("DIV", "DivOptions"),
    "Max": ("MAXIMUM", "MaximumMinimumOptions"),
    "Min": ("MINIMUM", "MaximumMinimumOptions"),
    "Pow": ("POW", "PowOptions"),
}
_UNARY = {
    "Relu": "RELU",
    "Sigmoid": "LOGISTIC",
    "Tanh": "TANH",
    "Exp": "EXP",
    "Log": "LOG",
    "Sqrt": "SQRT",
    "Abs": "ABS",
    "Neg": "NEG",
    "Elu": "ELU",
}


def operands(lowering: Lowering, names: list[str], out: str) -> tuple[list[int], bool]:
    """The inputs of an elementwise op in one layout, and whether that layout is NHWC.

    NHWC when the result is 4-D and a computed 4-D input already is; constants follow."""
    rank = lowering.rank(out)
    computed = [n for n in names if lowering.const(n) is None]
    nhwc = (
        rank == 4
        and any(lowering.rank(n) == 4 and lowering.is_nhwc(n) for n in computed)
        and all(lowering.rank(n) == 4 for n in computed)
    )
    tensors = []
    for name in names:
        array = lowering.const(name)
        if array is None:
            tensors.append(lowering.tensor(name, nhwc))
        else:
            value = layout.broadcast_constant(array, rank, nhwc)
            if value.dtype.kind == "f":
                tensors.append(lowering.weight(value, name))
            else:
                tensors.append(lowering.constant(value, name))
    return tensors, nhwc


@translates(*_BINARY)
def binary(lowering: Lowering, node: Node) -> None:
    code, options = _BINARY[node.op]
    if node.op == "Pow":
        exponent = lowering.input_const(node, 1)
        if exponent is not None and exponent.size == 1:
            value = float(exponent.reshape(-1)[0])
            if value in (0.5, 1.0, 2.0):
                return _simple_power(lowering, node, value)
    tensors, nhwc = operands(lowering, node.inputs, node.outputs[0])
    result = lowering.define(node.outputs[0], nhwc)
    fields = {"fusedActivationFunction": NONE} if node.op in ("Add", "Sub", "Mul", "Div") else {}
    lowering.emit(code, tensors, [result], options, **fields)


def _simple_power(lowering: Lowering, node: Node, exponent: float) -> None:
    source, nhwc = lowering.value(node.inputs[0]).tensor, lowering.is_nhwc(node.inputs[0])
    if exponent == 1.0:
        lowering.alias(node.outputs[0], Value(source, nhwc))
        return
    result = lowering.define(node.outputs[0], nhwc)
    if exponent == 2.0:
        lowering.emit("MUL", [source, source], [result], "MulOptions")
    else:
        lowering.emit("SQRT", [source], [result])


@translates(*_UNARY)
def unary(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    if node.op == "Elu" and float(node.attrs.get("alpha", 1.0)) != 1.0:
        raise lowering.unsupported(node, "alpha other than 1")
    lowering.emit(_UNARY[node.op], [value.tensor], [result])


@translates("Reciprocal")
def reciprocal(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    one = lowering.constant(np.asarray(1.0, np.float32), "one")
    lowering.emit("DIV", [one, value.tensor], [result], "DivOptions")


@translates("LeakyRelu")
def leaky_relu(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit(
        "LEAKY_RELU",
        [value.tensor],
        [result],
        "LeakyReluOptions",
        alpha=float(node.attrs.get("alpha", 0.01)),
    )


@translates("PRelu")
def prelu(lowering: Lowering, node: Node) -> None:
    slope = lowering.require_const(node, 1, "the slope")
    value = lowering.value(node.inputs[0])
    rank = lowering.rank(node.inputs[0])
    slope = layout.broadcast_constant(slope.astype(np.float32), rank, value.nhwc)
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit("PRELU", [value.tensor, lowering.weight(slope, node.name + "_slope")], [result])


@translates("Clip")
def clip(lowering: Lowering, node: Node) -> None:
    if lowering.opset < 11:
        low, high = node.attrs.get("min"), node.attrs.get("max")
    else:
        bounds = [lowering.input_const(node, i) for i in (1, 2)]
        for i, bound in zip((1, 2), bounds, strict=True):
            if lowering.has_input(node, i) and bound is None:
                raise lowering.unsupported(node, "min and max must be constants")
        low, high = (None if b is None else float(b.reshape(-1)[0]) for b in bounds)
    value = lowering.value(node.inputs[0])
    known: dict[tuple[float | None, float | None], str] = {
        (0.0, 6.0): "RELU6",
        (0.0, None): "RELU",
        (-1.0, 1.0): "RELU_N1_TO_1",
    }
    code = known.get((low, high))
    if code:
        result = lowering.define(node.outputs[0], value.nhwc)
        lowering.emit(code, [value.tensor], [result])
        return
    current = value.tensor
    shape = lowering.builder.tensors[current].shape
    steps = [(b, c) for b, c in ((low, "MAXIMUM"), (high, "MINIMUM")) if b is not None]
    for i, (bound, code) in enumerate(steps):
        last = i == len(steps) - 1
        out = (
            lowering.define(node.outputs[0], value.nhwc)
            if last
            else lowering.scratch(node.name + "_low", shape)
        )
        bound_tensor = lowering.constant(np.asarray(bound, np.float32), "bound")
        lowering.emit(code, [current, bound_tensor], [out], "MaximumMinimumOptions")
        current = out
    if not steps:
        lowering.alias(node.outputs[0], value)


@translates("HardSigmoid")
def hard_sigmoid(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    _hard_sigmoid_into(lowering, node, value.tensor, result)


def _hard_sigmoid_into(lowering: Lowering, node: Node, source: int, result: int) -> None:
    """max(0, min(1, a*x + b)) = relu6(6a*x + 6b) / 6: a MUL, an ADD with RELU6 fused, a MUL."""
    alpha = float(node.attrs.get("alpha", 0.2))
    beta = float(node.attrs.get("beta", 0.5))
    shape = lowering.builder.tensors[source].shape
    scaled = lowering.scratch(node.name + "_scaled", shape)
    shifted = lowering.scratch(node.name + "_shifted", shape)
    six_a = lowering.constant(np.float32(6 * alpha), "6a")
    lowering.emit("MUL", [source, six_a], [scaled], "MulOptions")
    six_b = lowering.constant(np.float32(6 * beta), "6b")
    lowering.emit("ADD", [scaled, six_b], [shifted], "AddOptions", fusedActivationFunction=RELU6)
    sixth = lowering.constant(np.float32(1 / 6), "sixth")
    lowering.emit("MUL", [shifted, sixth], [result], "MulOptions")


@translates("HardSwish")
def hard_swish(lowering: Lowering, node: Node) -> None:
    """HARD_SWISH is x * relu6(x + 3) / 6; a fused x * HardSigmoid(x) with another alpha or beta
    (paddle exports alpha 0.2) is written out as HardSigmoid and MUL."""
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    alpha = float(node.attrs.get("alpha", 1 / 6))
    beta = float(node.attrs.get("beta", 0.5))
    if math.isclose(alpha, 1 / 6, rel_tol=1e-6) and math.isclose(beta, 0.5):
        lowering.emit("HARD_SWISH", [value.tensor], [result])
        return
    gate = lowering.scratch(node.name + "_gate", lowering.builder.tensors[value.tensor].shape)
    _hard_sigmoid_into(lowering, node, value.tensor, gate)
    lowering.emit("MUL", [value.tensor, gate], [result], "MulOptions")


@translates("Swish")
def swish(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    gate = lowering.scratch(node.name + "_sigmoid", lowering.builder.tensors[value.tensor].shape)
    lowering.emit("LOGISTIC", [value.tensor], [gate])
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit("MUL", [value.tensor, gate], [result], "MulOptions")


@translates("GELU")
def gelu(lowering: Lowering, node: Node) -> None:
    value = lowering.value(node.inputs[0])
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit("GELU", [value.tensor], [result], "GeluOptions", approximate=False)


@translates("Softmax", "LogSoftmax")
def softmax(lowering: Lowering, node: Node) -> None:
    rank = lowering.rank(node.inputs[0])
    default = -1 if lowering.opset >= 13 else 1
    axis = layout.normalize_axis(int(node.attrs.get("axis", default)), rank)
    code, options = (
        ("SOFTMAX", "SoftmaxOptions")
        if node.op == "Softmax"
        else ("LOG_SOFTMAX", "LogSoftmaxOptions")
    )
    fields = {"beta": 1.0} if node.op == "Softmax" else {}
    if lowering.opset < 13 and axis != rank - 1:
        _flattened_softmax(lowering, node, axis, code, options, fields)
        return
    value = lowering.value(node.inputs[0])
    where = layout.tflite_axis(axis, rank, value.nhwc)
    if where == rank - 1:
        result = lowering.define(node.outputs[0], value.nhwc)
        lowering.emit(code, [value.tensor], [result], options, **fields)
        return
    # Move the axis last, take the softmax, move it back.
    perm = tuple([a for a in range(rank) if a != where] + [where])
    moved = lowering.transpose(value.tensor, perm, node.name)
    done = lowering.scratch(node.name + "_softmax", lowering.builder.tensors[moved].shape)
    lowering.emit(code, [moved], [done], options, **fields)
    back = layout.inverse(perm)
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit("TRANSPOSE", [done, lowering.int32(back, "perm")], [result])


def _flattened_softmax(
    lowering: Lowering, node: Node, axis: int, code: str, options: str, fields: dict
) -> None:
    """Opset < 13: softmax over all axes from ``axis`` on, as one flattened row."""
    shape = lowering.shape(node.inputs[0])
    rows = int(np.prod(shape[:axis]))
    flat_shape = (rows, int(np.prod(shape)) // max(rows, 1))
    flat = lowering.scratch(node.name + "_flat", flat_shape)
    lowering.reshape_into(lowering.onnx_order(node.inputs[0]), flat, flat_shape)
    done = lowering.scratch(node.name + "_softmax", flat_shape)
    lowering.emit(code, [flat], [done], options, **fields)
    lowering.reshape_into(done, lowering.define(node.outputs[0]), shape)


@translates("BatchNormalization")
def batch_norm(lowering: Lowering, node: Node) -> None:
    gamma, beta, mean, var = (
        lowering.require_const(node, i, "the statistics").astype(np.float64) for i in range(1, 5)
    )
    epsilon = float(node.attrs.get("epsilon", 1e-5))
    scale = gamma / np.sqrt(var + epsilon)
    shift = beta - mean * scale
    value = lowering.value(node.inputs[0])
    rank = lowering.rank(node.inputs[0])
    channel_shape = (-1,) + (1,) * (rank - 2)
    scale_c = layout.broadcast_constant(scale.reshape(channel_shape), rank, value.nhwc)
    shift_c = layout.broadcast_constant(shift.reshape(channel_shape), rank, value.nhwc)
    scaled = lowering.scratch(node.name + "_scaled", lowering.builder.tensors[value.tensor].shape)
    lowering.emit(
        "MUL",
        [value.tensor, lowering.weight(scale_c, node.name + "_scale")],
        [scaled],
        "MulOptions",
    )
    result = lowering.define(node.outputs[0], value.nhwc)
    lowering.emit(
        "ADD", [scaled, lowering.weight(shift_c, node.name + "_shift")], [result], "AddOptions"
    )


@translates("LayerNormalization")
def layer_norm(lowering: Lowering, node: Node) -> None:
    """(x - mean) * rsqrt(var + eps) * scale + bias over the axes from ``axis`` on."""
    shape = lowering.shape(node.inputs[0])
    rank = len(shape)
    axis = layout.normalize_axis(int(node.attrs.get("axis", -1)), rank)
    if len([o for o in node.outputs if o]) > 1:
        raise lowering.unsupported(node, "the Mean/InvStdDev outputs")
    axes = lowering.int32(list(range(axis, rank)), "axes")
    reduced = tuple(1 if a >= axis else d for a, d in enumerate(shape))
    x = lowering.onnx_order(node.inputs[0])
    mean = lowering.scratch(node.name + "_mean", reduced)
    lowering.emit("MEAN", [x, axes], [mean], "ReducerOptions", keepDims=True)
    centred = lowering.scratch(node.name + "_centred", shape)
    lowering.emit("SUB", [x, mean], [centred], "SubOptions")
    squared = lowering.scratch(node.name + "_squared", shape)
    lowering.emit("MUL", [centred, centred], [squared], "MulOptions")
    var = lowering.scratch(node.name + "_var", reduced)
    lowering.emit("MEAN", [squared, axes], [var], "ReducerOptions", keepDims=True)
    eps = lowering.constant(np.float32(node.attrs.get("epsilon", 1e-5)), "epsilon")
    var_eps = lowering.scratch(node.name + "_var_eps", reduced)
    lowering.emit("ADD", [var, eps], [var_eps], "AddOptions")
    inv = lowering.scratch(node.name + "_rstd", reduced)
    lowering.emit("RSQRT", [var_eps], [inv])
    normed = lowering.scratch(node.name + "_normed", shape)
    lowering.emit("MUL", [centred, inv], [normed], "MulOptions")
    scale = lowering.require_const(node, 1, "the scale").astype(np.float32)
    bias = lowering.input_const(node, 2)
    last = (
        lowering.define(node.outputs[0])
        if bias is None
        else lowering.scratch(node.name + "_scaled", shape)
    )
    lowering.emit(
        "MUL", [normed, lowering.weight(scale, node.name + "_gamma")], [last], "MulOptions"
    )
    if bias is not None:
        lowering.emit(
            "ADD",
            [last, lowering.weight(bias.astype(np.float32), node.name + "_beta")],
            [lowering.define(node.outputs[0])],
            "AddOptions",
        )


@translates("Gemm")
def gemm(lowering: Lowering, node: Node) -> None:
    attrs = node.attrs
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    weight = lowering.input_const(node, 1)
    if weight is None or attrs.get("transA", 0):
        raise lowering.unsupported(node, "only A @ constant B")
    weight = weight if attrs.get("transB", 0) else weight.T  # [N, K]
    bias = lowering.input_const(node, 2)
    if lowering.has_input(node, 2) and bias is None:
        raise lowering.unsupported(node, "C must be a constant")
    n = weight.shape[0]
    if bias is not None and bias.size not in (1, n):
        raise lowering.unsupported(node, "C must be a vector")
    bias = None if bias is None else np.broadcast_to(bias.reshape(-1), (n,)) * beta
    fully_connected(lowering, node, weight * alpha, bias)


def fully_connected(
    lowering: Lowering, node: Node, weight: np.ndarray, bias: np.ndarray | None
) -> None:
    """FULLY_CONNECTED: x [..., K] @ weight[N, K].T + bias, keeping x's leading axes."""
    x = lowering.onnx_order(node.inputs[0])
    n = weight.shape[0]
    bias = np.zeros(n, np.float32) if bias is None else bias
    result = lowering.define(node.outputs[0])
    keep = lowering.rank(node.inputs[0]) > 2
    lowering.builder.op(
        "FULLY_CONNECTED",
        [
            x,
            lowering.weight(weight.astype(np.float32), node.name + "_w"),
            lowering.weight(bias.astype(np.float32), node.name + "_b"),
        ],
        [result],
        "FullyConnectedOptions",
        version=5 if keep else 1,
        keepNumDims=keep,
    )


@translates("MatMul")
def matmul(lowering: Lowering, node: Node) -> None:
    weight = lowering.input_const(node, 1)
    bias = lowering.input_const(node, 2) if len(node.inputs) > 2 else None
    if weight is not None and weight.ndim == 2 and lowering.const(node.inputs[0]) is None:
        fully_connected(lowering, node, weight.T, bias)
        return
    if lowering.rank(node.inputs[0]) < 2 or lowering.rank(node.inputs[1]) < 2:
        raise lowering.unsupported(node, "1-D operands")
    a, b = (lowering.onnx_order(name) for name in node.inputs[:2])
    result = lowering.define(node.outputs[0])
    lowering.emit("BATCH_MATMUL", [a, b], [result], "BatchMatMulOptions", adjX=False, adjY=False)
