"""Resize and Upsample -> TNN Upsample (or, for nearest by whole factors, a depthwise
Deconvolution), accepted only where TNN computes the same pixels.

TNN's Upsample (``cpu_upsample_layer_acc.cc``) picks nearest pixels as
``int(dst * (float)in / (float)out)`` and interpolates linearly either with align_corners or
with clamped half-pixel centres. Every ONNX coordinate mode is checked against that instead
of being mapped by name, so a model converts only when TNN reproduces it.

TNN's X86 device compiles that nearest kernel with -ffast-math: the ratio comes out a hair
small, and wherever ``dst * in / out`` is a whole number the X86 kernel takes the pixel before
it (checked in real TNN: a x2 upsampling repeats the first column three times). Whole upsampling
factors are therefore written as a depthwise Deconvolution with an all-ones kernel as big as
its stride, which copies each pixel into its block exactly on every device; any other nearest
resize converts only where no output pixel lands on such a multiple (in and out coprime).
"""

from __future__ import annotations

import math

import numpy as np

from edgebench.converters.tnn.binary import format_float
from edgebench.converters.tnn.context import Context, Layer
from edgebench.converters.tnn.onnx_graph import Node
from edgebench.converters.tnn.ops_nn import PAD_EXPLICIT, conv_layer

MODE_NEAREST = 1
MODE_LINEAR = 2


def _onnx_source(x: np.ndarray, size_in: int, size_out: int, scale: float, coord: str):
    if coord == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if coord == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if size_out > 1 else np.zeros_like(x)
    if coord == "align_corners":
        return x * (size_in - 1) / (size_out - 1) if size_out > 1 else np.zeros_like(x)
    if coord == "asymmetric":
        return x / scale
    if coord == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    return None


def _nearest_matches(size_in: int, size_out: int, scale: float, coord: str, rounding: str) -> bool:
    x = np.arange(size_out, dtype=np.float64)
    source = _onnx_source(x, size_in, size_out, scale, coord)
    if source is None:
        return False
    floor = np.floor(source)
    tie = source - floor == 0.5
    picked = {
        "round_prefer_floor": np.where(tie, floor, np.round(source)),
        "round_prefer_ceil": np.where(tie, floor + 1, np.round(source)),
        "floor": floor,
        "ceil": np.ceil(source),
    }.get(rounding)
    if picked is None:
        return False
    onnx_index = np.clip(picked, 0, size_in - 1).astype(np.int64)
    ratio = np.float32(size_in) / np.float32(size_out)
    tnn_index = (x.astype(np.float32) * ratio).astype(np.int64)
    return bool((onnx_index == tnn_index).all())


def _linear_align(sizes_in, sizes_out, scales, coord: str) -> int | None:
    """TNN's align_corners flag reproducing ONNX linear resize, or None."""
    if coord == "align_corners":
        return 1
    if coord in ("half_pixel", "pytorch_half_pixel"):
        same_ratio = all(o == i * s for i, o, s in zip(sizes_in, sizes_out, scales, strict=True))
        if same_ratio and (coord == "pytorch_half_pixel" or min(sizes_out) > 1):
            return 0
    return None


