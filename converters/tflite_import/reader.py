"""A .tflite file as plain records: tensors (with their constant data and quantization) and
operators (builtin code name, tensor indices, options object), read with the schema classes of
the ai-edge-litert wheel (``converters/tflite/schema.py``)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.errors import UserError

from ..tflite.model_builder import FILE_IDENTIFIER
from ..tflite.schema import INSTALL_HINT, load_schema

# TensorType name -> numpy dtype (names, so that the schema's numbering is looked up, not copied).
_NUMPY_TYPES = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "FLOAT64": np.float64,
    "INT32": np.int32,
    "INT64": np.int64,
    "INT16": np.int16,
    "INT8": np.int8,
    "UINT8": np.uint8,
    "BOOL": np.bool_,
}


@dataclass
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or along ``axis``."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int


@dataclass
class TensorSpec:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data: np.ndarray | None
    quantization: Quantization | None


@dataclass
class OpSpec:
    index: int
    code: str
    custom_code: str
    inputs: list[int]
    outputs: list[int]
    options: Any
    custom_options: bytes = b""

    @property
    def kind(self) -> str:
        """The translator's key: the builtin code, or ``CUSTOM:name`` for a custom op."""
        return f"CUSTOM:{self.custom_code}" if self.code == "CUSTOM" else self.code

    def option(self, field: str, default: Any = None) -> Any:
        return getattr(self.options, field, default) if self.options is not None else default


@dataclass
class TfliteGraph:
    path: Path
    tensors: list[TensorSpec]
    ops: list[OpSpec]
    inputs: list[int]
    outputs: list[int]


def read_tflite(path: Path) -> TfliteGraph:
    """The first subgraph of ``path``; a missing, corrupt or truncated file is a UserError."""
    try:
        schema = load_schema()
    except ImportError as exc:
        raise UserError(f"{path.name}: reading .tflite needs {INSTALL_HINT}") from exc
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the file ({exc.strerror}); check the path") from exc
    if len(raw) < 8 or raw[4:8] != FILE_IDENTIFIER:
        raise UserError(
            f"{path.name}: not a .tflite flatbuffer (no {FILE_IDENTIFIER.decode()} identifier); "
            "pass a TensorFlow Lite model file"
        )
    try:
        model = schema.ModelT.InitFromPackedBuf(raw, 0)
        return _graph(schema, model, raw, path)
    except UserError:
        raise
    except Exception as exc:  # any decoding failure of a damaged flatbuffer
        if isinstance(exc, struct.error):
            why = f"its tables point past its {len(raw)} bytes"
        else:
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise UserError(
            f"{path.name}: the .tflite file is corrupt or truncated ({why}); "
            "download or export it again"
        ) from exc


def _graph(schema: Any, model: Any, raw: bytes, path: Path) -> TfliteGraph:
    if not model.subgraphs:
        raise UserError(f"{path.name}: the .tflite file has no subgraph; export it again")
    type_names = _names(schema.TensorType)
    op_names = _names(schema.BuiltinOperator)
    subgraph = model.subgraphs[0]
    tensors = []
    for index, tensor in enumerate(subgraph.tensors or []):
        type_name = type_names.get(tensor.type, str(tensor.type))
        if type_name not in _NUMPY_TYPES:
            raise UserError(
                f"{path.name}: tensor {index} ({_text(tensor.name)!r}) has type {type_name}, "
                "which edgebench's .tflite reader does not read"
            )
        if tensor.sparsity is not None:
            raise UserError(
                f"{path.name}: tensor {index} ({_text(tensor.name)!r}) is stored sparse, which "
                "edgebench's .tflite reader does not read; export the model with dense weights"
            )
        dtype = np.dtype(_NUMPY_TYPES[type_name])
        shape = tuple(int(d) for d in (tensor.shape if tensor.shape is not None else []))
        data = _data(model.buffers[tensor.buffer], raw, dtype, shape)
        tensors.append(
            TensorSpec(index, _text(tensor.name), shape, dtype, data, _quantization(tensor))
        )
    ops = []
    for index, op in enumerate(subgraph.operators or []):
        code = model.operatorCodes[op.opcodeIndex]
        number = max(code.builtinCode, code.deprecatedBuiltinCode)
        ops.append(
            OpSpec(
                index,
                op_names.get(number, f"#{number}"),
                _text(code.customCode),
                [int(i) for i in (op.inputs if op.inputs is not None else [])],
                [int(i) for i in (op.outputs if op.outputs is not None else [])],
                op.builtinOptions,
                bytes(np.asarray(op.customOptions, np.uint8))
                if op.customOptions is not None
                else b"",
            )
        )
    inputs = [int(i) for i in subgraph.inputs]
    outputs = [int(i) for i in subgraph.outputs]
    return TfliteGraph(path, tensors, ops, inputs, outputs)


def _names(enum: Any) -> dict[int, str]:
    return {v: k for k, v in vars(enum).items() if not k.startswith("_")}


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _data(buffer: Any, raw: bytes, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray | None:
    """The constant behind a tensor, or None for one computed at run time. Buffers of files
    over 2 GB live after the flatbuffer, at ``offset``."""
    if buffer.data is not None and len(buffer.data):
        payload = np.asarray(buffer.data, dtype=np.uint8).tobytes()
    elif getattr(buffer, "offset", 0) > 1 and buffer.size:
        payload = raw[buffer.offset : buffer.offset + buffer.size]
    else:
        return None
    return np.frombuffer(payload, dtype=dtype).reshape(shape).copy()


def _quantization(tensor: Any) -> Quantization | None:
    params = tensor.quantization
    if params is None or params.scale is None or len(params.scale) == 0:
        return None
    scale = np.asarray(params.scale, dtype=np.float32)
    zero = params.zeroPoint
    zero_point = np.zeros(scale.shape, np.int64) if zero is None else np.asarray(zero, np.int64)
    return Quantization(scale, zero_point, int(params.quantizedDimension))
