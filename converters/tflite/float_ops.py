"""Which operators of a .tflite file compute in floating point: the fp32 fallbacks of an int8
file written by any converter (edgebench's writer lists its own; onnx2tf's are read back)."""

from __future__ import annotations

from .schema import load_schema

#: Operators that only move values across the int8 / float boundary.
_BOUNDARY = {"QUANTIZE", "DEQUANTIZE"}


def float_op_types(flatbuffer: bytes) -> list[str]:
    """Sorted op type names that read or write a float32 tensor computed at run time."""
    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(flatbuffer, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    float32 = schema.TensorType.FLOAT32
    found: set[str] = set()
    for graph in model.subgraphs:
        for op in graph.operators:
            code = model.operatorCodes[op.opcodeIndex]
            name = names.get(max(code.builtinCode, code.deprecatedBuiltinCode), "CUSTOM")
            if name in _BOUNDARY:
                continue
            tensors = [graph.tensors[i] for i in [*op.inputs, *op.outputs] if i >= 0]
            computed = [t for t in tensors if _empty(model.buffers[t.buffer].data)]
            if any(t.type == float32 for t in computed):
                found.add(name)
    return sorted(found)


def _empty(data: object) -> bool:
    """A tensor whose buffer holds no bytes is computed at run time, not a constant."""
    return data is None or len(data) == 0  # type: ignore[arg-type]  # data is sized when not None
