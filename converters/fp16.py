"""An ONNX model in half precision for GPU runtimes that take precision from the graph.

TensorRT 11 has no FP16 builder flag: a network is strongly typed, so an fp16 engine comes from
a graph whose tensors are fp16 (REFERENCE.md section 12). This writes that graph: every float32
weight and constant becomes float16, every ``Cast`` to float32 casts to float16 instead, and
the model keeps its float32 inputs and outputs (a ``Cast`` after each input and before each
output), so the runner feeds and compares exactly what it does for the fp32 model.

Inputs that ONNX requires in float32 whatever the data type (``Resize``'s ``roi`` and
``scales``) keep their float32 constants.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: (op type, input index) slots that take float32 in every opset, whatever the data's type.
FLOAT32_SLOTS = {("Resize", 1), ("Resize", 2), ("Upsample", 1)}
#: Suffix of the tensors the casts introduce.
CAST_SUFFIX = "_fp16"


class Fp16Error(ValueError):
    """The model cannot be written in half precision (one line says why)."""


def to_fp16(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, int]]:
    """The model with fp16 weights and computation and fp32 inputs and outputs; with counts of
    what changed (``initializers``, ``constants``, ``casts``, ``io_casts``)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    if any(attr.type == onnx.AttributeProto.GRAPH for n in graph.node for attr in n.attribute):
        raise Fp16Error("models with control flow (If, Loop, Scan) are not converted to fp16")
    fp32_only = _fp32_only_tensors(graph.node)
    counts = {"initializers": 0, "constants": 0, "casts": 0, "io_casts": 0}
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and init.name not in fp32_only:
            init.CopyFrom(_half(init))
            counts["initializers"] += 1
    for node in graph.node:
        counts["constants"] += _convert_constant(node, fp32_only)
        counts["casts"] += _retarget_cast(node)
    counts["io_casts"] = _cast_inputs(graph) + _cast_outputs(graph)
    # Inferred types of the fp32 graph are wrong now; onnx re-infers them on load.
    del graph.value_info[:]
    return model, counts


def _fp32_only_tensors(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    names = set()
    for node in nodes:
        for index, name in enumerate(node.input):
            if name and (node.op_type, index) in FLOAT32_SLOTS:
                names.add(name)
    return names


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


def _retarget_cast(node: onnx.NodeProto) -> int:
    if node.op_type not in ("Cast", "CastLike", "EyeLike", "RandomNormalLike", "RandomUniformLike"):
        return 0
    for attr in node.attribute:
        if attr.name in ("to", "dtype") and attr.i == TensorProto.FLOAT:
            attr.i = TensorProto.FLOAT16
            return 1
    return 0


def _cast_inputs(graph: onnx.GraphProto) -> int:
    initializers = {i.name for i in graph.initializer}
    casts = []
    for value in graph.input:
        if value.name in initializers or value.type.tensor_type.elem_type != TensorProto.FLOAT:
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
