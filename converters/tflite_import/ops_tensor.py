"""Shape and data-movement ops. Ops whose meaning depends on the memory order (RESHAPE,
SQUEEZE, GATHER, ...) read the tensor as is, in TFLite's NHWC order; ops with axes (CONCAT,
SPLIT, SLICE, PAD, TRANSPOSE) keep an NCHW-held tensor NCHW and remap their axes."""

from __future__ import annotations

import numpy as np

from ..tflite.layout import TO_NCHW, TO_NHWC
from .emitter import Emitter, Held, held_constant, to_held_axis, translates
from .reader import OpSpec

_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7}
_ONNX_TYPES |= {"bool": 9, "float16": 10, "float64": 11}
_FAR = 2**62  # "to the end" for ONNX Slice in either direction


@translates("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def reshape(em: Emitter, op: OpSpec) -> None:
    """The new shape from the shape tensor or the options; the output tensor's own shape when
    neither is there or when they hold a 0 (which ONNX would read as "copy this axis")."""
    shape: list[int] | None = None
    if op.code == "RESHAPE":
        given = em.const(op.inputs[1]) if len(op.inputs) > 1 else None
        if given is not None:
            shape = [int(d) for d in given.reshape(-1)]
        elif op.option("newShape") is not None:
            shape = [int(d) for d in op.option("newShape")]
    if shape is None or 0 in shape:
        shape = list(em.shape(op.outputs[0]))
    em.output(op, "Reshape", [em.as_is(op.inputs[0]), em.int64(shape, "shape")], False)


@translates("TRANSPOSE")
def transpose(em: Emitter, op: OpSpec) -> None:
    perm = [int(a) for a in em.require_const(op, 1, "the permutation")]
    held = em.value(op.inputs[0])
    if held.nchw:  # axis a of the NHWC tensor is axis TO_NHWC[a] of the held one
        perm = [TO_NHWC[a] for a in perm]
    if perm == sorted(perm):
        em.alias(op.outputs[0], Held(held.name))
        return
    em.output(op, "Transpose", [held.name], False, perm=perm)


def _same_layout(em: Emitter, indices: list[int], rank: int) -> bool:
    computed = [i for i in indices if em.const(i) is None]
    return (
        rank == 4
        and bool(computed)
        and all(em.rank(i) == 4 for i in computed)
        and any(em.is_nchw(i) for i in computed)
    )


@translates("CONCATENATION")
def concat(em: Emitter, op: OpSpec) -> None:
    rank = em.rank(op.outputs[0])
    nchw = _same_layout(em, op.inputs, rank)
    names = []
    for index in op.inputs:
        array = em.const(index)
        if array is None:
            names.append(em.get(index, nchw))
        else:
            names.append(em.constant(held_constant(array, rank, nchw), em.spec(index).name))
    axis = to_held_axis(int(op.option("axis", 0)), rank, nchw)
    em.output(op, "Concat", names, nchw, op.option("fusedActivationFunction", 0), axis=axis)


@translates("SPLIT", "SPLIT_V")
def split(em: Emitter, op: OpSpec) -> None:
    source, axis_at = (op.inputs[1], 0) if op.code == "SPLIT" else (op.inputs[0], 2)
    rank = em.rank(source)
    axis = int(np.asarray(em.require_const(op, axis_at, "the axis")).reshape(-1)[0]) % rank
    sizes = [em.shape(o)[axis] for o in op.outputs]
    held = em.value(source)
    names = em.node_n(
        "Split",
        [held.name, em.int64(sizes, "split")],
        em.spec(op.outputs[0]).name,
        len(op.outputs),
        axis=to_held_axis(axis, rank, held.nchw),
    )
    for index, name in zip(op.outputs, names, strict=True):
        em.alias(index, Held(name, held.nchw))


def _slice(em: Emitter, op: OpSpec, begin: list[int], end: list[int], step: list[int]) -> None:
    """ONNX Slice of the input over every axis (in TFLite's order), kept in the input's layout
    when the output keeps its rank."""
    rank = len(begin)
    held = em.value(op.inputs[0])
    nchw = held.nchw and em.rank(op.outputs[0]) == rank
    source = em.get(op.inputs[0], nchw)
    order = TO_NCHW if nchw else tuple(range(rank))
    begin, end, step = ([v[a] for a in order] for v in (begin, end, step))
    inputs = [
        source,
        em.int64(begin, "starts"),
        em.int64(end, "ends"),
        em.int64(list(range(rank)), "axes"),
        em.int64(step, "steps"),
    ]
    out_shape = list(em.shape(op.outputs[0]))
    if em.rank(op.outputs[0]) == rank:
        em.output(op, "Slice", inputs, nchw)
        return
    sliced = em.node("Slice", inputs, "sliced")
    em.output(op, "Reshape", [sliced, em.int64(out_shape, "shape")], False)


@translates("SLICE")
def slice_(em: Emitter, op: OpSpec) -> None:
    begin = [int(b) for b in em.require_const(op, 1, "begin")]
    size = [int(s) for s in em.require_const(op, 2, "size")]
    end = [_FAR if s < 0 else b + s for b, s in zip(begin, size, strict=True)]
    _slice(em, op, begin, end, [1] * len(begin))


@translates("STRIDED_SLICE")
def strided_slice(em: Emitter, op: OpSpec) -> None:
    if op.option("ellipsisMask", 0) or op.option("newAxisMask", 0):
        raise em.unsupported(op, "ellipsis_mask or new_axis_mask")
    begin = [int(b) for b in em.require_const(op, 1, "begin")]
    end = [int(e) for e in em.require_const(op, 2, "end")]
    step = [int(s) for s in em.require_const(op, 3, "strides")]
    shrink = op.option("shrinkAxisMask", 0)
    for axis in range(len(begin)):
        bit = 1 << axis
        if op.option("offset", False):
            end[axis] += begin[axis]
        if op.option("beginMask", 0) & bit:
            begin[axis] = -_FAR if step[axis] > 0 else _FAR
        if op.option("endMask", 0) & bit:
            end[axis] = _FAR if step[axis] > 0 else -_FAR
        if shrink & bit:
            end[axis] = begin[axis] + 1 if begin[axis] != -1 else _FAR
            step[axis] = 1
    _slice(em, op, begin, end, step)


@translates("PAD", "PADV2", "MIRROR_PAD")
def pad(em: Emitter, op: OpSpec) -> None:
    pairs = em.require_const(op, 1, "the paddings").astype(np.int64).reshape(-1, 2)
    held = em.value(op.inputs[0])
    if held.nchw:
        pairs = pairs[list(TO_NCHW)]
    inputs = [held.name, em.int64(np.concatenate([pairs[:, 0], pairs[:, 1]]), "pads")]
    attrs: dict[str, object] = {"mode": "constant"}  # written out: pnnx reads only a given mode
    if op.code == "PADV2" and len(op.inputs) > 2:
        fill = em.require_const(op, 2, "the constant value").reshape(-1)[:1]
        inputs.append(em.constant(fill.reshape(()).astype(np.float32), "value"))
    if op.code == "MIRROR_PAD":
        if op.option("mode", 0) != 0:
            raise em.unsupported(op, "SYMMETRIC mirror padding (ONNX has only REFLECT)")
        attrs["mode"] = "reflect"
    em.output(op, "Pad", inputs, held.nchw, **attrs)


@translates("GATHER")
def gather(em: Emitter, op: OpSpec) -> None:
    if op.option("batchDims", 0):
        raise em.unsupported(op, "batch_dims")
    indices = em.as_is(op.inputs[1])
    em.output(op, "Gather", [em.as_is(op.inputs[0]), indices], False, axis=op.option("axis", 0))


@translates("CAST")
def cast(em: Emitter, op: OpSpec) -> None:
    held = em.value(op.inputs[0])
    target = em.spec(op.outputs[0]).dtype.name
    em.output(op, "Cast", [held.name], held.nchw, to=_ONNX_TYPES[target])


@translates("TILE")
def tile(em: Emitter, op: OpSpec) -> None:
    repeats = em.require_const(op, 1, "the multiples").astype(np.int64)
    em.output(op, "Tile", [em.as_is(op.inputs[0]), em.int64(repeats, "repeats")], False)


@translates("BROADCAST_TO")
def broadcast_to(em: Emitter, op: OpSpec) -> None:
    shape = em.require_const(op, 1, "the shape").astype(np.int64)
    em.output(op, "Expand", [em.as_is(op.inputs[0]), em.int64(shape, "shape")], False)


@translates("PACK")
def pack(em: Emitter, op: OpSpec) -> None:
    rank = em.rank(op.outputs[0])
    axis = int(op.option("axis", 0)) % rank
    axes = em.int64([axis], "axes")
    parts = [em.node("Unsqueeze", [em.as_is(i), axes], "unsqueezed") for i in op.inputs]
    em.output(op, "Concat", parts, False, axis=axis)


@translates("UNPACK")
def unpack(em: Emitter, op: OpSpec) -> None:
    rank = em.rank(op.inputs[0])
    axis = int(op.option("axis", 0)) % rank
    count = len(op.outputs)
    sizes = em.int64([1] * count, "split")
    parts = em.node_n("Split", [em.as_is(op.inputs[0]), sizes], "part", count, axis=axis)
    axes = em.int64([axis], "axes")
    for index, part in zip(op.outputs, parts, strict=True):
        name = em.node("Squeeze", [part, axes], em.spec(index).name)
        em.alias(index, Held(name))


@translates("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def depth_space(em: Emitter, op: OpSpec) -> None:
    """TFLite's channel order is ONNX's DCR mode (and SpaceToDepth's only one)."""
    block = int(op.option("blockSize", 1))
    if op.code == "DEPTH_TO_SPACE":
        em.output(op, "DepthToSpace", [em.nchw(op.inputs[0])], True, blocksize=block, mode="DCR")
    else:
        em.output(op, "SpaceToDepth", [em.nchw(op.inputs[0])], True, blocksize=block)


@translates("ARG_MAX", "ARG_MIN")
def arg_extreme(em: Emitter, op: OpSpec) -> None:
    rank = em.rank(op.inputs[0])
    axis = int(np.asarray(em.require_const(op, 1, "the axis")).reshape(-1)[0]) % rank
    onnx_op = "ArgMax" if op.code == "ARG_MAX" else "ArgMin"
    found = em.node(onnx_op, [em.as_is(op.inputs[0])], "index", axis=axis, keepdims=0)
    target = em.spec(op.outputs[0]).dtype.name
    em.output(op, "Cast", [found], False, to=_ONNX_TYPES[target])


@translates("QUANTIZE", "DEQUANTIZE")
def requantize(em: Emitter, op: OpSpec) -> None:
    """DEQUANTIZE of a constant (fp16 or int8 weights) folds to a float32 constant. Between
    activations, the int8 tensors are computed in float: DEQUANTIZE vanishes, and QUANTIZE
    keeps only its saturation (a Clip to the int8 range), not its rounding."""
    source = op.inputs[0]
    array = em.const(source)
    if array is not None:
        em.folded[op.outputs[0]] = np.asarray(array, np.float32)
        return
    em.flag_dequantized(
        "int8 activations computed in float32 and clamped to each tensor's int8 range "
        "(no rounding): the ONNX twin follows the float model the int8 file approximates"
    )
    held = em.value(source)
    em.alias(op.outputs[0], Held(em.saturate(op, op.outputs[0], held.name), held.nchw))
