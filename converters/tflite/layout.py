"""Axis bookkeeping between ONNX's NCHW and TFLite's NHWC.

A 4-D activation is kept NHWC when an NHWC op (Conv, Pool, Resize) made or needs it; every other
tensor keeps the ONNX axis order. ``TO_NHWC`` is the ``numpy.transpose`` order that turns an
NCHW tensor into NHWC, ``TO_NCHW`` the way back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def tflite_axis(axis: int, rank: int, nhwc: bool) -> int:
    """Where ONNX axis ``axis`` is in the TFLite tensor."""
    axis = normalize_axis(axis, rank)
    return TO_NCHW[axis] if nhwc else axis


def to_layout(shape: Sequence[int], nhwc: bool) -> tuple[int, ...]:
    """The TFLite shape of an ONNX shape."""
    return tuple(shape[a] for a in TO_NHWC) if nhwc else tuple(shape)


def compose(first: Sequence[int], then: Sequence[int]) -> tuple[int, ...]:
    """The single transpose equal to ``transpose(first)`` followed by ``transpose(then)``."""
    return tuple(first[a] for a in then)


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(a) for a in np.argsort(perm))


def is_identity(perm: Sequence[int]) -> bool:
    return all(a == i for i, a in enumerate(perm))


def moves_only_unit_axes(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """True when the transpose keeps the order of every axis longer than 1, so that a reshape
    (a free view) does the same."""
    kept = [a for a in perm if shape[a] != 1]
    return kept == sorted(kept)


def broadcast_constant(value: np.ndarray, rank: int, nhwc: bool) -> np.ndarray:
    """A constant operand of an elementwise op, in the layout of its rank-``rank`` partner."""
    array = np.asarray(value)
    if not nhwc or array.ndim == 0:
        return array
    array = array.reshape((1,) * (rank - array.ndim) + array.shape)
    return np.transpose(array, TO_NHWC)


def remaining_order(reduced: Sequence[int], rank: int) -> bool:
    """For an NHWC tensor that loses ONNX axes ``reduced``: True when the axes left over come
    out in ONNX order, so the result needs no transpose back."""
    left = [a for a in TO_NHWC if a not in set(reduced)]
    return left == sorted(left) and rank == 4
