"""An ONNX model in half precision for GPU runtimes that take precision from the graph.

TensorRT 11 has no FP16 builder flag: a network is strongly typed, so an fp16 engine comes from
a graph whose tensors are fp16 (REFERENCE.md section 12). This writes that graph: every float32
weight and constant becomes float16, every ``Cast`` to float32 casts to float16 instead, and
the model keeps its float32 inputs and outputs (a ``Cast`` after each input and before each
output), so the runner feeds and compares exactly what it does for the fp32 model.

Some operator inputs take float32 but never float16 (``Resize``'s ``scales``,
``NonMaxSuppression``'s boxes, scores and thresholds, a quantizer's scale); the operator schemas
in ``onnx.defs`` say which, at the model's opset. A weight, constant or ``Cast`` that feeds only
such inputs stays float32; any other half tensor that reaches one goes through a ``Cast`` back
to float32 just before it, so the graph passes ``onnx.checker`` with ``full_check=True``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: Suffix of the tensors the casts introduce.
CAST_SUFFIX = "_fp16"
#: Suffix of the float32 copies made for inputs that take no float16.
FLOAT32_SUFFIX = "_fp32"
_FLOAT, _HALF = "tensor(float)", "tensor(float16)"
_DEFAULT_DOMAINS = ("", "ai.onnx")


class Fp16Error(ValueError):
    """The model cannot be written in half precision (one line says why)."""


def to_fp16(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, int]]:
    """The model with fp16 weights and computation and fp32 inputs and outputs; with counts of
    what changed (``initializers``, ``constants``, ``casts``, ``io_casts``)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    if any(attr.type == onnx.AttributeProto.GRAPH for n in graph.node for attr in n.attribute):
        raise Fp16Error("models with control flow (If, Loop, Scan) are not converted to fp16")
    opset = _default_opset(model)
    fp32_only = _fp32_only_tensors(graph, opset)
    counts = {"initializers": 0, "constants": 0, "casts": 0, "io_casts": 0, "float32_casts": 0}
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and init.name not in fp32_only:
            init.CopyFrom(_half(init))
            counts["initializers"] += 1
    for node in graph.node:
        counts["constants"] += _convert_constant(node, fp32_only)
        counts["casts"] += _retarget_cast(node, fp32_only)
    counts["io_casts"] = _cast_inputs(graph, fp32_only) + _cast_outputs(graph)
    # Inferred types of the fp32 graph are wrong now; onnx re-infers them on load.
    del graph.value_info[:]
    counts["float32_casts"] = _cast_back_to_float32(model, opset)
    return model, counts


