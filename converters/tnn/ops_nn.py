"""Translators for convolution, normalization, pooling and matrix products.

Param text and resource layouts follow TNN's layer interpreters
(``source/tnn/interpreter/tnn/layer_interpreter/``) and what onnx2tnn prints for each op
(``tools/onnx2tnn/src/core/layer/onnx_converter_*.cc``).
"""

from __future__ import annotations

import math

import numpy as np

from edgebench.converters.tnn.binary import format_float
from edgebench.converters.tnn.context import (
    Context,
    Layer,
    ResourceItem,
    as_tnn_tensor,
    axis_index,
)
from edgebench.converters.tnn.onnx_graph import Node

# TNN pad_type values (ConvLayerParam / PoolingLayerParam).
PAD_EXPLICIT = -1
PAD_SAME_UPPER = 0
PAD_VALID = 1
# Deconvolution only: output = input * stride, the odd padding leads (onnx2tnn's output_padding).
PAD_DECONV_OUTPUT_PADDING = 3


def _spatial_pads(
    node: Node, ctx: Context, kernel: list[int], strides: list[int], dilations: list[int]
) -> tuple[int, int, int]:
    """(pad_type, pad_h, pad_w) for a 2-D window op, or raise if TNN cannot express it."""
    in_h, in_w = ctx.shape(node.inputs[0])[2:4]
    same = []
    for size, k, s, d in zip((in_h, in_w), kernel, strides, dilations, strict=True):
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        same.append((total // 2, total - total // 2))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return PAD_VALID, 0, 0
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if auto_pad == "SAME_LOWER" and any(b != e for b, e in same):
            raise ctx.unsupported(node, "auto_pad SAME_LOWER with odd total padding")
        return PAD_SAME_UPPER, 0, 0
    top, left, bottom, right = node.attrs.get("pads", [0, 0, 0, 0])
    if top == bottom and left == right:
        return PAD_EXPLICIT, top, left
    if [(top, bottom), (left, right)] == same:
        return PAD_SAME_UPPER, top, left
    raise ctx.unsupported(node, f"asymmetric pads {[top, left, bottom, right]}")


def conv(node: Node, ctx: Context) -> Layer:
    weight = ctx.require_const(node, 1, "the weight")
    if weight.ndim != 4:
        raise ctx.unsupported(node, "only 2-D convolution is converted")
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    bias = ctx.require_const(node, 2, "the bias") if has_bias else None
    out_c, in_c_per_group, kh, kw = weight.shape
    group = node.attrs.get("group", 1)
    strides = node.attrs.get("strides", [1, 1])
    dilations = node.attrs.get("dilations", [1, 1])
    pad_type, pad_h, pad_w = _spatial_pads(node, ctx, [kh, kw], strides, dilations)
    fields = [group, in_c_per_group, out_c, kh, kw, *strides[:2], pad_h, pad_w]
    return conv_layer("Convolution", node, ctx, fields, pad_type, dilations, weight, bias)


def conv_layer(
    kind: str,
    node: Node,
    ctx: Context,
    fields: list[int],
    pad_type: int,
    dilations: list[int],
    weight: np.ndarray,
    bias: np.ndarray | None,
) -> Layer:
    """A Convolution or Deconvolution line (both share TNN's ConvLayerParam layout) and its
    resource: the bias flag, the weight and, with a bias, the bias."""
    has_bias = bias is not None
    numbers = [*fields, int(has_bias), pad_type, dilations[0], dilations[1]]
    params = " ".join(str(n) for n in numbers) + " "
    resource: list = [node.name, int(has_bias), ctx.weight(weight)]
    if bias is not None:
        resource.append(ctx.weight(bias))
    return Layer(kind, node.name, node.inputs[:1], node.outputs[:1], params, resource)


def _deconv_window(pad_type: int, size: int, extent: int, stride: int, pad: int) -> tuple[int, int]:
    """(output size, leading crop) of TNN's Deconvolution, as DeconvLayer::InferOutputShape
    derives them from the pad type."""
    if pad_type == PAD_EXPLICIT:
        return stride * (size - 1) + extent - 2 * pad, pad
    out = size * stride
    if pad_type == PAD_VALID:
        out += max(extent - stride, 0)
    along = (size - 1) * stride + extent - out
    if pad_type == PAD_DECONV_OUTPUT_PADDING:
        along = max(along, 0)
        return out, along - int(along / 2)  # TNN swaps the halves: the larger one leads
    return out, int(along / 2)  # C division truncates toward zero


def conv_transpose(node: Node, ctx: Context) -> Layer:
    """ConvTranspose -> Deconvolution: Convolution's params and resource, with the ONNX weight
    [C_in, C_out/group, kh, kw] stored as is (TNN's deconv kernels read that layout)."""
    weight = ctx.require_const(node, 1, "the weight")
    if weight.ndim != 4:
        raise ctx.unsupported(node, "only 2-D ConvTranspose is converted")
    if "output_shape" in node.attrs:
        raise ctx.unsupported(node, "the output_shape attribute")
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    bias = ctx.require_const(node, 2, "the bias") if has_bias else None
    in_c, out_c_per_group, kh, kw = weight.shape
    group = node.attrs.get("group", 1)
    strides = node.attrs.get("strides", [1, 1])
    dilations = node.attrs.get("dilations", [1, 1])
    output_padding = node.attrs.get("output_padding", [0, 0])
    extents = [d * (k - 1) + 1 for k, d in zip((kh, kw), dilations, strict=True)]
    sizes = ctx.shape(node.inputs[0])[2:4]
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # The output is input * stride; SAME_UPPER puts an odd pixel of padding at the end.
        totals = [
            max(e - s + p, 0) for e, s, p in zip(extents, strides, output_padding, strict=True)
        ]
        small, large = [t // 2 for t in totals], [t - t // 2 for t in totals]
        begins, ends = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad == "VALID":
        begins = ends = [0, 0]
    else:
        top, left, bottom, right = node.attrs.get("pads", [0, 0, 0, 0])
        begins, ends = [top, left], [bottom, right]
    wanted = [
        (s * (size - 1) + p + e - b - end, b)
        for size, s, p, e, b, end in zip(
            sizes, strides, output_padding, extents, begins, ends, strict=True
        )
    ]
    # onnx2tnn's choice first: output_padding -> 3, auto_pad -> SAME/VALID, pads -> explicit.
    if any(output_padding):
        first = PAD_DECONV_OUTPUT_PADDING
    elif auto_pad == "VALID":
        first = PAD_VALID
    elif auto_pad != "NOTSET" or begins != ends:
        first = PAD_SAME_UPPER
    else:
        first = PAD_EXPLICIT
    for pad_type in (first, PAD_EXPLICIT, PAD_DECONV_OUTPUT_PADDING, PAD_SAME_UPPER, PAD_VALID):
        windows = [
            _deconv_window(pad_type, size, e, s, b)
            for size, e, s, b in zip(sizes, extents, strides, begins, strict=True)
        ]
        if windows == wanted:
            break
    else:
        raise ctx.unsupported(
            node,
            f"pads {begins + ends} with output_padding {list(output_padding)}: "
            "no TNN pad type gives the same output window",
        )
    fields = [group, in_c // group, out_c_per_group * group, kh, kw, *strides[:2], *begins[:2]]
    return conv_layer("Deconvolution", node, ctx, fields, pad_type, dilations, weight, bias)


def batch_norm(node: Node, ctx: Context) -> Layer:
    if node.attrs.get("training_mode", 0):
        raise ctx.unsupported(node, "training_mode=1")
    gamma, beta, mean, var = (
        np.asarray(ctx.require_const(node, i, "scale, bias, mean and var"), np.float64)
        for i in range(1, 5)
    )
    epsilon = float(np.float32(node.attrs.get("epsilon", 1e-5)))
    sqrt_var = np.sqrt(var + epsilon)
    slope = gamma / sqrt_var
    shift = beta - gamma * mean / sqrt_var
    resource = [ctx.weight(slope), ctx.weight(shift)]
    return Layer("BatchNormCxx", node.name, node.inputs[:1], node.outputs[:1], "", resource)


def pool(node: Node, ctx: Context) -> Layer:
    if len([o for o in node.outputs if o]) > 1:
        raise ctx.unsupported(node, "the indices output")
    pool_type = 1 if node.op == "AveragePool" else 0
    kernel = node.attrs.get("kernel_shape", [])
    if len(kernel) != 2:
        raise ctx.unsupported(node, "only 2-D pooling is converted")
    if any(d != 1 for d in node.attrs.get("dilations", [1, 1])):
        raise ctx.unsupported(node, "dilated pooling")
    strides = node.attrs.get("strides", [1, 1])
    pad_type, pad_h, pad_w = _spatial_pads(node, ctx, kernel, strides, [1, 1])
    padded = pad_type == PAD_SAME_UPPER or pad_h or pad_w
    if pool_type == 1 and node.attrs.get("count_include_pad", 0) and padded:
        # TNN averages over the valid window only (count_include_pad=0).
        raise ctx.unsupported(node, "count_include_pad=1 with padding")
    ceil_mode = node.attrs.get("ceil_mode", 0)
    params = (
        f"{pool_type} {kernel[0]} {kernel[1]} {strides[0]} {strides[1]} {pad_h} {pad_w} "
        f"-1 -1 {pad_type} {ceil_mode} "
    )
    return Layer("Pooling", node.name, node.inputs[:1], node.outputs[:1], params)


def global_pool(node: Node, ctx: Context) -> Layer:
    if ctx.rank(node.inputs[0]) != 4:
        raise ctx.unsupported(node, "only 4-D input is converted")
    pool_type = 1 if node.op == "GlobalAveragePool" else 0
    # Kernel 0 0 means "the whole plane"; the trailing 0 -1 -1 is is_adaptive_pool and its size.
    params = f"{pool_type} 0 0 1 1 0 0 -1 -1 -1 0 0 -1 -1 "
    return Layer("Pooling", node.name, node.inputs[:1], node.outputs[:1], params)


def gemm(node: Node, ctx: Context) -> Layer:
    if node.attrs.get("transA", 0):
        raise ctx.unsupported(node, "transA=1")
    b = ctx.require_const(node, 1, "B").astype(np.float32)
    weight = b if node.attrs.get("transB", 0) else b.T
    alpha = node.attrs.get("alpha", 1.0)
    beta = node.attrs.get("beta", 1.0)
    if alpha != 1.0:
        weight = weight * np.float32(alpha)
    num_output = weight.shape[0]
    c = ctx.input_const(node, 2)
    if len(node.inputs) > 2 and node.inputs[2] and c is None:
        raise ctx.unsupported(node, "C must be a constant")
    bias = np.zeros(num_output, np.float32)
    if c is not None:
        if c.size not in (1, num_output) or (c.ndim == 2 and c.shape[0] != 1):
            raise ctx.unsupported(node, f"C of shape {list(c.shape)}")
        bias = np.broadcast_to(c.reshape(-1), (num_output,)).astype(np.float32) * np.float32(beta)
    # num_output, has_bias, transpose, axis
    params = f"{num_output} 1 0 1 "
    resource: list[ResourceItem] = [node.name, ctx.weight(weight), ctx.weight(bias)]
    return Layer("InnerProduct", node.name, node.inputs[:1], node.outputs[:1], params, resource)


def matmul(node: Node, ctx: Context) -> Layer:
    found = ctx.constant_operand(node)
    if found is None:
        return Layer("MatMul", node.name, list(node.inputs), node.outputs[:1], "-1 ")
    position, value, other = found
    return Layer(
        "MatMul", node.name, [other], node.outputs[:1], f"{position} ", [as_tnn_tensor(value)]
    )


def layer_norm(node: Node, ctx: Context) -> Layer:
    if len([o for o in node.outputs if o]) > 1:
        raise ctx.unsupported(node, "the Mean and InvStdDev outputs")
    x = node.inputs[0]
    shape = ctx.shape(x)
    axis = axis_index(node.attrs.get("axis", -1), len(shape))
    normalized = shape[axis:]
    names = []
    # TNN takes scale and bias as constant input blobs of exactly the normalized shape.
    for index, role, default in ((1, "scale", 1.0), (2, "bias", 0.0)):
        value = ctx.input_const(node, index)
        if index < len(node.inputs) and node.inputs[index] and value is None:
            raise ctx.unsupported(node, f"{role} must be a constant")
        name = node.inputs[index] if value is not None else f"{node.name}::{role}"
        if value is None:
            value = np.full(normalized, default, np.float32)
        if value.shape != normalized:
            name = f"{node.name}::{role}"
            value = np.broadcast_to(value, normalized).astype(np.float32)
        ctx.graph.constants[name] = value
        names.append(name)
    epsilon = node.attrs.get("epsilon", 1e-5)
    params = f"{len(normalized)} {format_float(epsilon)}"
    return Layer("LayerNorm", node.name, [x, *names], node.outputs[:1], params, None, names)


def softmax(node: Node, ctx: Context) -> Layer:
    shape = ctx.shape(node.inputs[0])
    axis = axis_index(node.attrs.get("axis", 1 if ctx.opset < 13 else -1), len(shape))
    # Before opset 13 Softmax normalizes over all axes from `axis` on (the input flattened to
    # 2-D); TNN normalizes over one axis, the same thing only when the axes after it are all 1.
    if ctx.opset < 13 and math.prod(shape[axis + 1 :]) != 1:
        raise ctx.unsupported(
            node, f"opset<13 Softmax over axes {axis}.. of {list(shape)} (TNN takes one axis)"
        )
    return Layer("SoftmaxCaffe", node.name, node.inputs[:1], node.outputs[:1], f"{axis} ")


TRANSLATORS = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "BatchNormalization": batch_norm,
    "MaxPool": pool,
    "AveragePool": pool,
    "GlobalAveragePool": global_pool,
    "GlobalMaxPool": global_pool,
    "Gemm": gemm,
    "MatMul": matmul,
    "LayerNormalization": layer_norm,
    "Softmax": softmax,
}
