"""Translators for activations and broadcasting binary ops (``MultidirBroadcastLayerParam``)."""

from __future__ import annotations

import sys

import numpy as np

from edgebench.converters.tnn.binary import format_float
from edgebench.converters.tnn.context import Context, Layer, as_tnn_tensor
from edgebench.converters.tnn.onnx_graph import Node

# Layers without params: ONNX op (or fused pattern) -> TNN layer type.
_PLAIN = {"Relu": "ReLU", "Sigmoid": "Sigmoid", "Erf": "Erf", "Swish": "Swish"}


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


def binary(node: Node, ctx: Context) -> Layer:
    """Add/Sub/Mul/Div; a constant operand becomes the layer resource (weight_input_index)."""
    found = ctx.constant_operand(node)
    if found is None:
        return Layer(node.op, node.name, list(node.inputs), node.outputs[:1], "-1 ")
    index, value, other = found
    if node.op == "Div" and index == 1 and value.dtype.kind == "f":
        # onnx2tnn turns division by a constant into multiplication by its reciprocal.
        reciprocal = np.float32(1.0) / value.astype(np.float32)
        return Layer("Mul", node.name, [other], node.outputs[:1], "1 ", [ctx.weight(reciprocal)])
    resource = [as_tnn_tensor(value)]
    return Layer(node.op, node.name, [other], node.outputs[:1], f"{index} ", resource)


TRANSLATORS = {
    "Relu": plain,
    "Sigmoid": plain,
    "Erf": plain,
    "Swish": plain,
    "GELU": gelu,
    "Gelu": gelu,
    "HardSwish": hard_swish,
    "HardSigmoid": hard_sigmoid,
    "Clip": clip,
    "Add": binary,
    "Sub": binary,
    "Mul": binary,
    "Div": binary,
}
