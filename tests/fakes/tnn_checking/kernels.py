"""NumPy versions of TNN's window ops, following the CPU backend's arithmetic.

Output sizes and paddings are derived as in ``source/tnn/layer/conv_layer.cc``,
``deconv_layer.cc`` and ``pooling_layer.cc``; the upsample index math copies
``cpu_upsample_layer_acc.cc``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _same_pads(size: int, kernel: int, stride: int, pad_type: int) -> tuple[int, int, int]:
    """(out, pad_begin, pad_end) for TNN's SAME (0) and VALID (1) pad types."""
    if pad_type == 0:
        out = math.ceil(size / stride)
    elif pad_type == 1:
        out = math.ceil((size - kernel + 1) / stride)
    else:
        raise ValueError(f"TNN pad_type {pad_type} is not executable")
    along = (out - 1) * stride + kernel - size
    begin = int(along / 2)  # C integer division truncates toward zero
    return out, begin, max(along - begin, 0)


def conv_geometry(
    size: int, kernel: int, stride: int, dilation: int, pad: int, pad_type: int
) -> tuple[int, int, int]:
    extent = dilation * (kernel - 1) + 1
    if pad_type == -1:
        return (size + 2 * pad - extent) // stride + 1, pad, pad
    return _same_pads(size, extent, stride, pad_type)


def deconv_geometry(
    size: int, kernel: int, stride: int, dilation: int, pad: int, pad_type: int
) -> tuple[int, int]:
    """(out, crop_begin): DeconvLayer's output size and the pad it leaves in ``pads`` for the
    leading edge (the CPU kernel reads only that one)."""
    extent = dilation * (kernel - 1) + 1
    if pad_type == -1:
        return stride * (size - 1) + extent - 2 * pad, pad
    if pad_type in (0, 3):
        out = size * stride
    elif pad_type == 1:
        out = size * stride + max(extent - stride, 0)
    elif pad_type == 2:
        out = size * stride - (stride + extent - 2)
    else:
        raise ValueError(f"TNN deconvolution pad_type {pad_type} is not executable")
    along = (size - 1) * stride + extent - out
    if pad_type == 3:
        along = max(along, 0)
    top = int(along / 2)  # C integer division truncates toward zero
    # pad_type 3 (ONNX output_padding) swaps begin and end, so the larger half leads.
    return out, along - top if pad_type == 3 else top


def pool_geometry(
    size: int, kernel: int, stride: int, pad: int, pad_type: int, ceil_mode: int
) -> tuple[int, int, int]:
    if pad_type != -1:
        return _same_pads(size, kernel, stride, pad_type)
    rounding = math.ceil if ceil_mode == 1 else math.floor
    out = int(rounding(np.float32(size + 2 * pad - kernel) / np.float32(stride) + 1))
    end = max((out - 1) * stride + kernel - size - pad, 0)
    return out, pad, end


def _windows(x: np.ndarray, out_hw, kernel, stride, dilation) -> np.ndarray:
    """A strided view of shape (N, C, OH, OW, KH, KW) over a padded NCHW array."""
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
    view = sliding_window_view(x, extent, axis=(2, 3))
    view = view[:, :, :: stride[0], :: stride[1], :: dilation[0], :: dilation[1]]
    return view[:, :, : out_hw[0], : out_hw[1]]


