"""Translators for ops that move data: reshapes, transposes, slicing, gathering, joining,
padding."""

from __future__ import annotations

import math

import numpy as np

from edgebench.converters.tnn.binary import format_float
from edgebench.converters.tnn.context import Context, Layer, as_tnn_tensor, axis_index
from edgebench.converters.tnn.onnx_graph import Node


def _ints(values) -> str:
    return "".join(f"{int(v)} " for v in values)


def _counted(values) -> str:
    values = list(values)
    return f"{len(values)} " + _ints(values)


def reshape(node: Node, ctx: Context) -> Layer:
    shape = ctx.require_const(node, 1, "the shape").reshape(-1)
    if node.attrs.get("allowzero", 0) and (shape == 0).any():
        raise ctx.unsupported(node, "allowzero=1 with a zero in the shape")
    # axis, num_axes, shape size, shape..., reshape_type (0: NCHW order)
    params = f"0 {len(shape)} " + _counted(shape) + "0 "
    return Layer("Reshape", node.name, node.inputs[:1], node.outputs[:1], params)


def flatten(node: Node, ctx: Context) -> Layer:
    axis = axis_index(node.attrs.get("axis", 1), ctx.rank(node.inputs[0]))
    return Layer("Flatten", node.name, node.inputs[:1], node.outputs[:1], f"{axis} ")


def transpose(node: Node, ctx: Context) -> Layer:
    rank = ctx.rank(node.inputs[0])
    perm = node.attrs.get("perm", list(reversed(range(rank))))
    return Layer("Permute", node.name, node.inputs[:1], node.outputs[:1], _counted(perm))


def concat(node: Node, ctx: Context) -> Layer:
    axis = axis_index(node.attrs["axis"], ctx.rank(node.outputs[0]))
    inputs = [name for name in node.inputs if name]
    constants = [name for name in inputs if ctx.const(name) is not None]
    if len(constants) == len(inputs):
        raise ctx.unsupported(node, "all inputs are constants")
    return Layer("Concat", node.name, inputs, node.outputs[:1], f"{axis} ", None, constants)


def split(node: Node, ctx: Context) -> Layer:
    shape = ctx.shape(node.inputs[0])
    axis = axis_index(node.attrs.get("axis", 0), len(shape))
    if ctx.opset < 13:
        sizes = node.attrs.get("split")
    elif len(node.inputs) > 1 and node.inputs[1]:
        sizes = ctx.require_const(node, 1, "split").reshape(-1).tolist()
    else:
        sizes = None
    if sizes is None:
        count = len(node.outputs)
        chunk = math.ceil(shape[axis] / count)
        sizes = [chunk] * (count - 1) + [shape[axis] - chunk * (count - 1)]
    params = f"{axis} " + _counted(sizes)
    return Layer("SplitV", node.name, node.inputs[:1], list(node.outputs), params)


def slice_(node: Node, ctx: Context) -> Layer:
    shape = ctx.shape(node.inputs[0])
    if ctx.opset < 10:
        starts = node.attrs["starts"]
        ends = node.attrs["ends"]
        axes = node.attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ctx.require_const(node, 1, "starts").reshape(-1).tolist()
        ends = ctx.require_const(node, 2, "ends").reshape(-1).tolist()
        axes_value = ctx.input_const(node, 3)
        steps_value = ctx.input_const(node, 4)
        axes = axes_value.reshape(-1).tolist() if axes_value is not None else range(len(starts))
        steps = steps_value.reshape(-1).tolist() if steps_value is not None else [1] * len(starts)
    begins, stops, norm_axes, norm_steps = [], [], [], []
    # TNN's ARM kernel walks the axes in ascending order, so they are written sorted.
    ranges = sorted(
        (axis_index(axis, len(shape)), start, end, step)
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True)
    )
    for axis, start, end, step in ranges:
        dim = shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step < 0:
            # Checked in real TNN: the ARM kernel loops while index < end, so a negative
            # step copies nothing (the X86 and CPU kernels walk backwards).
            raise ctx.unsupported(node, "a negative step (TNN's ARM kernel gives zeros)")
        if step == 0:
            raise ctx.unsupported(node, "a zero step")
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        if end <= start:
            raise ctx.unsupported(node, "an empty slice")
        begins.append(start)
        stops.append(end)
        norm_axes.append(axis)
        norm_steps.append(step)
    params = _counted(begins) + _counted(stops) + _counted(norm_axes) + _counted(norm_steps)
    return Layer("StridedSliceV2", node.name, node.inputs[:1], node.outputs[:1], params)


def gather(node: Node, ctx: Context) -> Layer:
    data_name, _ = node.inputs
    data, indices = ctx.input_consts(node)
    shape = ctx.shape(data_name)
    axis = axis_index(node.attrs.get("axis", 0), len(shape))
    resource: list = []
    if data is not None:
        resource += [1, ctx.weight(data) if data.dtype.kind == "f" else as_tnn_tensor(data)]
    else:
        resource.append(0)
    if indices is not None:
        indices = np.where(indices < 0, indices + shape[axis], indices)
        resource += [1, as_tnn_tensor(indices)]
    else:
        resource.append(0)
    inputs = [name for name in node.inputs if ctx.const(name) is None]
    params = f"{axis} {int(data is not None)} {int(indices is not None)} "
    return Layer("Gather", node.name, inputs, node.outputs[:1], params, resource)


