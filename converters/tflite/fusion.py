"""ONNX-level rewrites before lowering.

The passes shared with the TNN writer come first (``converters/fusion.py``: Identity/Dropout
removal, BatchNormalization folded into the Conv before it, x*sigmoid(x) -> Swish, erf-GELU ->
GELU, x*HardSigmoid(x) -> HardSwish with its alpha and beta, x*Clip(x+3, 0, 6)/6 -> HardSwish).
Then TFLite's own: MatMul + a
constant bias Add -> one FULLY_CONNECTED.
"""

from __future__ import annotations

from edgebench.converters.fusion import fuse_graph, fuse_hard_swish, fuse_relu6_hard_swish
from edgebench.converters.graph import OnnxGraph


def fuse(graph: OnnxGraph) -> None:
    fuse_graph(graph)
    fuse_hard_swish(graph)
    fuse_relu6_hard_swish(graph)
    _fuse_matmul_bias(graph)


def _users(graph: OnnxGraph) -> dict[str, list[int]]:
    users: dict[str, list[int]] = {}
    for index, node in enumerate(graph.nodes):
        for name in node.inputs:
            users.setdefault(name, []).append(index)
    for name in graph.outputs:
        users.setdefault(name, []).append(-1)
    return users


def _fuse_matmul_bias(graph: OnnxGraph) -> None:
    users = _users(graph)
    removed: set[int] = set()
    for node in graph.nodes:
        weight = graph.constants.get(node.inputs[1]) if node.op == "MatMul" else None
        if weight is None or weight.ndim != 2 or node.inputs[0] in graph.constants:
            continue
        following = users.get(node.outputs[0], [])
        if len(following) != 1 or following[0] < 0:
            continue
        add = graph.nodes[following[0]]
        if add.op != "Add":
            continue
        other = [n for n in add.inputs if n != node.outputs[0]]
        bias = graph.constants.get(other[0]) if len(other) == 1 else None
        if bias is None or bias.size != weight.shape[1] or bias.shape[-1] != weight.shape[1]:
            continue
        vector = f"{other[0]}::vector"
        graph.constants[vector] = bias.reshape(-1)
        node.inputs = [node.inputs[0], node.inputs[1], vector]
        node.outputs = list(add.outputs)
        removed.add(following[0])
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]
