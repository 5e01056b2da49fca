"""ONNX model -> the text of a ``.tnnproto`` and the bytes of a ``.tnnmodel``.

Layout (TNN ``model_interpreter.cc`` reads it, onnx2tnn ``onnx2tnn.cc`` /
``onnx2tnn_model.cc`` writes it): every proto line is a quoted, comma-terminated record:

1. ``"1 <blob count> 1 4206624772 ,"`` (the magic number selects the v2 input syntax)
2. inputs ``"name <rank> dims... <data type> : name ... ,"``
3. every blob name, sorted
4. output names
5. ``" <layer count> ,"``
6. one line per layer: ``"Type name <n in> <n out> inputs... outputs... params,"``

The model file is the magic, the count of layers with a resource, each resource (int 0,
type string and layer name, then what that layer's interpreter reads), and the constant map
(magic, count, then name + raw buffer for every constant blob a layer reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from edgebench.converters.base import ConversionError
from edgebench.converters.fusion import fuse_graph, fuse_hard_swish
from edgebench.converters.tnn.binary import MAGIC_V2, BinaryWriter
from edgebench.converters.tnn.context import Context, Layer, as_tnn_tensor
from edgebench.converters.tnn.onnx_graph import TARGET, OnnxGraph, load_graph
from edgebench.converters.tnn.ops import check_supported, translate

# ONNX elem_type -> TNN DataType for inputs, as onnx2tnn's GetTnnDataTypeFromOnnx maps them.
_INPUT_TYPES = {1: 0, 11: 0, 10: 1, 9: 2, 2: 2, 3: 2, 6: 3, 7: 3, 12: 3, 13: 3, 16: 4}


@dataclass(frozen=True)
class TnnFiles:
    proto: str
    model: bytes


def convert_model(
    model: onnx.ModelProto,
    input_shapes: dict[str, list[int]] | None = None,
    precision: str = "fp32",
) -> TnnFiles:
    graph = load_graph(model, dict(input_shapes or {}))
    check_supported(graph.nodes)
    fuse_graph(graph)
    fuse_hard_swish(graph)
    ctx = Context(graph, precision)
    layers = [translate(node, ctx) for node in graph.nodes]
    produced = {name for layer in layers for name in layer.outputs}
    missing = [name for name in graph.outputs if name not in produced]
    if missing:
        raise ConversionError("failed", f"{TARGET}: no layer computes output {missing[0]!r}")
    return TnnFiles(_proto_text(graph, layers), _model_bytes(layers, ctx))


def _proto_text(graph: OnnxGraph, layers: list[Layer]) -> str:
    constants = graph.constants
    used = {name for layer in layers for name in layer.inputs}
    inputs = [i for i in graph.inputs if i.name in used]
    blobs = {i.name for i in inputs}
    blobs.update(n for layer in layers for n in [*layer.inputs, *layer.outputs])
    blobs.difference_update(constants)

    input_parts = []
    for value in inputs:
        if value.elem_type not in _INPUT_TYPES:
            raise ConversionError("failed", f"{TARGET}: input {value.name!r} has an unknown type")
        dims = "".join(f"{d} " for d in value.dims)
        input_parts.append(f"{value.name} {len(value.dims)} {dims}{_INPUT_TYPES[value.elem_type]} ")
    lines = [
        f'"1 {len(blobs)} 1 {MAGIC_V2} ,"',
        '"' + ": ".join(input_parts) + ',"',
        '" ' + "".join(f"{b} " for b in sorted(blobs)) + ',"',
        '"' + "".join(f"{o} " for o in graph.outputs) + ',"',
        f'" {len(layers)} ,"',
    ]
    for layer in layers:
        names = "".join(f"{n} " for n in [*layer.inputs, *layer.outputs])
        head = f"{layer.type} {layer.name} {len(layer.inputs)} {len(layer.outputs)} "
        lines.append(f'"{head}{names}{layer.params},"')
    return "\n".join(lines) + "\n"


def _model_bytes(layers: list[Layer], ctx: Context) -> bytes:
    writer = BinaryWriter()
    writer.int32(MAGIC_V2)
    with_resource = [layer for layer in layers if layer.resource is not None]
    writer.int32(len(with_resource))
    for layer in with_resource:
        # Type 0 makes TNN take the layer type from the string that follows.
        writer.int32(0)
        writer.string(layer.type)
        writer.string(layer.name)
        for item in layer.resource or []:
            if isinstance(item, np.ndarray | np.generic):
                writer.raw(np.asarray(item))
            elif isinstance(item, str):
                writer.string(item)
            else:
                writer.int32(int(item))
    names = sorted({name for layer in layers for name in layer.constant_inputs})
    writer.int32(MAGIC_V2)
    writer.int32(len(names))
    for name in names:
        value = ctx.graph.constants[name]
        writer.string(name)
        writer.raw(ctx.weight(value) if value.dtype.kind == "f" else as_tnn_tensor(value))
    return writer.getvalue()