def _axes(node: Node, ctx: Context) -> list[int] | None:
    if ctx.opset < 13:
        return node.attrs.get("axes")
    value = ctx.input_const(node, 1)
    if len(node.inputs) > 1 and node.inputs[1] and value is None:
        raise ctx.unsupported(node, "axes must be a constant")
    return None if value is None else value.reshape(-1).tolist()


def squeeze(node: Node, ctx: Context) -> Layer:
    shape = ctx.shape(node.inputs[0])
    axes = _axes(node, ctx)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = [axis_index(a, len(shape)) for a in axes]
    return Layer("Squeeze", node.name, node.inputs[:1], node.outputs[:1], _counted(axes))


def unsqueeze(node: Node, ctx: Context) -> Layer:
    axes = _axes(node, ctx)
    if axes is None:
        raise ctx.unsupported(node, "missing axes")
    rank = ctx.rank(node.outputs[0])
    axes = sorted(axis_index(a, rank) for a in axes)
    return Layer("Unsqueeze", node.name, node.inputs[:1], node.outputs[:1], _counted(axes))


# TNN PadLayerParam::type; edge (2) is not converted, see pad().
_PAD_TYPES = {"constant": 0, "reflect": 1}


def _onnx_pads(node: Node, ctx: Context, rank: int) -> tuple[list[int], float]:
    """ONNX's [begin..., end...] over every axis, and the constant value."""
    if ctx.opset < 11:
        return list(node.attrs.get("pads", [])), float(node.attrs.get("value", 0.0))
    pads = [int(p) for p in ctx.require_const(node, 1, "pads").reshape(-1)]
    value = 0.0
    if len(node.inputs) > 2 and node.inputs[2]:
        value = float(ctx.require_const(node, 2, "the constant value").reshape(-1)[0])
    if len(node.inputs) > 3 and node.inputs[3]:
        axes = [axis_index(int(a), rank) for a in ctx.require_const(node, 3, "axes").reshape(-1)]
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
        pads = full
    return pads, value


def pad(node: Node, ctx: Context) -> Layer:
    """4-D input -> ``Pad`` (``0 0 top bottom left right c_begin c_end type value``), other
    ranks -> ``PadV2`` (``rank begins... ends... type value``), as onnx2tnn chooses by the
    length of pads. Refused where TNN's kernels (CPU, ARM) would compute something else."""
    shape = ctx.shape(node.inputs[0])
    rank = len(shape)
    mode = node.attrs.get("mode", "constant")
    if mode == "edge":
        # onnx2tnn writes type 2, but only TNN's CUDA kernel has it: ARM, x86, OpenCL and
        # Metal reject it and the CPU kernel fails on every interior element.
        raise ctx.unsupported(node, "mode edge (no working TNN CPU or ARM kernel)")
    if mode not in _PAD_TYPES:
        raise ctx.unsupported(node, f"mode {mode}")
    if rank not in (2, 3, 4):
        # ARM's PadV2 takes 2-5 dims but mixes up the height of 5-D input.
        raise ctx.unsupported(node, f"a {rank}-D input (converted for 2-D to 4-D)")
    pads, value = _onnx_pads(node, ctx, rank)
    if len(pads) != 2 * rank:
        raise ctx.unsupported(node, f"{len(pads)} pads for a {rank}-D input")
    begins, ends = pads[:rank], pads[rank:]
    if min(pads) < 0:
        raise ctx.unsupported(node, "negative pads")
    if begins[0] or ends[0]:
        raise ctx.unsupported(node, "padding the batch axis")
    if mode == "reflect":
        # TNN reflects each H x W plane only, and reads past the input for a pad >= the size.
        if begins[1] or ends[1]:
            raise ctx.unsupported(node, "reflect padding of the channel axis")
        if any(max(b, e) >= d for b, e, d in zip(begins, ends, shape, strict=True)):
            raise ctx.unsupported(node, "a reflect pad as large as its axis")
    tail = f"{_PAD_TYPES[mode]} {format_float(value)} "
    if rank == 4:
        params = f"0 0 {begins[2]} {ends[2]} {begins[3]} {ends[3]} {begins[1]} {ends[1]} " + tail
        return Layer("Pad", node.name, node.inputs[:1], node.outputs[:1], params)
    params = f"{rank} " + _ints(pads) + tail
    return Layer("PadV2", node.name, node.inputs[:1], node.outputs[:1], params)


TRANSLATORS = {
    "Pad": pad,
    "Reshape": reshape,
    "Flatten": flatten,
    "Transpose": transpose,
    "Concat": concat,
    "Split": split,
    "Slice": slice_,
    "Gather": gather,
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
}
