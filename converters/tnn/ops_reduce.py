"""Translators for the Reduce* ops (TNN ``ReduceLayerParam``: ``keep_dims axis...``)."""

from __future__ import annotations

from edgebench.converters.tnn.context import Context, Layer, axis_index
from edgebench.converters.tnn.onnx_graph import Node


def reduce(node: Node, ctx: Context) -> Layer:
    """onnx2tnn (``OnnxConverterReduce``) prints keepdims then the axes, from the attribute or
    the constant second input; no axes make TNN reduce over every axis (``all_reduce``)."""
    if node.op == "ReduceProd":
        # Checked in real TNN: the X86 kernel starts the product at 0 (every output is 0);
        # the ARM and CPU ones start at 1, but a .tnnproto does not say where it will run.
        raise ctx.unsupported(node, "TNN's X86 ReduceProd returns 0 for every input")
    rank = ctx.rank(node.inputs[0])
    keepdims = int(node.attrs.get("keepdims", 1))
    if "axes" in node.attrs:
        axes = list(node.attrs["axes"])
    elif len(node.inputs) > 1 and node.inputs[1]:
        axes = ctx.require_const(node, 1, "axes").reshape(-1).tolist()
    else:
        axes = []
    if not axes and node.attrs.get("noop_with_empty_axes", 0):
        raise ctx.unsupported(node, "noop_with_empty_axes=1 without axes")
    axes = [axis_index(int(a), rank) for a in axes]
    if not keepdims and len(set(axes)) in (0, rank):
        raise ctx.unsupported(node, "keepdims=0 over every axis (a 0-d result)")
    params = f"{keepdims} " + "".join(f"{a} " for a in axes)
    return Layer(node.op, node.name, node.inputs[:1], node.outputs[:1], params)


TRANSLATORS = {
    op: reduce for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
}