@cache
def float32_inputs(op_type: str, opset: int) -> tuple[frozenset[int], int | None]:
    """The input indices of an ONNX operator that take float32 but no float16 at ``opset``, read
    from its schema's type constraints; and the index from which a variadic last input repeats
    (None if it does not)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return frozenset(), None
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    slots = frozenset(
        index
        for index, formal in enumerate(schema.inputs)
        if _FLOAT in allowed.get(formal.type_str, {formal.type_str})
        and _HALF not in allowed.get(formal.type_str, {formal.type_str})
    )
    inputs = schema.inputs
    variadic = inputs and inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    return slots, len(inputs) - 1 if variadic else None


def is_float32_input(node: onnx.NodeProto, index: int, opset: int) -> bool:
    """Whether input ``index`` of ``node`` takes float32 but no float16."""
    if node.domain not in _DEFAULT_DOMAINS:
        return False
    slots, variadic_from = float32_inputs(node.op_type, opset)
    if variadic_from is not None:
        index = min(index, variadic_from)
    return index in slots


def _default_opset(model: onnx.ModelProto) -> int:
    versions = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    return versions[0] if versions else onnx.defs.onnx_opset_version()


def _fp32_only_tensors(graph: onnx.GraphProto, opset: int) -> set[str]:
    """Tensors whose every use is an input that takes no float16: they stay float32."""
    float32_uses: set[str] = set()
    other_uses = {o.name for o in graph.output}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name:
                uses = float32_uses if is_float32_input(node, index, opset) else other_uses
                uses.add(name)
    return float32_uses - other_uses


def _cast_back_to_float32(model: onnx.ModelProto, opset: int) -> int:
    """Puts a ``Cast`` to float32 before each input that takes no float16 and is fed a half
    tensor; returns how many. Types come from onnx's inference, repeated until nothing is left
    (a fix can let inference type tensors further on)."""
    graph = model.graph
    count = 0
    for _ in range(len(graph.node) + 1):
        half = _half_tensors(model)
        first_use: dict[str, int] = {}
        for position, node in enumerate(graph.node):
            for index, name in enumerate(node.input):
                if name in half and is_float32_input(node, index, opset):
                    first_use.setdefault(name, position)
                    node.input[index] = name + FLOAT32_SUFFIX
        if not first_use:
            break
        for name, position in sorted(first_use.items(), key=lambda item: -item[1]):
            cast = helper.make_node("Cast", [name], [name + FLOAT32_SUFFIX], to=TensorProto.FLOAT)
            graph.node.insert(position, cast)
        count += len(first_use)
    return count


def _half_tensors(model: onnx.ModelProto) -> set[str]:
    inferred = onnx.shape_inference.infer_shapes(model).graph
    values = [*inferred.input, *inferred.value_info, *inferred.output]
    names = {v.name for v in values if v.type.tensor_type.elem_type == TensorProto.FLOAT16}
    return names | {i.name for i in inferred.initializer if i.data_type == TensorProto.FLOAT16}


def _half(tensor: TensorProto) -> TensorProto:
    values = numpy_helper.to_array(tensor)
    finite = np.abs(values[np.isfinite(values)])
    if finite.size and float(finite.max()) > float(np.finfo(np.float16).max):
        raise Fp16Error(
            f"weight {tensor.name!r} holds {float(finite.max()):.3g}, beyond float16's range"
        )
    return numpy_helper.from_array(values.astype(np.float16), tensor.name)


def _convert_constant(node: onnx.NodeProto, fp32_only: set[str]) -> int:
    if node.op_type not in ("Constant", "ConstantOfShape"):
        return 0
    if node.output[0] in fp32_only:
        return 0
    for attr in node.attribute:
        if attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
            attr.t.CopyFrom(_half(attr.t))
            return 1
        if node.op_type == "Constant" and attr.name in ("value_float", "value_floats"):
            values = [attr.f] if attr.name == "value_float" else list(attr.floats)
            array = np.asarray(values, dtype=np.float16)
            tensor = numpy_helper.from_array(
                array.reshape(()) if attr.name == "value_float" else array
            )
            node.ClearField("attribute")
            node.attribute.append(helper.make_attribute("value", tensor))
            return 1
    return 0


def _retarget_cast(node: onnx.NodeProto, fp32_only: set[str]) -> int:
    if node.op_type not in ("Cast", "CastLike", "EyeLike", "RandomNormalLike", "RandomUniformLike"):
        return 0
    if node.output[0] in fp32_only:
        return 0
    for attr in node.attribute:
        if attr.name in ("to", "dtype") and attr.i == TensorProto.FLOAT:
            attr.i = TensorProto.FLOAT16
            return 1
    return 0


def _cast_inputs(graph: onnx.GraphProto, fp32_only: set[str]) -> int:
    kept = {i.name for i in graph.initializer} | fp32_only
    casts = []
    for value in graph.input:
        if value.name in kept or value.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = value.name + CAST_SUFFIX
        for node in graph.node:
            for index, name in enumerate(node.input):
                if name == value.name:
                    node.input[index] = half
        casts.append(helper.make_node("Cast", [value.name], [half], to=TensorProto.FLOAT16))
    for position, cast in enumerate(casts):
        graph.node.insert(position, cast)
    return len(casts)


def _cast_outputs(graph: onnx.GraphProto) -> int:
    count = 0
    for value in graph.output:
        if value.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = value.name + CAST_SUFFIX
        for node in graph.node:
            for index, name in enumerate(node.output):
                if name == value.name:
                    node.output[index] = half
            for index, name in enumerate(node.input):
                if name == value.name:
                    node.input[index] = half
        graph.node.append(helper.make_node("Cast", [half], [value.name], to=TensorProto.FLOAT))
        count += 1
    return count
