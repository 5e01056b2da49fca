"""Fold what a fixed input shape makes constant, as onnxsim does, before an own converter lowers
a model.

Exported graphs compute reshape targets at run time: ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape``. Once every input has a concrete shape, each ``Shape`` (and ``Size``) of a tensor whose
shape inference knows is a constant, and so is every node whose inputs are all constants. Those
nodes are evaluated here with ONNX's own NumPy reference implementation, replaced by
initializers, and shapes are inferred again, so that the converters see plain constants and static
shapes.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

from .base import ConversionError

log = logging.getLogger(__name__)

# Ops whose result is not a function of their inputs, or that hold subgraphs.
_NEVER_FOLD = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "If",
        "Loop",
        "Scan",
        "SequenceConstruct",
    }
)
# Larger constants are left for the converter (a folded big tensor only costs file size).
MAX_FOLDED_ELEMENTS = 1 << 24


def fix_input_shapes(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> None:
    """Write concrete input shapes into the model in place; a dynamic batch becomes 1.

    Raises ConversionError naming the input for a shape it cannot fix."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    real = [v for v in graph.input if v.name not in initializers]
    unknown = sorted(set(input_shapes) - {v.name for v in real})
    if unknown:
        raise ConversionError("failed", f"input_shapes names unknown inputs: {', '.join(unknown)}")
    for value in real:
        tensor_type = value.type.tensor_type
        if value.name in input_shapes:
            dims = [int(d) for d in input_shapes[value.name]]
        elif not tensor_type.HasField("shape"):
            raise ConversionError(
                "failed", f"input {value.name!r} has no shape; give it (--shape NAME=1,3,H,W)"
            )
        else:
            dims = []
            for index, dim in enumerate(tensor_type.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    dims.append(dim.dim_value)
                elif index == 0:
                    dims.append(1)
                else:
                    raise ConversionError(
                        "failed",
                        f"input {value.name!r} has a dynamic dimension {index}; "
                        "give its shape (--shape NAME=1,3,H,W)",
                    )
        del tensor_type.shape.dim[:]
        for dim in dims:
            tensor_type.shape.dim.add().dim_value = dim


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    del model.graph.value_info[:]
    for output in model.graph.output:
        # Exporters write -1 or 0 for dynamic output sizes (paddle2onnx does); inference
        # would keep them. Declared sizes that are not positive are dropped and inferred.
        dims = output.type.tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value <= 0 for d in dims):
            output.type.tensor_type.ClearField("shape")
    try:
        return shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:  # onnx raises several unrelated types here
        raise ConversionError("failed", f"ONNX shape inference failed: {exc}") from exc


def fold_model(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> onnx.ModelProto:
    """A copy of ``model`` with fixed input shapes, shape subgraphs and constant nodes folded,
    Identity/Dropout nodes removed, and shapes inferred."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    fix_input_shapes(copy, input_shapes)
    inferred = infer_shapes(copy)
    folded = _fold_graph(inferred)
    return infer_shapes(folded) if folded is not inferred else inferred


def _static_shapes(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor_type = value.type.tensor_type
        if not value.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
            continue
        dims = tensor_type.shape.dim
        if all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    return shapes


def _opsets(model: onnx.ModelProto) -> list[onnx.OperatorSetIdProto]:
    return list(model.opset_import)


def _fold_graph(model: onnx.ModelProto) -> onnx.ModelProto:
    graph = model.graph
    shapes = _static_shapes(graph)
    values: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    graph_outputs = {o.name for o in graph.output}
    renamed: dict[str, str] = {}  # output of a removed pass-through node -> its input
    # Names inside If/Loop bodies are not rewritten, so with subgraphs no node is bypassed.
    has_subgraphs = any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for node in graph.node
        for a in node.attribute
    )
    kept: list[onnx.NodeProto] = []
    changed = False
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
        result = _fold_node(node, values, shapes, model)
        if result is not None:
            for name, value in zip(node.output, result, strict=False):
                values[name] = value
            changed = True
            continue
        if (
            not has_subgraphs
            and node.op_type in ("Identity", "Dropout")
            and node.input[0] not in graph_outputs
            and node.output[0] not in graph_outputs
            and not node.output[1:]
        ):
            renamed[node.output[0]] = node.input[0]
            changed = True
            continue
        kept.append(node)
    if not changed:
        return model
    used = _names_read(kept) | graph_outputs
    result = onnx.ModelProto()
    result.CopyFrom(model)  # keeps functions, metadata and opsets
    new_graph = result.graph
    del new_graph.node[:], new_graph.initializer[:], new_graph.value_info[:]
    new_graph.node.extend(kept)
    inputs = [v for v in graph.input if v.name not in values]
    del new_graph.input[:]
    new_graph.input.extend(inputs)
    new_graph.initializer.extend(_tensor(name, values[name]) for name in values if name in used)
    for output in graph.output:
        if output.name in values:  # a constant graph output still needs a producing node
            result.graph.initializer.remove(
                next(t for t in result.graph.initializer if t.name == output.name)
            )
            hidden = output.name + "__folded"
            result.graph.initializer.append(_tensor(hidden, values[output.name]))
            result.graph.node.append(helper.make_node("Identity", [hidden], [output.name]))
    return result


def _names_read(nodes: list[onnx.NodeProto]) -> set[str]:
    """Every name the nodes read, including inside If/Loop/Scan bodies."""
    names: set[str] = set()
    for node in nodes:
        names.update(node.input)
        for attr in node.attribute:
            graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in graphs:
                names |= _names_read(list(sub.node))
    return names


def _tensor(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _fold_node(
    node: onnx.NodeProto,
    values: dict[str, np.ndarray],
    shapes: dict[str, tuple[int, ...]],
    model: onnx.ModelProto,
) -> list[np.ndarray] | None:
    """The node's outputs when they are constants, else None."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _NEVER_FOLD:
        return None
    if node.op_type == "Constant":
        return _run(node, [], model)
    if node.op_type in ("Shape", "Size") and node.input[0] in shapes:
        shape = np.asarray(shapes[node.input[0]], dtype=np.int64)
        if node.op_type == "Size":
            return [np.asarray(int(np.prod(shape)), dtype=np.int64)]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return [shape[start:end]]
    inputs = [name for name in node.input if name]
    if not inputs or any(name not in values for name in inputs):
        return None
    if sum(values[name].size for name in inputs) > MAX_FOLDED_ELEMENTS:
        return None
    return _run(node, [values[name] if name else None for name in node.input], model)


def _run(
    node: onnx.NodeProto, inputs: list[np.ndarray | None], model: onnx.ModelProto
) -> list[np.ndarray] | None:
    names = [name for name in node.input]
    value_infos = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), None)
        for name, value in zip(names, inputs, strict=True)
        if name and value is not None
    ]
    graph = helper.make_graph(
        [node],
        "fold",
        value_infos,
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output],
    )
    one = helper.make_model(graph, opset_imports=_opsets(model))
    feeds = {name: value for name, value in zip(names, inputs, strict=True) if name}
    try:
        results = ReferenceEvaluator(one).run(None, feeds)
    except Exception as exc:  # a node the reference cannot evaluate stays in the graph
        log.debug("not folding %s (%s): %s", node.name, node.op_type, exc)
        return None
    arrays = [np.asarray(r) for r in results]
    if any(a.dtype == object or a.size > MAX_FOLDED_ELEMENTS for a in arrays):
        return None
    return arrays
