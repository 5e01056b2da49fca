"""Run a model from ``reader.py`` layer by layer with NumPy, as TNN's CPU backend would.

Each handler gets the layer record, its input arrays and its resource fields, and follows
the semantics of the TNN layer (shape rules from ``source/tnn/layer/``, arithmetic from
``source/tnn/device/cpu/acc/``). Half-precision weights are widened to float32 first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fakes.tnn_checking import kernels
from fakes.tnn_checking.reader import TnnLayer, TnnModel

Handler = Callable[[TnnLayer, list[np.ndarray], dict[str, Any]], list[np.ndarray]]
_erf = np.frompyfunc(math.erf, 1, 1)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)


def run_model(model: TnnModel, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    blobs: dict[str, np.ndarray] = {name: _widen(v) for name, v in model.constants.items()}
    for spec in model.inputs:
        if spec.name not in inputs:
            raise KeyError(f"missing input {spec.name!r}")
        value = np.asarray(inputs[spec.name])
        if list(value.shape) != spec.dims:
            raise ValueError(f"input {spec.name!r} is {list(value.shape)}, model says {spec.dims}")
        blobs[spec.name] = value.astype(np.float32 if spec.data_type == 0 else np.int32)
    for layer in model.layers:
        handler = HANDLERS.get(layer.type)
        if handler is None:
            raise NotImplementedError(f"no reference implementation of TNN layer {layer.type}")
        resource = {k: _widen(v) for k, v in model.resources.get(layer.name, {}).items()}
        results = handler(layer, [blobs[name] for name in layer.inputs], resource)
        for name, value in zip(layer.outputs, results, strict=True):
            blobs[name] = value
    return {name: blobs[name] for name in model.outputs}


def _widen(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == np.float16:
        return value.astype(np.float32)
    return value


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Handler:
    return lambda layer, x, res: [fn(x[0]).astype(np.float32, copy=False)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _erf_array(x: np.ndarray) -> np.ndarray:
    return _erf(x).astype(np.float32)


def _clip(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    # TNN stores the bounds as float, so the +-DBL_MAX "no bound" becomes +-inf.
    with np.errstate(over="ignore"):
        low, high = (np.float32(layer.params[key]) for key in ("min", "max"))
    return [np.clip(x[0], low, high)]


def _activate(y: np.ndarray, activation_type: int) -> np.ndarray:
    if activation_type == 0:
        return y
    if activation_type == 1:
        return np.maximum(y, 0)
    if activation_type == 2:
        return np.clip(y, 0, 6)
    if activation_type == 0x100:
        return y * _sigmoid(y)
    raise NotImplementedError(f"conv activation_type {activation_type}")


def _convolution(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    weight = res["filter"].reshape(p["output_channel"], -1, p["kernel_h"], p["kernel_w"])
    y = kernels.conv2d(
        x[0],
        weight,
        res.get("bias") if p["bias"] else None,
        p["group"],
        (p["stride_h"], p["stride_w"]),
        (p["dilation_h"], p["dilation_w"]),
        (p["pad_h"], p["pad_w"]),
        p["pad_type"],
    )
    return [_activate(y, p["activation_type"])]


def _deconvolution(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    group = p["group"]
    weight = res["filter"].reshape(-1, p["output_channel"] // group, p["kernel_h"], p["kernel_w"])
    geometry = [
        kernels.deconv_geometry(
            size,
            p[f"kernel_{a}"],
            p[f"stride_{a}"],
            p[f"dilation_{a}"],
            p[f"pad_{a}"],
            p["pad_type"],
        )
        for size, a in zip(x[0].shape[2:], "hw", strict=True)
    ]
    y = kernels.deconv2d(
        x[0],
        weight,
        res.get("bias") if p["bias"] else None,
        group,
        (p["stride_h"], p["stride_w"]),
        (p["dilation_h"], p["dilation_w"]),
        (geometry[0][0], geometry[1][0]),
        (geometry[0][1], geometry[1][1]),
    )
    return [_activate(y, p["activation_type"])]


def _pooling(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    if p["is_adaptive_pool"]:
        raise NotImplementedError("adaptive pooling")
    h, w = x[0].shape[2:]
    kernel_h = p["kernel_h"] or h
    kernel_w = p["kernel_w"] or w
    if p["kernel_index_h"] != -1:
        kernel_h = x[0].shape[p["kernel_index_h"]]
    if p["kernel_index_w"] != -1:
        kernel_w = x[0].shape[p["kernel_index_w"]]
    y = kernels.pool2d(
        x[0],
        p["pool_type"],
        (kernel_h, kernel_w),
        (p["stride_h"], p["stride_w"]),
        (p["pad_h"], p["pad_w"]),
        p["pad_type"],
        p["ceil_mode"],
    )
    return [y]


def _channel_affine(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    shape = [1] * x[0].ndim
    shape[1] = -1
    scale, bias = res["scale"].reshape(-1), res.get("bias")
    y = x[0] * (scale[0] if scale.size == 1 else scale.reshape(shape))
    if bias is not None and bias.size:
        bias = bias.reshape(-1)
        y = y + (bias[0] if bias.size == 1 else bias.reshape(shape))
    return [y.astype(np.float32)]


def _element_operand(weight: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A dimless (scalar) resource broadcasts like TNN's single-element case."""
    if weight.ndim > 0:
        return weight
    return weight.reshape((1,) * like.ndim)


_BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
}


def _binary(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    op = _BINARY[layer.type]
    if "element" not in res:
        return [op(x[0], x[1])]
    weight = _element_operand(res["element"], x[0])
    if layer.params["weight_input_index"] == 0:
        return [op(weight, x[0])]
    return [op(x[0], weight)]


def _math(fn: Callable[[np.ndarray], np.ndarray]) -> Handler:
    """A unary op that may leave its domain (log of a negative, 1/0): NaN/inf, no warning."""

    def run(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [np.asarray(fn(x[0]), np.float32)]

    return run


def _elu(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    alpha = np.float32(layer.params["alpha"])
    with np.errstate(over="ignore"):
        negative = alpha * (np.exp(np.minimum(x[0], 0)) - np.float32(1))
    return [np.where(x[0] < 0, negative, x[0]).astype(np.float32)]


def _prelu(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    """cpu_prelu_layer_acc: one slope for all, or slope[c] for channel c = dims[1]."""
    slope = np.asarray(res["slope"], np.float32).reshape(-1)
    data = x[0]
    if layer.params["channel_shared"]:
        factor = slope[0]
    else:
        if slope.size < data.shape[1]:
            raise ValueError(f"PReLU {layer.name}: fewer slopes than the {data.shape[1]} channels")
        factor = slope[: data.shape[1]].reshape((1, -1) + (1,) * (data.ndim - 2))
    return [np.where(data < 0, data * factor, data).astype(np.float32)]


def _pad(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    """cpu_pad_layer_acc: 4-D only; const pads C, H and W, reflect mirrors each H x W plane,
    edge (type 2) fails there on every interior element."""
    left, right, top, bottom, c_begin, c_end = layer.params["pads"]
    data = x[0]
    if data.ndim != 4 or INT_MIN in layer.params["pads"]:
        raise ValueError(f"Pad {layer.name}: needs 4-D input and six pads")
    widths = ((0, 0), (c_begin, c_end), (top, bottom), (left, right))
    return [_padded(layer, data, widths, "TNN's CPU Pad fails on type")]


def _pad_v2(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    """cpu_padv2_layer_acc: const or reflect on any axis, pads in ONNX order."""
    data, pads = x[0], layer.params["pads"]
    if len(pads) != 2 * data.ndim:
        raise ValueError(f"PadV2 {layer.name}: {len(pads)} pads for a {data.ndim}-D input")
    widths = tuple(zip(pads[: data.ndim], pads[data.ndim :], strict=True))
    return [_padded(layer, data, widths, "TNN's CPU PadV2 has no type")]


def _padded(
    layer: TnnLayer, data: np.ndarray, widths: tuple[tuple[int, int], ...], refusal: str
) -> np.ndarray:
    """Pad and PadV2 share the kinds: 0 constant (the layer's value), 1 reflect."""
    pad_type = layer.params["type"]
    if pad_type == 0:
        return np.pad(data, widths, constant_values=np.float32(layer.params["value"]))
    if pad_type == 1:
        _check_reflect(layer, data.shape, widths)
        return np.pad(data, widths, mode="reflect")
    raise NotImplementedError(f"{refusal} {pad_type}")


def _check_reflect(
    layer: TnnLayer, shape: tuple[int, ...], widths: tuple[tuple[int, int], ...]
) -> None:
    # TNN's kernels misplace or read past the input for these, so there is nothing to follow.
    if layer.type == "Pad" and any(widths[1]):
        raise ValueError(f"Pad {layer.name}: reflect ignores the channel pads")
    if any(max(w) >= size and any(w) for w, size in zip(widths, shape, strict=True)):
        raise ValueError(f"{layer.type} {layer.name}: a reflect pad as large as its axis")


def _reduce_step(layer_type: str) -> Callable[[np.ndarray, int], np.ndarray]:
    """One axis of a CPU reduce acc, keeping the axis (CalculateReduce)."""
    if layer_type == "ReduceMean":
        return lambda y, axis: (y * (np.float32(1) / np.float32(y.shape[axis]))).sum(
            axis=axis, keepdims=True, dtype=np.float32
        )
    steps: dict[str, Callable[..., np.ndarray]] = {
        "ReduceSum": np.sum,
        "ReduceMax": np.max,
        "ReduceMin": np.min,
        "ReduceProd": np.prod,
    }
    step = steps[layer_type]
    return lambda y, axis: step(y, axis=axis, keepdims=True).astype(np.float32)


def _reduce(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    """ReduceLayer: no axes means all; negative axes count from the end; the CPU acc reduces
    the sorted axes one at a time; keep_dims=0 then drops them."""
    data = x[0]
    axes = layer.params["axis"] or list(range(data.ndim))
    axes = sorted({a + data.ndim if a < 0 else a for a in axes})
    step = _reduce_step(layer.type)
    y = data
    for axis in axes:
        y = step(y, axis)
    if not layer.params["keep_dims"]:
        y = y.reshape([d for i, d in enumerate(data.shape) if i not in axes])
    return [y]


def _matmul(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    position = layer.params["weight_position"]
    if position == 0:
        return [np.matmul(res["weight"], x[0])]
    if position == 1:
        return [np.matmul(x[0], res["weight"])]
    return [np.matmul(x[0], x[1])]


def _inner_product(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    if p["transpose"]:
        raise NotImplementedError("InnerProduct with transpose=1")
    axis = p["axis"]
    flat = x[0].reshape(math.prod(x[0].shape[:axis]), -1)
    y = flat @ res["weight"].reshape(p["num_output"], -1).T
    if p["has_bias"]:
        y = y + res["bias"].reshape(-1)
    return [y.reshape(*x[0].shape[:axis], p["num_output"]).astype(np.float32)]


def _reshape(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    if p["reshape_type"] != 0:
        raise NotImplementedError("Reshape with reshape_type != 0")
    dims, axis = list(x[0].shape), p["axis"]
    shape = p["shape"][: p["num_axes"] if p["num_axes"] != -1 else None]
    out = dims[:axis] + [dims[axis + i] if d == 0 else d for i, d in enumerate(shape)]
    return [x[0].reshape(out)]


def _strided_slice_v2(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    y = x[0]
    steps = zip(p["begins"], p["ends"], p["axes"], p["strides"], strict=True)
    for begin, end, axis, stride in steps:
        axis = axis + y.ndim if axis < 0 else axis
        dim = y.shape[axis]
        begin = begin + dim if begin < 0 else begin
        if end == INT_MAX or end > dim:
            end = dim
        elif end == INT_MIN:
            end = -1
        elif end < 0:
            end += dim
        # Output length as DimsFunctionUtils::StrideSlice computes it (C division).
        span = end - begin - 1 if stride > 0 else end - begin + 1
        count = int(span / stride) + 1
        y = np.take(y, begin + stride * np.arange(count), axis=axis)
    return [y]


def _gather(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    data = res["data"] if p["data_in_resource"] else x[0]
    indices = res["indices"] if p["indices_in_resource"] else x[-1]
    axis = p["axis"] + data.ndim if p["axis"] < 0 else p["axis"]
    return [np.take(data, np.asarray(indices, np.int64), axis=axis)]


def _split_v(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    offsets = np.cumsum(p["slices"])[:-1]
    return np.split(x[0], offsets, axis=p["axis"])


def _layer_norm(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    data, scale, bias = x
    axes = tuple(range(data.ndim - layer.params["reduce_dims_size"], data.ndim))
    wide = data.astype(np.float64)
    mean = wide.mean(axis=axes, keepdims=True)
    var = ((wide - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (wide - mean) / np.sqrt(var + layer.params["eps"]) * scale + bias
    return [y.astype(np.float32)]


def _softmax(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    axis = layer.params["axis"] % x[0].ndim
    shifted = np.exp(x[0] - x[0].max(axis=axis, keepdims=True))
    return [shifted / shifted.sum(axis=axis, keepdims=True)]


def _upsample(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    p = layer.params
    if "height" in p:
        out_hw = (p["height"], p["width"])
    else:
        # DimsFunctionUtils::Upsample: C round() of in * scale, scales parsed as float.
        out_hw = tuple(
            math.floor(size * float(np.float32(scale)) + 0.5)
            for size, scale in zip(x[0].shape[2:], (p["scale_h"], p["scale_w"]), strict=True)
        )
    return [kernels.upsample(x[0], out_hw, p["mode"], p["align_corners"])]


def _unsqueeze(layer: TnnLayer, x: list[np.ndarray], res: dict) -> list[np.ndarray]:
    y = x[0]
    for axis in sorted(layer.params["axes"]):
        y = np.expand_dims(y, axis if axis >= 0 else axis + y.ndim + 1)
    return [y]


HANDLERS: dict[str, Handler] = {
    "Convolution": _convolution,
    "Deconvolution": _deconvolution,
    "Pooling": _pooling,
    "BatchNormCxx": _channel_affine,
    "BatchNormalization": _channel_affine,
    "Scale": _channel_affine,
    "ReLU": _unary(lambda v: np.maximum(v, 0)),
    "Relu": _unary(lambda v: np.maximum(v, 0)),
    "ReLU6": _unary(lambda v: np.clip(v, 0, 6)),
    "Relu6": _unary(lambda v: np.clip(v, 0, 6)),
    "Sigmoid": _unary(_sigmoid),
    "Swish": _unary(lambda v: v * _sigmoid(v)),
    "Erf": _unary(_erf_array),
    "Tanh": _unary(np.tanh),
    "Exp": _math(np.exp),
    "Log": _math(np.log),
    "Sqrt": _math(np.sqrt),
    "Abs": _unary(np.abs),
    "Neg": _unary(np.negative),
    "Reciprocal": _math(lambda v: np.float32(1) / v),
    "Elu": _elu,
    "PReLU": _prelu,
    "GELU": _unary(lambda v: 0.5 * v * (_erf_array(v * np.float32(0.707106793288165)) + 1)),
    "Clip": _clip,
    "HardSwish": lambda layer, x, res: [
        x[0] * np.clip(x[0] * layer.params["alpha"] + layer.params["beta"], 0, 1)
    ],
    "HardSigmoid": lambda layer, x, res: [
        np.clip(x[0] * layer.params["alpha"] + layer.params["beta"], 0, 1)
    ],
    "Add": _binary,
    "Sub": _binary,
    "Mul": _binary,
    "Div": _binary,
    "Maximum": _binary,
    "Minimum": _binary,
    "Pad": _pad,
    "PadV2": _pad_v2,
    **{op: _reduce for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")},
    "MatMul": _matmul,
    "InnerProduct": _inner_product,
    "Reshape": _reshape,
    "Flatten": lambda layer, x, res: [
        x[0].reshape(math.prod(x[0].shape[: layer.params["axis"]]), -1)
    ],
    "Permute": lambda layer, x, res: [np.transpose(x[0], layer.params["orders"])],
    "Concat": lambda layer, x, res: [np.concatenate(x, axis=layer.params["axis"])],
    "SplitV": _split_v,
    "StridedSliceV2": _strided_slice_v2,
    "Gather": _gather,
    "Softmax": _softmax,
    "SoftmaxCaffe": _softmax,
    "LayerNorm": _layer_norm,
    "Upsample": _upsample,
    "Squeeze": lambda layer, x, res: [np.squeeze(x[0], tuple(layer.params["axes"]))],
    "Unsqueeze": _unsqueeze,
    "Const": lambda layer, x, res: [res["weight"]],
}