def _upsample_layer(
    node: Node,
    ctx: Context,
    scales: list[float],
    sizes_out: list[int] | None,
    mode: str,
    coord: str,
    rounding: str,
) -> Layer:
    shape = ctx.shape(node.inputs[0])
    if len(shape) != 4:
        raise ctx.unsupported(node, "only 4-D input is converted")
    if sizes_out is None:
        sizes_out = [math.floor(d * s) for d, s in zip(shape, scales, strict=True)]
    else:
        scales = [o / i for i, o in zip(shape, sizes_out, strict=True)]
    if sizes_out[:2] != list(shape[:2]):
        raise ctx.unsupported(node, "resizing the batch or channel axis")
    in_hw, out_hw, scale_hw = shape[2:], sizes_out[2:], scales[2:]
    if mode == "nearest":
        tnn_mode, align = MODE_NEAREST, 0
        for i, o, s in zip(in_hw, out_hw, scale_hw, strict=True):
            if not _nearest_matches(i, o, s, coord, rounding):
                raise ctx.unsupported(node, f"nearest with {coord}/{rounding} at {i}->{o}")
        pairs = list(zip(in_hw, out_hw, strict=True))
        if all(o % i == 0 for i, o in pairs):
            return _repeat_layer(node, ctx, shape[1], [o // i for i, o in pairs])
        if any(i != o and math.gcd(i, o) > 1 for i, o in pairs):
            raise ctx.unsupported(
                node,
                f"nearest at {list(in_hw)}->{out_hw}: TNN's X86 kernel picks the wrong pixel "
                "where dst * in / out is whole; only whole upsampling factors and coprime sizes "
                "convert",
            )
    elif mode == "linear":
        tnn_mode = MODE_LINEAR
        linear_align = _linear_align(in_hw, out_hw, scale_hw, coord)
        if linear_align is None:
            raise ctx.unsupported(node, f"linear with {coord} at {list(in_hw)}->{out_hw}")
        align = linear_align
    else:
        raise ctx.unsupported(node, f"mode {mode}")
    # TNN derives the output size as round(in * scale) from the printed scales; when that
    # would not give the ONNX size, print the size instead (the form onnx2tnn uses for sizes).
    printed = [float(np.float32(float(format_float(s)))) for s in scale_hw]
    if all(round(i * s) == o for i, o, s in zip(in_hw, out_hw, printed, strict=True)):
        params = f"{tnn_mode} {format_float(scale_hw[0])} {format_float(scale_hw[1])} {align} "
    else:
        params = f"{tnn_mode} 0 0 {align} {out_hw[0]} {out_hw[1]} "
    return Layer("Upsample", node.name, node.inputs[:1], node.outputs[:1], params)


def _repeat_layer(node: Node, ctx: Context, channels: int, factors: list[int]) -> Layer:
    """Nearest upsampling by whole factors as a depthwise Deconvolution: kernel = stride =
    factor, all-ones weights, no padding, so each input pixel fills its block exactly."""
    fh, fw = factors
    weight = np.ones((channels, 1, fh, fw), np.float32)
    fields = [channels, 1, channels, fh, fw, fh, fw, 0, 0]
    return conv_layer("Deconvolution", node, ctx, fields, PAD_EXPLICIT, [1, 1], weight, None)


def resize(node: Node, ctx: Context) -> Layer:
    if node.attrs.get("antialias", 0) or "axes" in node.attrs:
        raise ctx.unsupported(node, "antialias or axes")
    if ctx.opset < 11:
        scales = ctx.require_const(node, 1, "scales").astype(np.float64).tolist()
        sizes = None
        # Resize-10 maps pixels like Upsample-9.
        coord, rounding = "asymmetric", "floor"
    else:
        scales_value = ctx.input_const(node, 2)
        sizes_value = ctx.input_const(node, 3)
        scales = scales_value.astype(np.float64).tolist() if scales_value is not None else []
        sizes = sizes_value.astype(np.int64).tolist() if sizes_value is not None else None
        if not scales and sizes is None:
            raise ctx.unsupported(node, "scales or sizes must be a constant")
        coord = node.attrs.get("coordinate_transformation_mode", "half_pixel")
        rounding = node.attrs.get("nearest_mode", "round_prefer_floor")
    return _upsample_layer(
        node, ctx, scales, sizes, node.attrs.get("mode", "nearest"), coord, rounding
    )


def upsample(node: Node, ctx: Context) -> Layer:
    if "scales" in node.attrs:
        scales = [float(s) for s in node.attrs["scales"]]
    else:
        scales = ctx.require_const(node, 1, "scales").astype(np.float64).tolist()
    mode = node.attrs.get("mode", "nearest").replace("bilinear", "linear")
    # Upsample-7/9 map output pixels asymmetrically; onnxruntime truncates for nearest.
    return _upsample_layer(node, ctx, scales, None, mode, "asymmetric", "floor")


TRANSLATORS = {"Resize": resize, "Upsample": upsample}
