"""Resize and Upsample over H and W.

Nearest: ONNX's source index for every output row and column is computed here, and the TFLite
op is used only when one of its modes gives exactly those indices; otherwise two GATHERs pick
them, which is exact for every ONNX mode. Linear maps onto RESIZE_BILINEAR's three modes.
"""

from __future__ import annotations

import math

import numpy as np

from edgebench.converters.graph import Node

from .lowering import Lowering, translates


def _onnx_coordinate(
    mode: str, x: np.ndarray, scale: np.float32, size_in: int, size_out: int
) -> np.ndarray:
    """ONNX's source coordinate, in float32 as ONNX Runtime computes it (an index that lands
    exactly on .5 rounds differently in float64)."""
    half = np.float32(0.5)
    if mode == "asymmetric":
        return x / scale
    if mode == "align_corners":
        if size_out == 1:
            return np.zeros_like(x)
        return x * np.float32(size_in - 1) / np.float32(size_out - 1)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and size_out > 1):
        return (x + half) / scale - half
    if mode == "pytorch_half_pixel":
        return np.zeros_like(x)
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    raise ValueError(mode)


def _round(values: np.ndarray, nearest_mode: str) -> np.ndarray:
    if nearest_mode == "floor":
        return np.floor(values)
    if nearest_mode == "ceil":
        return np.ceil(values)
    halfway = values == np.floor(values) + np.float32(0.5)
    if nearest_mode == "round_prefer_ceil":
        return np.where(halfway, np.ceil(values), np.round(values))
    return np.where(halfway, np.floor(values), np.round(values))  # round_prefer_floor


def onnx_nearest(
    mode: str, nearest_mode: str, scale: float, size_in: int, size_out: int
) -> np.ndarray:
    x = np.arange(size_out, dtype=np.float32)
    coordinate = _onnx_coordinate(mode, x, np.float32(scale), size_in, size_out)
    source = _round(coordinate.astype(np.float32), nearest_mode)
    return np.clip(source, 0, size_in - 1).astype(np.int64)


def tflite_nearest(
    align_corners: bool, half_pixel: bool, size_in: int, size_out: int
) -> np.ndarray:
    """TFLite's RESIZE_NEAREST_NEIGHBOR source indices (its reference kernel's arithmetic)."""
    if align_corners and size_out > 1:
        scale = np.float32((size_in - 1) / (size_out - 1))
    else:
        scale = np.float32(size_in / size_out)
    offset = np.float32(0.5 if half_pixel else 0.0)
    x = np.arange(size_out, dtype=np.float32)
    value = (x + offset) * scale
    # TfLiteRound rounds halves away from zero (numpy's round would go to even).
    rounded = np.floor(value + np.float32(0.5)) if align_corners else np.floor(value)
    index = np.minimum(rounded.astype(np.int64), size_in - 1)
    return np.maximum(index, 0) if half_pixel else index


def _scales(
    lowering: Lowering, node: Node, size_in: tuple[int, ...], size_out: tuple[int, ...]
) -> list[float]:
    scales = None
    index = 1 if node.op == "Upsample" or lowering.opset < 11 else 2
    if lowering.has_input(node, index):
        scales = lowering.input_const(node, index)
    if node.op == "Upsample" and scales is None:
        scales = np.asarray(node.attrs.get("scales", []), np.float32)
    if scales is not None and scales.size == len(size_in):
        return [float(s) for s in scales]
    return [float(np.float32(o) / np.float32(i)) for i, o in zip(size_in, size_out, strict=True)]


@translates("Resize", "Upsample")
def resize(lowering: Lowering, node: Node) -> None:
    size_in, size_out = lowering.shape(node.inputs[0]), lowering.shape(node.outputs[0])
    if len(size_in) != 4 or size_in[:2] != size_out[:2]:
        raise lowering.unsupported(node, "only resizing H and W of a 4-D tensor")
    attrs = node.attrs
    mode = attrs.get("mode", "nearest")
    transform = attrs.get("coordinate_transformation_mode", "half_pixel")
    if node.op == "Upsample" or lowering.opset < 11:
        transform = "asymmetric"
    if int(attrs.get("antialias", 0)) or transform == "tf_crop_and_resize":
        raise lowering.unsupported(node, f"{transform} / antialias")
    scales = _scales(lowering, node, size_in, size_out)
    source = lowering.nhwc(node.inputs[0])
    result = lowering.define(node.outputs[0], nhwc=True)
    pairs = [(size_in[a], size_out[a], scales[a]) for a in (2, 3)]
    size = lowering.int32([size_out[2], size_out[3]], "size")
    if mode == "nearest":
        nearest_mode = attrs.get("nearest_mode", "round_prefer_floor")
        wanted = [onnx_nearest(transform, nearest_mode, s, i, o) for i, o, s in pairs]
        for align, half in ((False, False), (False, True), (True, False)):
            got = [tflite_nearest(align, half, i, o) for i, o, _ in pairs]
            if all(np.array_equal(g, w) for g, w in zip(got, wanted, strict=True)):
                lowering.emit(
                    "RESIZE_NEAREST_NEIGHBOR",
                    [source, size],
                    [result],
                    "ResizeNearestNeighborOptions",
                    alignCorners=align,
                    halfPixelCenters=half,
                )
                return
        rows_shape = (size_in[0], size_out[2], size_in[3], size_in[1])
        rows = lowering.scratch(node.name + "_rows", rows_shape)
        lowering.emit(
            "GATHER", [source, lowering.int32(wanted[0], "rows")], [rows], "GatherOptions", axis=1
        )
        lowering.emit(
            "GATHER", [rows, lowering.int32(wanted[1], "cols")], [result], "GatherOptions", axis=2
        )
        return
    if mode != "linear":
        raise lowering.unsupported(node, f"mode {mode!r}")
    if transform not in ("align_corners", "asymmetric", "half_pixel", "pytorch_half_pixel"):
        raise lowering.unsupported(node, f"linear with {transform}")
    if transform != "align_corners" and any(
        not math.isclose(s, o / i, rel_tol=1e-6) for i, o, s in pairs
    ):
        raise lowering.unsupported(node, "scales that differ from output size / input size")
    if transform == "pytorch_half_pixel" and any(o == 1 for _, o, _ in pairs):
        raise lowering.unsupported(node, "pytorch_half_pixel to size 1")
    lowering.emit(
        "RESIZE_BILINEAR",
        [source, size],
        [result],
        "ResizeBilinearOptions",
        alignCorners=transform == "align_corners",
        halfPixelCenters=transform in ("half_pixel", "pytorch_half_pixel"),
    )
