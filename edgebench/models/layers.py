"""Reusable layer blocks (conv/BN/activation, linear, layer norm, GELU, classifier head) for
GraphBuilder."""

from __future__ import annotations

import math

import numpy as np

from edgebench.models.graph import GraphBuilder

# Variance gains for Kaiming-style init, 1 / E[act(z)^2 / s^2] for z ~ N(0, s^2), so the second
# moment of activations is preserved layer to layer. For ReLU the ratio is 1/2 at every scale.
# SiLU is not homogeneous (the ratio rises from 1/4 near 0 to 1/2 for large s), so any fixed gain
# drifts slowly; 2.4 matches s ~ 1.4 and keeps the detector neck's activations at RMS ~1-1.7
# (measured), whereas 2.0 fades them 10x and the s = 1 value 2.81 grows them 6x over its depth.
RELU_GAIN = 2.0
SILU_GAIN = 2.4
LINEAR_GAIN = 1.0
_ACTIVATION_GAINS: dict[str | None, float] = {
    None: LINEAR_GAIN,
    "relu": RELU_GAIN,
    "relu6": RELU_GAIN,
    "silu": SILU_GAIN,
}
# gamma of the last BN in a residual branch: keeps the running sum's variance from doubling.
RESIDUAL_GAMMA = 0.2


def conv(
    b: GraphBuilder,
    x: str,
    name: str,
    cin: int,
    cout: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    *,
    gain: float = RELU_GAIN,
    bias: bool = False,
    pad: int | None = None,
) -> str:
    """Conv2d with Kaiming-normal weights; fan-in counts only the channels of one group."""
    fan_in = (cin // groups) * kernel * kernel
    weight = b.normal((cout, cin // groups, kernel, kernel), math.sqrt(gain / fan_in))
    inputs = [x, b.initializer(f"{name}.weight", weight)]
    if bias:
        inputs.append(b.initializer(f"{name}.bias", np.zeros(cout, dtype=np.float32)))
    p = kernel // 2 if pad is None else pad
    return b.op(
        "Conv",
        inputs,
        name,
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[p, p, p, p],
        dilations=[1, 1],
        group=groups,
    )


def batch_norm(b: GraphBuilder, x: str, name: str, channels: int, gamma: float = 1.0) -> str:
    """Inference-mode BatchNormalization with near-identity, lightly jittered statistics."""
    scale = b.normal((channels,), 0.05 * gamma, mean=gamma)
    shift = b.normal((channels,), 0.01)
    mean = b.normal((channels,), 0.01)
    var = b.uniform((channels,), 0.9, 1.1)
    inputs = [x]
    for suffix, array in (("scale", scale), ("bias", shift), ("mean", mean), ("var", var)):
        inputs.append(b.initializer(f"{name}.{suffix}", array))
    return b.op("BatchNormalization", inputs, name, epsilon=1e-5)


def activation(b: GraphBuilder, x: str, name: str, kind: str | None) -> str:
    """Apply ``relu``, ``relu6`` (Clip 0..6), ``silu`` (x * Sigmoid(x)) or nothing."""
    if kind is None:
        return x
    if kind == "relu":
        return b.op("Relu", [x], name)
    if kind == "relu6":
        return b.op("Clip", [x, b.const_f32(0.0), b.const_f32(6.0)], name)
    if kind == "silu":
        gate = b.op("Sigmoid", [x], f"{name}.sigmoid")
        return b.op("Mul", [x, gate], name)
    raise ValueError(f"unknown activation {kind!r}")


def conv_bn_act(
    b: GraphBuilder,
    x: str,
    name: str,
    *geometry: int,
    act: str | None = "relu",
    gamma: float = 1.0,
    gain: float | None = None,
) -> str:
    """Conv (no bias) + BatchNormalization + optional activation, as an unfused export.

    ``geometry`` is ``cin, cout, kernel[, stride[, groups]]`` as for ``conv``; ``gain``
    defaults to the init gain matching ``act``.
    """
    if gain is None:
        gain = _ACTIVATION_GAINS[act]
    y = conv(b, x, f"{name}.conv", *geometry, gain=gain)
    y = batch_norm(b, y, f"{name}.bn", geometry[1], gamma)
    return activation(b, y, f"{name}.act", act)


def linear(b: GraphBuilder, x: str, name: str, fan_in: int, fan_out: int, std: float) -> str:
    """MatMul by a [fan_in, fan_out] weight plus a zero bias (torch Linear as exported)."""
    weight = b.initializer(f"{name}.weight", b.normal((fan_in, fan_out), std))
    bias = b.initializer(f"{name}.bias", np.zeros(fan_out, dtype=np.float32))
    y = b.op("MatMul", [x, weight], f"{name}.matmul")
    return b.op("Add", [y, bias], name)


def gemm(b: GraphBuilder, x: str, name: str, fan_in: int, fan_out: int, std: float) -> str:
    """Gemm classifier head with a [fan_out, fan_in] weight (transB=1) and zero bias."""
    weight = b.initializer(f"{name}.weight", b.normal((fan_out, fan_in), std))
    bias = b.initializer(f"{name}.bias", np.zeros(fan_out, dtype=np.float32))
    return b.op("Gemm", [x, weight, bias], name, alpha=1.0, beta=1.0, transB=1)


def layer_norm(b: GraphBuilder, x: str, name: str, dim: int, eps: float = 1e-6) -> str:
    scale = b.initializer(f"{name}.scale", np.ones(dim, dtype=np.float32))
    shift = b.initializer(f"{name}.bias", np.zeros(dim, dtype=np.float32))
    return b.op("LayerNormalization", [x, scale, shift], name, axis=-1, epsilon=eps)


def gelu(b: GraphBuilder, x: str, name: str) -> str:
    """Exact GELU spelled out as x * 0.5 * (1 + Erf(x / sqrt(2)))."""
    scaled = b.op("Div", [x, b.const_f32(math.sqrt(2.0))], f"{name}.div")
    erf = b.op("Erf", [scaled], f"{name}.erf")
    one_plus = b.op("Add", [erf, b.const_f32(1.0)], f"{name}.add")
    product = b.op("Mul", [x, one_plus], f"{name}.mul")
    return b.op("Mul", [product, b.const_f32(0.5)], name)


def classifier_head(b: GraphBuilder, x: str, name: str, channels: int, classes: int) -> str:
    """Global average pool ("pool"), flatten and a Gemm over ``classes`` with torchvision's
    1/sqrt(fan-in) init: CNN features [1, channels, H, W] to logits [1, classes]."""
    pooled = b.op("GlobalAveragePool", [x], "pool.gap")
    flat = b.op("Flatten", [pooled], "pool.flatten", axis=1)
    return gemm(b, flat, name, channels, classes, 1.0 / math.sqrt(channels))