def conv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    group: int,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
    pad_type: int,
) -> np.ndarray:
    n, c, h, w = x.shape
    out_c, c_per_group, kh, kw = weight.shape
    geo_h = conv_geometry(h, kh, stride[0], dilation[0], pads[0], pad_type)
    geo_w = conv_geometry(w, kw, stride[1], dilation[1], pads[1], pad_type)
    out_hw = (geo_h[0], geo_w[0])
    xp = np.pad(x, ((0, 0), (0, 0), geo_h[1:], geo_w[1:]))
    view = _windows(xp, out_hw, (kh, kw), stride, dilation)
    if c_per_group == 1 and out_c == group == c:
        # Depthwise: accumulate one kernel tap at a time instead of building patches.
        out = np.zeros((n, c, *out_hw), np.float32)
        for i in range(kh):
            for j in range(kw):
                out += view[..., i, j] * weight[None, :, 0, i, j, None, None]
    else:
        patches = view.reshape(n, group, c_per_group, *out_hw, kh, kw)
        patches = patches.transpose(0, 1, 2, 5, 6, 3, 4).reshape(
            n, group, c_per_group * kh * kw, out_hw[0] * out_hw[1]
        )
        kernels = weight.reshape(group, out_c // group, c_per_group * kh * kw)
        out = np.matmul(kernels[None], patches).reshape(n, out_c, *out_hw)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.astype(np.float32, copy=False)


def deconv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    group: int,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
    crop: tuple[int, int],
) -> np.ndarray:
    """Transposed convolution; ``weight`` is [C_in, C_out/group, kh, kw]. Each input pixel is
    scattered onto a full-size canvas, which is then cropped to the output window (rows or
    columns past the canvas, as output_padding asks for, get only the bias)."""
    n, c, h, w = x.shape
    _, out_per_group, kh, kw = weight.shape
    if min(crop) < 0:
        raise ValueError(f"negative deconvolution crop {crop}")
    span_h, span_w = stride[0] * (h - 1) + 1, stride[1] * (w - 1) + 1
    canvas_h = max(dilation[0] * (kh - 1) + span_h, crop[0] + out_hw[0])
    canvas_w = max(dilation[1] * (kw - 1) + span_w, crop[1] + out_hw[1])
    canvas = np.zeros((n, group, out_per_group, canvas_h, canvas_w), np.float32)
    xg = x.reshape(n, group, c // group, h, w)
    wg = weight.reshape(group, c // group, out_per_group, kh, kw)
    for i in range(kh):
        for j in range(kw):
            top, left = i * dilation[0], j * dilation[1]
            canvas[..., top : top + span_h : stride[0], left : left + span_w : stride[1]] += (
                np.einsum("ngihw,gio->ngohw", xg, wg[..., i, j])
            )
    out = canvas[..., crop[0] : crop[0] + out_hw[0], crop[1] : crop[1] + out_hw[1]]
    out = out.reshape(n, group * out_per_group, *out_hw)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.astype(np.float32, copy=False)


def pool2d(
    x: np.ndarray,
    pool_type: int,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pads: tuple[int, int],
    pad_type: int,
    ceil_mode: int,
) -> np.ndarray:
    geo = [
        pool_geometry(size, k, s, p, pad_type, ceil_mode)
        for size, k, s, p in zip(x.shape[2:], kernel, stride, pads, strict=True)
    ]
    out_hw = (geo[0][0], geo[1][0])
    # Padding stands in for TNN clipping each window to the input: -inf for max, and for
    # the average a count of the valid cells only.
    widths = ((0, 0), (0, 0), geo[0][1:], geo[1][1:])
    if pool_type == 0:
        xp = np.pad(x, widths, constant_values=-np.inf)
        return _windows(xp, out_hw, kernel, stride, (1, 1)).max(axis=(4, 5))
    xp = np.pad(x, widths)
    ones = np.pad(np.ones((1, 1, *x.shape[2:]), np.float32), widths)
    total = _windows(xp, out_hw, kernel, stride, (1, 1)).sum(axis=(4, 5), dtype=np.float32)
    count = _windows(ones, out_hw, kernel, stride, (1, 1)).sum(axis=(4, 5), dtype=np.float32)
    return total / count


def upsample(x: np.ndarray, out_hw: tuple[int, int], mode: int, align_corners: int) -> np.ndarray:
    in_h, in_w = x.shape[2:]
    if (in_h, in_w) == tuple(out_hw):
        return x.copy()
    if mode == 1:
        rows = (np.arange(out_hw[0], dtype=np.float32) * (np.float32(in_h) / out_hw[0])).astype(int)
        cols = (np.arange(out_hw[1], dtype=np.float32) * (np.float32(in_w) / out_hw[1])).astype(int)
        return x[:, :, rows][:, :, :, cols]
    if mode != 2:
        raise ValueError(f"TNN Upsample mode {mode} is not executable")
    r0, r1, rl = _linear_taps(in_h, out_hw[0], align_corners)
    c0, c1, cl = _linear_taps(in_w, out_hw[1], align_corners)
    top = x[:, :, r0] * (1 - rl)[:, None] + x[:, :, r1] * rl[:, None]
    return (top[:, :, :, c0] * (1 - cl) + top[:, :, :, c1] * cl).astype(np.float32)


def _linear_taps(size_in: int, size_out: int, align_corners: int):
    dst = np.arange(size_out, dtype=np.float32)
    if align_corners:
        ratio = np.float32(size_in - 1) / np.float32(size_out - 1) if size_out > 1 else 0
        src = np.float32(ratio) * dst
    else:
        ratio = np.float32(size_in) / np.float32(size_out) if size_out > 1 else 0
        # TNN evaluates ratio * (dst + 0.5) - 0.5 in double, then stores a float.
        centre = float(ratio) * (dst.astype(np.float64) + 0.5) - 0.5
        src = np.clip(centre.astype(np.float32), 0, size_in - 1)
    low = src.astype(int)
    high = np.where(low < size_in - 1, low + 1, low)
    return low, high, (src - low).astype(np.float32)
