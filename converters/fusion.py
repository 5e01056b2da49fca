"""Graph rewrites done before translation by edgebench's own converters (TNN and TFLite), each
one also done by TNN's onnx2tnn.

* Identity and Dropout are removed (``onnx2tnn_remove_identity.cc``, ``..._dropout.cc``).
* Conv + BatchNormalization -> Convolution with folded weights, when the Conv output feeds
  only the BatchNormalization (``onnx2tnn_fuse_conv.cc``).
* x * Sigmoid(x) -> Swish (``onnx2tnn_fuse_swish.cc``).
* Div(sqrt 2) - Erf - Add(1) - Mul(x) - Mul(0.5) -> GELU (``onnx2tnn_fuse_gelu.cc``). TNN's
  ARM backend has GELU but no Erf, so the fusion is what lets ViTs run on phones.

``fuse_graph`` runs these (the TFLite writer reuses them). ``fuse_hard_swish`` is TNN's alone:
x * HardSigmoid(x) -> HardSwish with the HardSigmoid's alpha and beta, the form paddle2onnx
exports hardswish in (``onnx2tnn_fuse_hard_swish.cc``); TNN's HardSwish takes both as params.

Matching is by data flow, not by node order as in onnx2tnn, and an intermediate value that
is a graph output or has a second consumer blocks a fusion.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from edgebench.converters.base import ConversionError
from edgebench.converters.graph import Node, OnnxGraph

_GRAPH_OUTPUT = -1
# Ops that only forward their first input.
PASS_THROUGH = frozenset({"Identity", "Dropout"})


def fuse_graph(graph: OnnxGraph) -> None:
    _remove_pass_through(graph)
    _fold_batchnorm(graph)
    _fuse_self_gate(graph, "Sigmoid", "Swish")
    _fuse_gelu(graph)


def _consumers(graph: OnnxGraph) -> dict[str, list[int]]:
    result: dict[str, list[int]] = defaultdict(list)
    for index, node in enumerate(graph.nodes):
        for name in node.inputs:
            result[name].append(index)
    for name in graph.outputs:
        result[name].append(_GRAPH_OUTPUT)
    return result


def _producers(graph: OnnxGraph) -> dict[str, int]:
    return {out: i for i, node in enumerate(graph.nodes) for out in node.outputs}


def _only_consumer(consumers: dict[str, list[int]], name: str) -> int | None:
    users = consumers.get(name, [])
    return users[0] if len(users) == 1 and users[0] != _GRAPH_OUTPUT else None


def _scalar(graph: OnnxGraph, name: str) -> float | None:
    value = graph.constants.get(name)
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.reshape(-1)[0])


def _remove_pass_through(graph: OnnxGraph) -> None:
    consumers = _consumers(graph)
    source: dict[str, str] = {}
    kept = []
    for node in graph.nodes:
        node.inputs = [source.get(name, name) for name in node.inputs]
        if node.op not in PASS_THROUGH:
            kept.append(node)
            continue
        if any(consumers.get(extra) for extra in node.outputs[1:] if extra):
            raise ConversionError("failed", f"Dropout mask of {node.name!r} is used")
        source[node.outputs[0]] = node.inputs[0]
    graph.nodes = kept
    for output in graph.outputs:
        if output not in source:
            continue
        # A graph output behind an Identity: the producing layer takes the output's name.
        original = source[output]
        taken = {i.name for i in graph.inputs} | set(graph.outputs) | set(graph.constants)
        if original in taken:
            raise ConversionError("failed", f"graph output {output!r} only repeats {original!r}")
        for node in graph.nodes:
            node.inputs = [output if n == original else n for n in node.inputs]
            node.outputs = [output if n == original else n for n in node.outputs]


def _fold_batchnorm(graph: OnnxGraph) -> None:
    consumers = _consumers(graph)
    producers = _producers(graph)
    removed: set[int] = set()
    for bn_index, bn in enumerate(graph.nodes):
        if bn.op != "BatchNormalization" or len([o for o in bn.outputs if o]) != 1:
            continue
        conv_index = producers.get(bn.inputs[0])
        if conv_index is None or _only_consumer(consumers, bn.inputs[0]) != bn_index:
            continue
        conv = graph.nodes[conv_index]
        params = [graph.constants.get(name) for name in bn.inputs[1:5]]
        weight = graph.constants.get(conv.inputs[1]) if conv.op == "Conv" else None
        bias_name = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
        bias = graph.constants.get(bias_name) if bias_name else np.zeros(0, np.float32)
        if weight is None or weight.ndim != 4 or bias is None or any(p is None for p in params):
            continue
        gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)
        epsilon = float(np.float32(bn.attrs.get("epsilon", 1e-5)))
        # Same arithmetic as onnx2tnn: slope and shift in double, applied in float.
        sqrt_var = np.sqrt(var + epsilon)
        slope = (gamma / sqrt_var).astype(np.float32)
        shift = (beta - gamma * mean / sqrt_var).astype(np.float32)
        if bias.size == 0:
            bias = np.zeros(weight.shape[0], np.float32)
        new_weight = weight.astype(np.float32) * slope[:, None, None, None]
        new_bias = bias.astype(np.float32) * slope + shift
        weight_name = f"{conv.name}::folded_weight"
        new_bias_name = f"{conv.name}::folded_bias"
        graph.constants[weight_name] = new_weight
        graph.constants[new_bias_name] = new_bias
        graph.nodes[conv_index] = Node(
            "Conv",
            conv.name,
            [conv.inputs[0], weight_name, new_bias_name],
            [bn.outputs[0]],
            dict(conv.attrs),
        )
        removed.add(bn_index)
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def fuse_hard_swish(graph: OnnxGraph) -> None:
    _fuse_self_gate(graph, "HardSigmoid", "HardSwish")


def _fuse_self_gate(graph: OnnxGraph, gate_op: str, fused_op: str) -> None:
    """x * gate(x) -> fused(x); a HardSigmoid gate's alpha and beta go with it."""
    consumers = _consumers(graph)
    removed: set[int] = set()
    for gate_index, gate in enumerate(graph.nodes):
        mul_index = _only_consumer(consumers, gate.outputs[0]) if gate.op == gate_op else None
        if mul_index is None:
            continue
        mul = graph.nodes[mul_index]
        if mul.op != "Mul" or sorted(mul.inputs) != sorted([gate.inputs[0], gate.outputs[0]]):
            continue
        attrs = {}
        if gate.op == "HardSigmoid":  # ONNX HardSigmoid's defaults, not HardSwish's
            attrs = {"alpha": gate.attrs.get("alpha", 0.2), "beta": gate.attrs.get("beta", 0.5)}
        graph.nodes[mul_index] = Node(
            fused_op, mul.name, [gate.inputs[0]], list(mul.outputs), attrs
        )
        removed.add(gate_index)
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def _fuse_gelu(graph: OnnxGraph) -> None:
    consumers = _consumers(graph)
    removed: set[int] = set()
    for div_index, div in enumerate(graph.nodes):
        chain = _gelu_chain(graph, consumers, div_index, div)
        if chain is None:
            continue
        *inner, last = chain
        final = graph.nodes[last]
        graph.nodes[last] = Node(
            "GELU", final.name, [div.inputs[0]], list(final.outputs), {"approximation": 0}
        )
        removed.update([div_index, *inner])
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def _gelu_chain(
    graph: OnnxGraph, consumers: dict[str, list[int]], div_index: int, div: Node
) -> list[int] | None:
    """Indices of Erf, Add, Mul, Mul after ``div`` when they form erf-GELU, else None."""
    if div.op != "Div" or len(div.inputs) != 2:
        return None
    x = div.inputs[0]
    divisor = _scalar(graph, div.inputs[1])
    if divisor is None or abs(divisor - np.sqrt(2.0)) > 1e-6:
        return None
    steps = []
    current = div.outputs[0]
    for op in ("Erf", "Add", "Mul", "Mul"):
        index = _only_consumer(consumers, current)
        if index is None or graph.nodes[index].op != op:
            return None
        steps.append(index)
        current = graph.nodes[index].outputs[0]
    erf, add, mul_x, mul_half = (graph.nodes[i] for i in steps)
    add_other = [n for n in add.inputs if n != erf.outputs[0]]
    half_other = [n for n in mul_half.inputs if n != mul_x.outputs[0]]
    if (
        len(add_other) != 1
        or _scalar(graph, add_other[0]) != 1.0
        or sorted(mul_x.inputs) != sorted([x, add.outputs[0]])
        or len(half_other) != 1
        or _scalar(graph, half_other[0]) != 0.5
    ):
        return None
    return steps


