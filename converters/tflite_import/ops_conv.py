"""Convolutions, pooling and resizing: NHWC in TFLite, NCHW in ONNX, with TFLite's SAME
padding written out (asymmetric, the extra row or column at the end)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..tflite.ops_resize import onnx_nearest, tflite_nearest
from .emitter import Emitter, translates
from .reader import OpSpec

SAME, VALID = 0, 1


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite's SAME padding of one axis: (begin, end), the odd one at the end."""
    out = -(-size // stride)
    extent = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def window_pads(
    op: OpSpec,
    size: Sequence[int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int] = (1, 1),
) -> list[int]:
    """ONNX ``pads`` [h_begin, w_begin, h_end, w_end] for the op's SAME or VALID padding."""
    if op.option("padding", SAME) == VALID:
        return [0, 0, 0, 0]
    h = same_padding(size[0], kernel[0], strides[0], dilations[0])
    w = same_padding(size[1], kernel[1], strides[1], dilations[1])
    return [h[0], w[0], h[1], w[1]]


def _weight(em: Emitter, op: OpSpec, position: int, perm: tuple[int, ...]) -> str:
    """A filter in ONNX's order: a transposed constant, or a Transpose of a computed one."""
    array = em.const(op.inputs[position])
    if array is not None:
        return em.constant(
            np.transpose(array.astype(np.float32), perm), em.spec(op.inputs[position]).name
        )
    return em.node("Transpose", [em.as_is(op.inputs[position])], "filter", perm=list(perm))


def _bias(em: Emitter, op: OpSpec, position: int) -> list[str]:
    if position >= len(op.inputs) or op.inputs[position] < 0:
        return []
    return [em.as_is(op.inputs[position])]


@translates("CONV_2D", "DEPTHWISE_CONV_2D")
def conv(em: Emitter, op: OpSpec) -> None:
    x, filt = op.inputs[0], op.inputs[1]
    _, height, width, channels = em.shape(x)
    f_shape = em.shape(filt)
    strides = (op.option("strideH", 1), op.option("strideW", 1))
    dilations = (op.option("dilationHFactor", 1), op.option("dilationWFactor", 1))
    kernel = (f_shape[1], f_shape[2])
    if op.code == "CONV_2D":
        weight = _weight(em, op, 1, (0, 3, 1, 2))  # OHWI -> OIHW
        group = channels // f_shape[3]
    else:
        weight = _weight(em, op, 1, (3, 0, 1, 2))  # [1, kh, kw, C*M] -> [C*M, 1, kh, kw]
        group = channels
    em.output(
        op,
        "Conv",
        [em.nchw(x), weight, *_bias(em, op, 2)],
        True,
        op.option("fusedActivationFunction", 0),
        kernel_shape=list(kernel),
        strides=list(strides),
        dilations=list(dilations),
        pads=window_pads(op, (height, width), kernel, strides, dilations),
        group=group,
    )


@translates("TRANSPOSE_CONV")
def transpose_conv(em: Emitter, op: OpSpec) -> None:
    """Inputs: output shape, filter [C_out, kh, kw, C_in], data, optional bias. ONNX's
    ConvTranspose makes the full (in - 1) * stride + k result; pads crop it to the output
    TFLite asks for, from the begin offset of its padding rule."""
    out_shape = [int(d) for d in em.require_const(op, 0, "the output shape")]
    x = op.inputs[2]
    size = em.shape(x)[1:3]
    kernel = em.shape(op.inputs[1])[1:3]
    strides = (op.option("strideH", 1), op.option("strideW", 1))
    crops = []
    for axis in range(2):
        full = (size[axis] - 1) * strides[axis] + kernel[axis]
        out = out_shape[1 + axis]
        begin = 0
        if op.option("padding", SAME) == SAME:
            begin = same_padding(out, kernel[axis], strides[axis])[0]
        crops.append((begin, full - out - begin))
    _deconvolution(em, op, x, strides, crops, bias=3)


#: TfLitePadding, the C enum MediaPipe's custom options hold (not the schema's Padding).
_C_SAME, _C_VALID = 1, 2


@translates("CUSTOM:Convolution2DTransposeBias")
def transpose_conv_bias(em: Emitter, op: OpSpec) -> None:
    """MediaPipe's transposed convolution with a bias: inputs data, filter [C_out, kh, kw,
    C_in], bias [C_out]; its custom options are the raw C struct TfLiteTransposeConvParams
    (int32 padding, stride_w, stride_h, little-endian). The output size follows from the
    input: SAME trims max(0, k - (in - 1) % s - 1) from the full (in - 1) * s + k result,
    half of it (rounded down) at the start; VALID trims nothing."""
    if len(op.inputs) != 3 or len(op.custom_options) < 12:
        raise em.unsupported(op, "needs 3 inputs and 12 bytes of options")
    padding, stride_w, stride_h = (int(v) for v in np.frombuffer(op.custom_options[:12], "<i4"))
    if padding not in (_C_SAME, _C_VALID) or stride_w < 1 or stride_h < 1:
        raise em.unsupported(op, f"padding {padding}, strides {stride_h}x{stride_w}")
    x = op.inputs[0]
    size = em.shape(x)[1:3]
    kernel = em.shape(op.inputs[1])[1:3]
    strides = (stride_h, stride_w)
    crops = []
    for axis in range(2):
        trim = 0
        if padding == _C_SAME:
            trim = max(0, kernel[axis] - (size[axis] - 1) % strides[axis] - 1)
        crops.append((trim // 2, trim - trim // 2))
    _deconvolution(em, op, x, strides, crops, bias=2)


def _deconvolution(
    em: Emitter,
    op: OpSpec,
    x: int,
    strides: tuple[int, int],
    crops: list[tuple[int, int]],
    bias: int,
) -> None:
    """ConvTranspose of tensor ``x`` by the op's filter (input 1, [C_out, kh, kw, C_in]) and
    bias (input ``bias``), its full result cropped by (begin, end) per spatial axis; a negative
    end (an output larger than the full result) is ``output_padding``."""
    kernel = em.shape(op.inputs[1])[1:3]
    inputs = [em.nchw(x), _weight(em, op, 1, (3, 0, 1, 2)), *_bias(em, op, bias)]
    attrs: dict[str, object] = {}
    extra = [max(-end, 0) for _, end in crops]
    if any(extra):
        attrs["output_padding"] = extra
    em.output(
        op,
        "ConvTranspose",
        inputs,
        True,
        op.option("fusedActivationFunction", 0),
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=[begin for begin, _ in crops] + [max(end, 0) for _, end in crops],
        **attrs,
    )


@translates("MAX_POOL_2D", "AVERAGE_POOL_2D")
def pool(em: Emitter, op: OpSpec) -> None:
    x = op.inputs[0]
    size = em.shape(x)[1:3]
    kernel = (op.option("filterHeight", 1), op.option("filterWidth", 1))
    strides = (op.option("strideH", 1), op.option("strideW", 1))
    attrs: dict[str, object] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": window_pads(op, size, kernel, strides),
    }
    if op.code == "AVERAGE_POOL_2D":
        attrs["count_include_pad"] = 0  # TFLite averages over the cells inside the input
    em.output(
        op,
        "MaxPool" if op.code == "MAX_POOL_2D" else "AveragePool",
        [em.nchw(x)],
        True,
        op.option("fusedActivationFunction", 0),
        **attrs,
    )


_NEAREST_MODES = (
    ("asymmetric", "floor"),
    ("align_corners", "round_prefer_ceil"),
    ("half_pixel", "round_prefer_ceil"),  # floor((x + 0.5) * scale): TFLite's half pixel
    ("tf_half_pixel_for_nn", "floor"),
)


@translates("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(em: Emitter, op: OpSpec) -> None:
    """Bilinear maps onto ONNX's coordinate modes; nearest takes the first ONNX mode that picks
    exactly TFLite's rows and columns (checked here), else two Gathers pick them."""
    x = op.inputs[0]
    batch, height, width, channels = em.shape(x)
    out_h, out_w = (int(d) for d in em.require_const(op, 1, "the size"))
    align = bool(op.option("alignCorners", False))
    half = bool(op.option("halfPixelCenters", False))
    source = em.nchw(x)
    attrs: dict[str, str] = {}
    if op.code == "RESIZE_BILINEAR":
        if align and half:
            raise em.unsupported(op, "align_corners with half_pixel_centers")
        mode = "align_corners" if align else "half_pixel" if half else "asymmetric"
        attrs = {"mode": "linear", "coordinate_transformation_mode": mode}
    else:
        pairs = ((height, out_h), (width, out_w))
        wanted = [tflite_nearest(align, half, i, o) for i, o in pairs]
        for mode, rounding in _NEAREST_MODES:
            got = [onnx_nearest(mode, rounding, o / i, i, o) for i, o in pairs]
            if all(np.array_equal(g, w) for g, w in zip(got, wanted, strict=True)):
                attrs = {"mode": "nearest", "coordinate_transformation_mode": mode}
                attrs["nearest_mode"] = rounding
                break
        else:
            rows = em.node("Gather", [source, em.int64(wanted[0], "rows")], "rows", axis=2)
            em.output(op, "Gather", [rows, em.int64(wanted[1], "cols")], True, axis=3)
            return
    sizes = em.int64([batch, channels, out_h, out_w], "sizes")
    em.output(op, "Resize", [source, "", "", sizes], True, **attrs)
