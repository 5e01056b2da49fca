"""Shape and data-movement ops: their axes follow the input's layout, and the ops that depend
on the memory order (Reshape and friends) read the ONNX order."""

from __future__ import annotations

import numpy as np

from edgebench.converters.graph import Node

from . import layout
from .lowering import Lowering, Value, translates

_REDUCERS = {
    "ReduceMean": "MEAN",
    "ReduceSum": "SUM",
    "ReduceMax": "REDUCE_MAX",
    "ReduceMin": "REDUCE_MIN",
    "ReduceProd": "REDUCE_PROD",
}
_NP_TO_TFLITE_TYPE = {
    "float32": 0,
    "float16": 1,
    "int32": 2,
    "int64": 4,
    "bool": 6,
    "uint8": 3,
    "int8": 9,
}


@translates("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def reshape(lowering: Lowering, node: Node) -> None:
    out_shape = lowering.shape(node.outputs[0])
    source = lowering.onnx_order(node.inputs[0])
    lowering.reshape_into(source, lowering.define(node.outputs[0]), out_shape)


@translates("Transpose")
def transpose(lowering: Lowering, node: Node) -> None:
    rank = lowering.rank(node.inputs[0])
    perm = tuple(node.attrs.get("perm", list(range(rank))[::-1]))
    value = lowering.value(node.inputs[0])
    # The input tensor is the ONNX value transposed by TO_NHWC (or not at all).
    stored = layout.TO_NHWC if value.nhwc else tuple(range(rank))
    effective = tuple(layout.inverse(stored)[a] for a in perm)
    if layout.is_identity(effective):
        lowering.alias(node.outputs[0], Value(value.tensor))
        return
    result = lowering.define(node.outputs[0])
    shape = lowering.builder.tensors[value.tensor].shape
    if layout.moves_only_unit_axes(shape, effective):
        lowering.reshape_into(value.tensor, result, lowering.shape(node.outputs[0]))
    else:
        lowering.emit("TRANSPOSE", [value.tensor, lowering.int32(effective, "perm")], [result])


def _layout_of_inputs(lowering: Lowering, names: list[str]) -> bool:
    computed = [n for n in names if lowering.const(n) is None]
    return (
        bool(computed)
        and all(lowering.rank(n) == 4 for n in computed)
        and any(lowering.is_nhwc(n) for n in computed)
    )


@translates("Concat")
def concat(lowering: Lowering, node: Node) -> None:
    names = [n for n in node.inputs if n and lowering.shape(n) and 0 not in lowering.shape(n)]
    rank = lowering.rank(node.outputs[0])
    nhwc = rank == 4 and _layout_of_inputs(lowering, names)
    tensors = [lowering.tensor(n, nhwc) for n in names]
    axis = layout.tflite_axis(int(node.attrs["axis"]), rank, nhwc)
    result = lowering.define(node.outputs[0], nhwc)
    lowering.emit("CONCATENATION", tensors, [result], "ConcatenationOptions", axis=axis)


@translates("Split")
def split(lowering: Lowering, node: Node) -> None:
    shape = lowering.shape(node.inputs[0])
    rank = len(shape)
    axis = layout.normalize_axis(int(node.attrs.get("axis", 0)), rank)
    sizes = [lowering.shape(o)[axis] for o in node.outputs]
    value = lowering.value(node.inputs[0])
    where = layout.tflite_axis(axis, rank, value.nhwc)
    results = [lowering.define(o, value.nhwc) for o in node.outputs]
    if len(set(sizes)) == 1:
        lowering.emit(
            "SPLIT",
            [lowering.int32(where, "axis"), value.tensor],
            results,
            "SplitOptions",
            numSplits=len(sizes),
        )
    else:
        lowering.emit(
            "SPLIT_V",
            [value.tensor, lowering.int32(sizes, "sizes"), lowering.int32(where, "axis")],
            results,
            "SplitVOptions",
            numSplits=len(sizes),
        )


@translates("Slice")
def slice_(lowering: Lowering, node: Node) -> None:
    shape = lowering.shape(node.inputs[0])
    rank = len(shape)
    if lowering.opset < 10:
        starts, ends = node.attrs["starts"], node.attrs["ends"]
        axes = node.attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = lowering.require_const(node, 1, "starts").tolist()
        ends = lowering.require_const(node, 2, "ends").tolist()
        axes_c = lowering.input_const(node, 3)
        steps_c = lowering.input_const(node, 4)
        if (lowering.has_input(node, 3) and axes_c is None) or (
            lowering.has_input(node, 4) and steps_c is None
        ):
            raise lowering.unsupported(node, "axes and steps must be constants")
        axes = list(range(len(starts))) if axes_c is None else axes_c.tolist()
        steps = [1] * len(starts) if steps_c is None else steps_c.tolist()
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    end_mask = 0
    for start, stop, ax, step in zip(starts, ends, axes, steps, strict=True):
        ax = layout.normalize_axis(int(ax), rank)
        dim = shape[ax]
        if step == 0:
            raise lowering.unsupported(node, "a step of 0")
        start = start + dim if start < 0 else start
        stop = stop + dim if stop < 0 else stop
        if step > 0:
            begin[ax], end[ax] = int(np.clip(start, 0, dim)), int(np.clip(stop, 0, dim))
        else:
            begin[ax] = int(np.clip(start, 0, dim - 1))
            end[ax] = int(np.clip(stop, -1, dim - 1))
        stride[ax] = int(step)
    value = lowering.value(node.inputs[0])
    order = layout.TO_NHWC if value.nhwc else tuple(range(rank))
    begin, end, stride = ([v[a] for a in order] for v in (begin, end, stride))
    for position, (stop, step) in enumerate(zip(end, stride, strict=True)):
        if step < 0 and stop < 0:
            end_mask |= 1 << position
            end[position] = 0
    result = lowering.define(node.outputs[0], value.nhwc)
    if all(s == 1 for s in stride):
        size = [e - b for b, e in zip(begin, end, strict=True)]
        lowering.emit(
            "SLICE",
            [value.tensor, lowering.int32(begin, "begin"), lowering.int32(size, "size")],
            [result],
            "SliceOptions",
        )
        return
    lowering.emit(
        "STRIDED_SLICE",
        [
            value.tensor,
            lowering.int32(begin, "begin"),
            lowering.int32(end, "end"),
            lowering.int32(stride, "strides"),
        ],
        [result],
        "StridedSliceOptions",
        endMask=end_mask,
    )


@translates("Pad")
def pad(lowering: Lowering, node: Node) -> None:
    rank = lowering.rank(node.inputs[0])
    if lowering.opset < 11:
        pads = list(node.attrs["pads"])
        fill = float(node.attrs.get("value", 0.0))
    else:
        pads = lowering.require_const(node, 1, "pads").tolist()
        fill_c = lowering.input_const(node, 2)
        if lowering.has_input(node, 2) and fill_c is None:
            raise lowering.unsupported(node, "the constant value must be a constant")
        fill = 0.0 if fill_c is None or fill_c.size == 0 else float(fill_c.reshape(-1)[0])
    axes_c = lowering.input_const(node, 3)
    axes = (
        list(range(rank))
        if axes_c is None
        else [layout.normalize_axis(int(a), rank) for a in axes_c.tolist()]
    )
    pairs = [[0, 0] for _ in range(rank)]
    count = len(axes)
    for i, ax in enumerate(axes):
        pairs[ax] = [int(pads[i]), int(pads[i + count])]
    if any(v < 0 for pair in pairs for v in pair):
        raise lowering.unsupported(node, "negative pads")
    value = lowering.value(node.inputs[0])
    order = layout.TO_NHWC if value.nhwc else tuple(range(rank))
    pairs = [pairs[a] for a in order]
    mode = node.attrs.get("mode", "constant")
    result = lowering.define(node.outputs[0], value.nhwc)
    paddings = lowering.int32(pairs, "paddings")
    if mode == "reflect":
        lowering.emit("MIRROR_PAD", [value.tensor, paddings], [result], "MirrorPadOptions", mode=0)
    elif mode != "constant":
        raise lowering.unsupported(node, f"mode {mode!r}")
    elif fill == 0.0:
        lowering.emit("PAD", [value.tensor, paddings], [result], "PadOptions")
    else:
        fill_t = lowering.constant(np.asarray([fill], np.float32), "pad_value")
        lowering.emit("PADV2", [value.tensor, paddings, fill_t], [result], "PadV2Options")


@translates("Gather")
def gather(lowering: Lowering, node: Node) -> None:
    indices = lowering.require_const(node, 1, "the indices")
    shape = lowering.shape(node.inputs[0])
    rank = len(shape)
    axis = layout.normalize_axis(int(node.attrs.get("axis", 0)), rank)
    indices = np.where(indices < 0, indices + shape[axis], indices)
    value = lowering.value(node.inputs[0])
    out_rank = lowering.rank(node.outputs[0])
    keeps_layout = value.nhwc and indices.ndim == 1
    direct = value.nhwc and indices.ndim == 0 and layout.remaining_order([axis], rank)
    nhwc_in = keeps_layout or direct
    source = lowering.tensor(node.inputs[0], nhwc_in)
    where = layout.tflite_axis(axis, rank, nhwc_in)
    result = lowering.define(node.outputs[0], keeps_layout and out_rank == 4)
    lowering.emit(
        "GATHER",
        [source, lowering.int32(indices, "indices")],
        [result],
        "GatherOptions",
        axis=where,
    )


@translates(*_REDUCERS)
def reduce(lowering: Lowering, node: Node) -> None:
    rank = lowering.rank(node.inputs[0])
    axes_c = node.attrs.get("axes")
    if axes_c is None and lowering.has_input(node, 1):
        axes_c = lowering.require_const(node, 1, "axes").tolist()
    if not axes_c:
        if node.attrs.get("noop_with_empty_axes", 0):
            lowering.alias(node.outputs[0], lowering.value(node.inputs[0]))
            return
        axes_c = list(range(rank))
    axes = sorted(layout.normalize_axis(int(a), rank) for a in axes_c)
    keep = bool(node.attrs.get("keepdims", 1))
    value = lowering.value(node.inputs[0])
    nhwc_in = value.nhwc and (keep or layout.remaining_order(axes, rank))
    source = lowering.tensor(node.inputs[0], nhwc_in)
    where = [layout.tflite_axis(a, rank, nhwc_in) for a in axes]
    result = lowering.define(node.outputs[0], nhwc_in and keep)
    lowering.emit(
        _REDUCERS[node.op],
        [source, lowering.int32(where, "axes")],
        [result],
        "ReducerOptions",
        keepDims=keep,
    )


@translates("Cast")
def cast(lowering: Lowering, node: Node) -> None:
    from onnx import helper

    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs["to"])))
    value = lowering.value(node.inputs[0])
    source_dtype = lowering.builder.tensors[value.tensor].dtype
    if target == source_dtype or (target.kind == "i" and source_dtype == np.int32):
        lowering.alias(node.outputs[0], value)
        return
    if target == np.int64:
        target = np.dtype(np.int32)
    result = lowering.define(node.outputs[0], value.nhwc, target)
    lowering.emit(
        "CAST",
        [value.tensor],
        [result],
        "CastOptions",
        inDataType=_NP_TO_TFLITE_TYPE[source_dtype.name],
        outDataType=_NP_TO_TFLITE_TYPE[target.name],
    )


@translates("Expand")
def expand(lowering: Lowering, node: Node) -> None:
    out_shape = lowering.shape(node.outputs[0])
    source = lowering.onnx_order(node.inputs[0])
    result = lowering.define(node.outputs[0])
    lowering.emit("BROADCAST_TO", [source, lowering.int32(out_shape, "shape")], [result])


@translates("Tile")
def tile(lowering: Lowering, node: Node) -> None:
    repeats = lowering.require_const(node, 1, "repeats")
    source = lowering.onnx_order(node.inputs[0])
    result = lowering.define(node.outputs[0])
    lowering.emit("TILE", [source, lowering.int32(repeats, "multiples")], [result])
