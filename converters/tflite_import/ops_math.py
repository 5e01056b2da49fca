"""Elementwise ops, activations, Softmax, reductions and matrix products."""

from __future__ import annotations

import math

import numpy as np

from .emitter import Emitter, held_constant, to_held_axis, translates
from .reader import OpSpec

_BINARY = {
    "ADD": "Add",
    "SUB": "Sub",
    "MUL": "Mul",
    "DIV": "Div",
    "MAXIMUM": "Max",
    "MINIMUM": "Min",
    "POW": "Pow",
    "SQUARED_DIFFERENCE": "Sub",
}
_UNARY = {
    "RELU": "Relu",
    "LOGISTIC": "Sigmoid",
    "TANH": "Tanh",
    "EXP": "Exp",
    "LOG": "Log",
    "SQRT": "Sqrt",
    "ABS": "Abs",
    "NEG": "Neg",
    "ELU": "Elu",
    "HARD_SWISH": "HardSwish",
    "FLOOR": "Floor",
    "CEIL": "Ceil",
}
_CLIPS = {"RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}
_REDUCERS = {
    "MEAN": "ReduceMean",
    "SUM": "ReduceSum",
    "REDUCE_MAX": "ReduceMax",
    "REDUCE_MIN": "ReduceMin",
    "REDUCE_PROD": "ReduceProd",
}


def operands(em: Emitter, op: OpSpec, count: int) -> tuple[list[str], bool]:
    """The first ``count`` inputs of an elementwise op in one layout, and whether it is NCHW:
    NCHW when the output is 4-D, every computed input is 4-D and one is already held NCHW."""
    indices = op.inputs[:count]
    rank = em.rank(op.outputs[0])
    computed = [i for i in indices if em.const(i) is None]
    nchw = (
        rank == 4
        and all(em.rank(i) == 4 for i in computed)
        and any(em.is_nchw(i) for i in computed)
    )
    names = []
    for index in indices:
        array = em.const(index)
        if array is None:
            names.append(em.get(index, nchw))
        else:
            value = held_constant(array, rank, nchw)
            if value.dtype == np.float16:
                value = value.astype(np.float32)
            names.append(em.constant(value, em.spec(index).name))
    return names, nchw


@translates(*_BINARY)
def binary(em: Emitter, op: OpSpec) -> None:
    names, nchw = operands(em, op, 2)
    activation = op.option("fusedActivationFunction", 0)
    if op.code == "SQUARED_DIFFERENCE":
        difference = em.node("Sub", names, "difference")
        em.output(op, "Mul", [difference, difference], nchw)
        return
    em.output(op, _BINARY[op.code], names, nchw, activation)


@translates(*_UNARY)
def unary(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    em.output(op, _UNARY[op.code], [held.name], held.nchw)


@translates(*_CLIPS)
def clip(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    bounds = [em.constant(np.float32(b), "bound") for b in _CLIPS[op.code]]
    em.output(op, "Clip", [held.name, *bounds], held.nchw)


@translates("RSQRT")
def rsqrt(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    root = em.node("Sqrt", [held.name], "sqrt")
    em.output(op, "Reciprocal", [root], held.nchw)


@translates("LEAKY_RELU")
def leaky_relu(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    em.output(op, "LeakyRelu", [held.name], held.nchw, alpha=float(op.option("alpha", 0.2)))


@translates("PRELU")
def prelu(em: Emitter, op: OpSpec) -> None:
    names, nchw = operands(em, op, 2)
    em.output(op, "PRelu", names, nchw)


@translates("GELU")
def gelu(em: Emitter, op: OpSpec) -> None:
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation (opset 17 has no Gelu)."""
    held = em.value(op.inputs[0])
    x = held.name

    def scalar(value: float) -> str:
        return em.constant(np.float32(value), "c")

    if op.option("approximate", False):
        cube = em.node("Mul", [em.node("Mul", [x, x], "sq"), x], "cube")
        inner = em.node("Add", [x, em.node("Mul", [cube, scalar(0.044715)], "c3")], "inner")
        scaled = em.node("Mul", [inner, scalar(math.sqrt(2 / math.pi))], "scaled")
        gate = em.node("Tanh", [scaled], "tanh")
    else:
        gate = em.node("Erf", [em.node("Mul", [x, scalar(1 / math.sqrt(2))], "scaled")], "erf")
    half = em.node("Mul", [x, scalar(0.5)], "half")
    one_plus = em.node("Add", [gate, scalar(1.0)], "one_plus")
    em.output(op, "Mul", [half, one_plus], held.nchw)


@translates("SQUARE")
def square(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    em.output(op, "Mul", [held.name, held.name], held.nchw)


@translates("L2_NORMALIZATION")
def l2_normalization(em: Emitter, op: OpSpec) -> None:
    """x / max(||x||, 1e-6) over TFLite's last axis (LiteRT's epsilon; ONNX's LpNormalization
    has none and divides by zero)."""
    held = em.value(op.inputs[0])
    rank = em.rank(op.inputs[0])
    axes = em.int64([to_held_axis(rank - 1, rank, held.nchw)], "axes")
    squares = em.node("Mul", [held.name, held.name], "squares")
    total = em.node("ReduceSum", [squares, axes], "sum", keepdims=1)
    norm = em.node("Sqrt", [total], "norm")
    floor = em.node("Max", [norm, em.constant(np.float32(1e-6), "epsilon")], "floored")
    em.output(op, "Div", [held.name, floor], held.nchw, op.option("fusedActivationFunction", 0))


@translates("SOFTMAX", "LOG_SOFTMAX")
def softmax(em: Emitter, op: OpSpec) -> None:
    """Over TFLite's last axis: the channel axis of an NCHW-held tensor."""
    held = em.value(op.inputs[0])
    rank = em.rank(op.inputs[0])
    source = held.name
    beta = float(op.option("beta", 1.0))
    if op.code == "SOFTMAX" and beta != 1.0:
        source = em.node("Mul", [source, em.constant(np.float32(beta), "beta")], "scaled")
    axis = to_held_axis(rank - 1, rank, held.nchw)
    onnx_op = "Softmax" if op.code == "SOFTMAX" else "LogSoftmax"
    em.output(op, onnx_op, [source], held.nchw, axis=axis)


@translates(*_REDUCERS)
def reduce(em: Emitter, op: OpSpec) -> None:
    """Reductions keep an NCHW-held input NCHW when the reduced axes stay (keep_dims) or when
    the axes left over come out in TFLite's order."""
    rank = em.rank(op.inputs[0])
    axes = sorted({int(a) % rank for a in np.atleast_1d(em.require_const(op, 1, "the axes"))})
    keep = bool(op.option("keepDims", False))
    held = em.value(op.inputs[0])
    nchw = held.nchw
    if nchw and not keep:
        held_axes = {to_held_axis(a, rank, True) for a in axes}
        left = [(0, 3, 1, 2)[j] for j in range(rank) if j not in held_axes]
        nchw = left == sorted(left)
    where = sorted(to_held_axis(a, rank, nchw) for a in axes)
    source = em.get(op.inputs[0], nchw)
    onnx_op = _REDUCERS[op.code]
    if onnx_op == "ReduceSum":  # axes is an input from opset 13, an attribute for the rest
        em.output(op, onnx_op, [source, em.int64(where, "axes")], nchw and keep, keepdims=keep)
    else:
        em.output(op, onnx_op, [source], nchw and keep, axes=where, keepdims=int(keep))


@translates("FULLY_CONNECTED")
def fully_connected(em: Emitter, op: OpSpec) -> None:
    """x [..., K] @ W[N, K].T + b as Gemm on x flattened to [-1, K], reshaped to the output."""
    x, weight = op.inputs[0], op.inputs[1]
    k = em.shape(weight)[1]
    source = em.as_is(x)
    if em.rank(x) != 2 or em.shape(x)[1] != k:
        source = em.node("Reshape", [source, em.int64([-1, k], "shape")], "flat")
    inputs = [source, em.as_is(weight)]
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        inputs.append(em.as_is(op.inputs[2]))
    out_shape = list(em.shape(op.outputs[0]))
    activation = op.option("fusedActivationFunction", 0)
    if len(out_shape) == 2:
        em.output(op, "Gemm", inputs, False, activation, transB=1)
        return
    product = em.activate(op, em.node("Gemm", inputs, "gemm", transB=1), activation)
    em.output(op, "Reshape", [product, em.int64(out_shape, "shape")], False)


@translates("BATCH_MATMUL")
def batch_matmul(em: Emitter, op: OpSpec) -> None:
    names = []
    for position, flag in ((0, "adjX"), (1, "adjY")):
        name = em.as_is(op.inputs[position])
        rank = em.rank(op.inputs[position])
        if op.option(flag, False):
            perm = [*range(rank - 2), rank - 1, rank - 2]
            name = em.node("Transpose", [name], "adjoint", perm=perm)
        names.append(name)
    em.output(op, "MatMul", names, False)
