"""ONNX node -> TNN layer dispatch."""

from __future__ import annotations

from collections.abc import Callable

from edgebench.converters.base import unsupported_op
from edgebench.converters.fusion import PASS_THROUGH
from edgebench.converters.tnn import (
    ops_elementwise,
    ops_nn,
    ops_reduce,
    ops_resize,
    ops_tensor,
)
from edgebench.converters.tnn.context import Context, Layer
from edgebench.converters.tnn.onnx_graph import TARGET, Node

TRANSLATORS: dict[str, Callable[[Node, Context], Layer]] = {
    **ops_nn.TRANSLATORS,
    **ops_elementwise.TRANSLATORS,
    **ops_tensor.TRANSLATORS,
    **ops_reduce.TRANSLATORS,
    **ops_resize.TRANSLATORS,
}

# Node types only the fusion passes create; an ONNX model cannot ask for them directly.
_FUSED_ONLY = frozenset({"Swish", "GELU"})


def check_supported(nodes: list[Node]) -> None:
    """Fail on the first node whose op type has no translation at all."""
    for node in nodes:
        known = node.op in TRANSLATORS and node.op not in _FUSED_ONLY
        if not known and node.op not in PASS_THROUGH:
            raise unsupported_op(node.op, node.name, TARGET)


def translate(node: Node, ctx: Context) -> Layer:
    translator = TRANSLATORS.get(node.op)
    if translator is None:
        raise unsupported_op(node.op, node.name, TARGET)
    return translator(node, ctx)
