"""A TFLite model under construction: tensors, constant buffers and operators as plain records,
packed into the flatbuffer at the end.

Operators are kept as records (not schema objects) so that the optimisation passes can rewrite
them; ``serialize`` turns everything into the schema's object API and packs it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .schema import load_schema

# numpy dtype -> TensorType name in the schema.
_TENSOR_TYPES = {
    np.dtype(np.float32): "FLOAT32",
    np.dtype(np.float16): "FLOAT16",
    np.dtype(np.int32): "INT32",
    np.dtype(np.int64): "INT64",
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.int8): "INT8",
    np.dtype(np.uint8): "UINT8",
}
# Codes above this one live only in OperatorCode.builtin_code (the old byte field says 127).
_LAST_DEPRECATED_CODE = 127
FILE_IDENTIFIER = b"TFL3"
_DEDUP_MAX_BYTES = 1 << 16
SIGNATURE_KEY = "serving_default"


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data: np.ndarray | None = None


@dataclass
class Op:
    """One operator: its builtin code name, tensor indices (-1: an absent optional input) and
    its builtin options table by name with the fields to set."""

    code: str
    inputs: list[int]
    outputs: list[int]
    options: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    version: int = 1


class ModelBuilder:
    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.ops: list[Op] = []
        self._names: set[str] = set()
        self._constants: dict[tuple, int] = {}

    def tensor(self, name: str, shape: tuple[int, ...] | list[int], dtype: Any = np.float32) -> int:
        """A new activation tensor; the name is made unique."""
        unique, n = name, 1
        while unique in self._names:
            unique = f"{name}_{n}"
            n += 1
        self._names.add(unique)
        self.tensors.append(Tensor(unique, tuple(int(d) for d in shape), np.dtype(dtype)))
        return len(self.tensors) - 1

    def constant(self, value: np.ndarray, name: str) -> int:
        """A constant tensor; equal constants share one tensor."""
        array = np.asarray(value)
        if not array.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
            array = np.ascontiguousarray(array)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            array = clip_int32(array)
        # Small constants (shapes, axes, scalars, biases) repeat; large weights never do, and
        # hashing megabytes of them would cost more than it saves.
        digest = (
            hashlib.sha1(array.tobytes()).digest()
            if array.nbytes <= _DEDUP_MAX_BYTES
            else id(array)
        )
        key = (array.dtype.str, array.shape, digest)
        if key not in self._constants:
            index = self.tensor(name, array.shape, array.dtype)
            self.tensors[index].data = array
            self._constants[key] = index
        return self._constants[key]

    def op(
        self,
        code: str,
        inputs: list[int],
        outputs: list[int],
        options: str | None = None,
        version: int = 1,
        **fields: Any,
    ) -> Op:
        record = Op(code, list(inputs), list(outputs), options, dict(fields), version)
        self.ops.append(record)
        return record

    def serialize(self, inputs: list[int], outputs: list[int], description: str) -> bytes:
        import flatbuffers

        schema = load_schema()
        used = _used_tensors(self.ops, inputs, outputs)
        new_index = {old: new for new, old in enumerate(used)}
        buffers = [schema.BufferT()]
        tensors = []
        for old in used:
            tensor = self.tensors[old]
            record = schema.TensorT()
            record.name = tensor.name
            record.shape = list(tensor.shape)
            record.type = getattr(schema.TensorType, _TENSOR_TYPES[tensor.dtype])
            record.buffer = 0
            if tensor.data is not None:
                buffer = schema.BufferT()
                buffer.data = tensor.data.reshape(-1).view(np.uint8)
                record.buffer = len(buffers)
                buffers.append(buffer)
            tensors.append(record)

        codes: dict[tuple[str, int], int] = {}
        operators = []
        for op in self.ops:
            key = (op.code, op.version)
            codes.setdefault(key, len(codes))
            record = schema.OperatorT()
            record.opcodeIndex = codes[key]
            record.inputs = [new_index[i] if i >= 0 else -1 for i in op.inputs]
            record.outputs = [new_index[i] for i in op.outputs]
            if op.options:
                options = getattr(schema, op.options + "T")()
                for name, value in op.fields.items():
                    if not hasattr(options, name):
                        raise AttributeError(f"{op.options} has no field {name}")
                    setattr(options, name, value)
                record.builtinOptionsType = getattr(schema.BuiltinOptions, op.options)
                record.builtinOptions = options
            operators.append(record)

        operator_codes = []
        for code, version in codes:
            record = schema.OperatorCodeT()
            number = getattr(schema.BuiltinOperator, code)
            record.builtinCode = number
            record.deprecatedBuiltinCode = min(number, _LAST_DEPRECATED_CODE)
            record.version = version
            operator_codes.append(record)

        subgraph = schema.SubGraphT()
        subgraph.tensors = tensors
        subgraph.inputs = [new_index[i] for i in inputs]
        subgraph.outputs = [new_index[i] for i in outputs]
        subgraph.operators = operators
        subgraph.name = "main"

        signature = schema.SignatureDefT()
        signature.signatureKey = SIGNATURE_KEY
        signature.subgraphIndex = 0
        signature.inputs = [_tensor_map(schema, self.tensors[i].name, new_index[i]) for i in inputs]
        signature.outputs = [
            _tensor_map(schema, self.tensors[i].name, new_index[i]) for i in outputs
        ]

        model = schema.ModelT()
        model.version = 3
        model.description = description
        model.operatorCodes = operator_codes
        model.subgraphs = [subgraph]
        model.buffers = buffers
        model.signatureDefs = [signature]
        # Sized up front: growing the buffer copies everything written so far.
        data_bytes = sum(t.data.nbytes for t in self.tensors if t.data is not None)
        builder = flatbuffers.Builder(data_bytes + (1 << 20))
        builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
        return bytes(builder.Output())


def clip_int32(array: np.ndarray) -> np.ndarray:
    """int64 values (ONNX shapes and indices) as int32, TFLite's index type; INT64_MAX-style
    "to the end" markers become INT32_MAX."""
    info = np.iinfo(np.int32)
    return np.asarray(np.clip(array, info.min, info.max), dtype=np.int32)


def _tensor_map(schema: Any, name: str, index: int) -> Any:
    record = schema.TensorMapT()
    record.name = name
    record.tensorIndex = index
    return record


def _used_tensors(ops: list[Op], inputs: list[int], outputs: list[int]) -> list[int]:
    used = set(inputs) | set(outputs)
    for op in ops:
        used.update(i for i in op.inputs if i >= 0)
        used.update(op.outputs)
    return sorted(used)
