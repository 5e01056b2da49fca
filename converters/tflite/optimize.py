"""Rewrites of the lowered TFLite operators.

* An activation (RELU, RELU6, RELU_N1_TO_1) that is the only reader of the output of an op with
  a ``fusedActivationFunction`` becomes that op's fused activation.
* Two RESHAPEs in a row become one; two TRANSPOSEs in a row become one, or none when they
  cancel.
* Operators whose outputs nobody reads are dropped.

A tensor that is a model output is never bypassed.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import layout
from .model_builder import ModelBuilder, Op

_ACTIVATIONS = {"RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
_FUSES_ACTIVATION = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "DIV": "DivOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
}


def optimize(builder: ModelBuilder, outputs: list[int]) -> None:
    protected = set(outputs)
    _fuse_activations(builder, protected)
    _merge_pairs(builder, protected, "RESHAPE", _merge_reshapes)
    _merge_pairs(builder, protected, "TRANSPOSE", _merge_transposes)
    _drop_dead(builder, protected)


def _readers(ops: list[Op]) -> dict[int, list[int]]:
    readers: dict[int, list[int]] = defaultdict(list)
    for index, op in enumerate(ops):
        for tensor in op.inputs:
            if tensor >= 0:
                readers[tensor].append(index)
    return readers


def _fuse_activations(builder: ModelBuilder, protected: set[int]) -> None:
    readers = _readers(builder.ops)
    producer = {out: i for i, op in enumerate(builder.ops) for out in op.outputs}
    removed: set[int] = set()
    for index, op in enumerate(builder.ops):
        if op.code not in _ACTIVATIONS:
            continue
        source = producer.get(op.inputs[0])
        if source is None or source in removed or op.inputs[0] in protected:
            continue
        first = builder.ops[source]
        if (
            first.code not in _FUSES_ACTIVATION
            or first.fields.get("fusedActivationFunction", 0) != 0
            or len(readers[op.inputs[0]]) != 1
            or len(first.outputs) != 1
        ):
            continue
        first.options = first.options or _FUSES_ACTIVATION[first.code]
        first.fields["fusedActivationFunction"] = _ACTIVATIONS[op.code]
        first.outputs = list(op.outputs)
        removed.add(index)
    builder.ops = [op for i, op in enumerate(builder.ops) if i not in removed]


def _merge_pairs(builder: ModelBuilder, protected: set[int], code: str, merge) -> None:
    """Where an op of ``code`` reads the single-reader output of another, let it read the first
    one's input instead (``merge`` rewrites the second op; None: they cancel)."""
    changed = True
    rounds = 0
    while changed and rounds < 100:
        changed, rounds = False, rounds + 1
        readers = _readers(builder.ops)
        producer = {out: i for i, op in enumerate(builder.ops) for out in op.outputs}
        for op in builder.ops:
            if op.code != code:
                continue
            first_index = producer.get(op.inputs[0])
            if first_index is None:
                continue
            first = builder.ops[first_index]
            middle = op.inputs[0]
            if first.code != code or middle in protected or len(readers[middle]) != 1:
                continue
            merged = merge(builder, first, op)
            if merged is None and op.outputs[0] in protected:
                _as_reshape(builder, op, first.inputs[0])
            elif merged is None:
                for reader in builder.ops:
                    reader.inputs = [
                        first.inputs[0] if t == op.outputs[0] else t for t in reader.inputs
                    ]
                op.code = "_DEAD"
            else:
                op.inputs = [first.inputs[0], *merged]
            changed = True
            break
    builder.ops = [op for op in builder.ops if op.code != "_DEAD"]


def _merge_reshapes(builder: ModelBuilder, first: Op, second: Op) -> list[int] | None:
    source_shape = builder.tensors[first.inputs[0]].shape
    if tuple(second.fields.get("newShape", ())) == tuple(source_shape):
        return None
    return second.inputs[1:]


def _merge_transposes(builder: ModelBuilder, first: Op, second: Op) -> list[int] | None:
    p1 = builder.tensors[first.inputs[1]].data
    p2 = builder.tensors[second.inputs[1]].data
    if p1 is None or p2 is None:
        return [second.inputs[1]]
    perm = layout.compose(p1.tolist(), p2.tolist())
    if layout.is_identity(perm):
        return None
    return [builder.constant(np.asarray(perm, np.int32), "perm")]


def _as_reshape(builder: ModelBuilder, op: Op, source: int) -> None:
    """Turn ``op`` into a RESHAPE of ``source`` to its own output shape (a model output that
    must keep a producer)."""
    shape = builder.tensors[op.outputs[0]].shape
    op.code = "RESHAPE"
    op.inputs = [source, builder.constant(np.asarray(shape, np.int32), "shape")]
    op.options, op.fields = "ReshapeOptions", {"newShape": list(shape)}


def _drop_dead(builder: ModelBuilder, protected: set[int]) -> None:
    while True:
        read = {t for op in builder.ops for t in op.inputs} | protected
        kept = [op for op in builder.ops if any(out in read for out in op.outputs)]
        if len(kept) == len(builder.ops):
            return
        builder.ops = kept