def fuse_relu6_hard_swish(graph: OnnxGraph) -> None:
    """x * Clip(x + 3, 0, 6) / 6 -> HardSwish: paddle2onnx's hardswish (PP-OCR, MobileNetV3)."""
    consumers = _consumers(graph)
    removed: set[int] = set()
    for add_index, add in enumerate(graph.nodes):
        chain = _relu6_hard_swish_chain(graph, consumers, add)
        if chain is None:
            continue
        clip_index, mul_index, div_index = chain
        last = graph.nodes[div_index]
        graph.nodes[div_index] = Node("HardSwish", last.name, [add.inputs[0]], list(last.outputs))
        removed.update([add_index, clip_index, mul_index])
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def _clip_bounds(graph: OnnxGraph, clip: Node) -> tuple[float | None, float | None]:
    if "min" in clip.attrs or "max" in clip.attrs:  # opset < 11
        return clip.attrs.get("min"), clip.attrs.get("max")
    names = [*clip.inputs[1:], "", ""][:2]
    low, high = (_scalar(graph, name) if name else None for name in names)
    return low, high


def _relu6_hard_swish_chain(
    graph: OnnxGraph, consumers: dict[str, list[int]], add: Node
) -> tuple[int, int, int] | None:
    """Indices of Clip, Mul, Div after ``add`` when they compute hardswish of its input."""
    if add.op != "Add" or len(add.inputs) != 2 or _scalar(graph, add.inputs[1]) != 3.0:
        return None
    x = add.inputs[0]
    clip_index = _only_consumer(consumers, add.outputs[0])
    if clip_index is None or graph.nodes[clip_index].op != "Clip":
        return None
    clip = graph.nodes[clip_index]
    if tuple(float(b) if b is not None else None for b in _clip_bounds(graph, clip)) != (0, 6):
        return None
    mul_index = _only_consumer(consumers, clip.outputs[0])
    if mul_index is None:
        return None
    mul = graph.nodes[mul_index]
    if mul.op != "Mul" or sorted(mul.inputs) != sorted([x, clip.outputs[0]]):
        return None
    div_index = _only_consumer(consumers, mul.outputs[0])
    if div_index is None:
        return None
    div = graph.nodes[div_index]
    if div.op != "Div" or div.inputs[0] != mul.outputs[0] or _scalar(graph, div.inputs[1]) != 6.0:
        return None
    return clip_index, mul_index, div_index
