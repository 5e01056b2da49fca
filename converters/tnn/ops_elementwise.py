"""Translators for activations, unary math and broadcasting binary ops
(``MultidirBroadcastLayerParam``)."""

from __future__ import annotations

import sys

import numpy as np

from edgebench.converters.tnn.binary import format_float
from edgebench.converters.tnn.context import Context, Layer, as_tnn_tensor
from edgebench.converters.tnn.onnx_graph import Node

# Layers without params: ONNX op (or fused pattern) -> TNN layer type. onnx2tnn registers the
# unary math ops with REGISTER_OP_CONVERTER_NoParamNoWeight under their ONNX names.
_PLAIN = {
    "Relu": "ReLU",
    "Sigmoid": "Sigmoid",
    "Erf": "Erf",
    "Swish": "Swish",
    "Tanh": "Tanh",
    "Exp": "Exp",
    "Log": "Log",
    "Sqrt": "Sqrt",
    "Abs": "Abs",
    "Neg": "Neg",
    "Reciprocal": "Reciprocal",
}


def plain(node: Node, ctx: Context) -> Layer:
    return Layer(_PLAIN[node.op], node.name, node.inputs[:1], node.outputs[:1])


def gelu(node: Node, ctx: Context) -> Layer:
    """The fused erf pattern, or ONNX Gelu-20 without approximation (TNN computes erf-GELU)."""
    if node.attrs.get("approximate", "none") != "none":
        raise ctx.unsupported(node, "approximate=tanh")
    # onnx2tnn prints the approximation flag without a trailing space.
    return Layer("GELU", node.name, node.inputs[:1], node.outputs[:1], "0")


def hard_swish(node: Node, ctx: Context) -> Layer:
    alpha = node.attrs.get("alpha", float(np.float32(1.0 / 6.0)))
    beta = node.attrs.get("beta", 0.5)
    params = f"{format_float(alpha)} {format_float(beta)} "
    return Layer("HardSwish", node.name, node.inputs[:1], node.outputs[:1], params)


def hard_sigmoid(node: Node, ctx: Context) -> Layer:
    alpha = node.attrs.get("alpha", float(np.float32(0.2)))
    beta = node.attrs.get("beta", 0.5)
    params = f"{format_float(alpha)} {format_float(beta)} "
    return Layer("HardSigmoid", node.name, node.inputs[:1], node.outputs[:1], params)


def clip(node: Node, ctx: Context) -> Layer:
    bounds = [-sys.float_info.max, sys.float_info.max]
    for index, key in ((1, "min"), (2, "max")):
        if ctx.opset < 11:
            bounds[index - 1] = node.attrs.get(key, bounds[index - 1])
        elif index < len(node.inputs) and node.inputs[index]:
            bounds[index - 1] = float(ctx.require_const(node, index, key).reshape(-1)[0])
    low, high = bounds
    if low == 0.0 and high == 6.0:
        return Layer("ReLU6", node.name, node.inputs[:1], node.outputs[:1])
    params = f"{format_float(low)} {format_float(high)} "
    return Layer("Clip", node.name, node.inputs[:1], node.outputs[:1], params)


def elu(node: Node, ctx: Context) -> Layer:
    alpha = node.attrs.get("alpha", 1.0)
    return Layer("Elu", node.name, node.inputs[:1], node.outputs[:1], f"{format_float(alpha)} ")


def _prelu_input_shape(node: Node, ctx: Context) -> tuple[int, ...]:
    shape = ctx.shape(node.inputs[0])
    if len(shape) < 2:
        # TNN's PReLU reads the channel count from dims[1].
        raise ctx.unsupported(node, f"a {len(shape)}-D input")
    return shape


def leaky_relu(node: Node, ctx: Context) -> Layer:
    """onnx2tnn writes LeakyRelu as a PReLU with one shared slope (channel_shared=1)."""
    _prelu_input_shape(node, ctx)
    slope = np.array([node.attrs.get("alpha", 0.01)], np.float32)
    resource: list = [node.name, slope]
    return Layer("PReLU", node.name, node.inputs[:1], node.outputs[:1], "1 0 ", resource)


def prelu(node: Node, ctx: Context) -> Layer:
    """PReLU ``channel_shared has_filler``; resource: name, the slope (float32 even for fp16,
    as onnx2tnn writes it with DATA_TYPE_FLOAT) in its ONNX dims."""
    shape = _prelu_input_shape(node, ctx)
    slope = ctx.require_const(node, 1, "the slope").astype(np.float32)
    if slope.ndim > len(shape):
        raise ctx.unsupported(node, f"slope of shape {list(slope.shape)}")
    aligned = (1,) * (len(shape) - slope.ndim) + slope.shape
    per_channel = (1, shape[1]) + (1,) * (len(shape) - 2)
    if slope.size == 1:
        params = "1 0 "
    elif aligned == per_channel:
        params = "0 0 "
    else:
        # TNN applies a slope per element of dims[1] or one for all, nothing else.
        raise ctx.unsupported(node, f"slope of shape {list(slope.shape)} for input {list(shape)}")
    resource: list = [node.name, slope]
    return Layer("PReLU", node.name, node.inputs[:1], node.outputs[:1], params, resource)


# ONNX op -> TNN layer type of the MultidirBroadcast layers.
_BROADCAST = {
    "Add": "Add",
    "Sub": "Sub",
    "Mul": "Mul",
    "Div": "Div",
    "Max": "Maximum",
    "Min": "Minimum",
}


def binary(node: Node, ctx: Context) -> Layer:
    """Add/Sub/Mul/Div/Max/Min; a constant operand becomes the layer resource
    (weight_input_index)."""
    if len(node.inputs) != 2:
        # ONNX Max/Min are variadic; onnx2tnn's weight-input lookup handles two operands.
        raise ctx.unsupported(node, f"{len(node.inputs)} inputs (converted with exactly two)")
    layer_type = _BROADCAST[node.op]
    found = ctx.constant_operand(node)
    if found is None:
        return Layer(layer_type, node.name, list(node.inputs), node.outputs[:1], "-1 ")
    index, value, other = found
    if node.op == "Div" and index == 1 and value.dtype.kind == "f":
        # onnx2tnn turns division by a constant into multiplication by its reciprocal.
        reciprocal = np.float32(1.0) / value.astype(np.float32)
        return Layer("Mul", node.name, [other], node.outputs[:1], "1 ", [ctx.weight(reciprocal)])
    resource = [as_tnn_tensor(value)]
    return Layer(layer_type, node.name, [other], node.outputs[:1], f"{index} ", resource)


TRANSLATORS = {
    **{op: plain for op in _PLAIN},
    "Elu": elu,
    "LeakyRelu": leaky_relu,
    "PRelu": prelu,
    "GELU": gelu,
    "Gelu": gelu,
    "HardSwish": hard_swish,
    "HardSigmoid": hard_sigmoid,
    "Clip": clip,
    "Add": binary,
    "Sub": binary,
    "Mul": binary,
    "Div": binary,
    "Max": binary,
    "Min": binary,
}
