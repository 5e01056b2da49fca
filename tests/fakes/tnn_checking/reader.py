"""Read a ``.tnnproto`` + ``.tnnmodel`` pair into plain records.

Written from TNN's loader (``source/tnn/interpreter/tnn/model_interpreter.cc``, the layer
interpreters and ``objseri.h``) and shares no code with the writer, so reading back what the
writer produced is a real check of the bytes. Both the v1 (0xFABC0002) and v2 (0xFABC0004)
layouts are accepted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fakes.tnn_checking.reader_params import parse_params

MAGIC_V1 = 0x0FABC0002
MAGIC_V2 = 0x0FABC0004
_DTYPES = {0: np.float32, 1: np.float16, 2: np.int8, 3: np.int32, 5: np.int64, 6: np.uint32}


class TnnFormatError(ValueError):
    """The files do not follow the TNN model format."""


@dataclass
class TnnInput:
    name: str
    dims: list[int]
    data_type: int


@dataclass
class TnnLayer:
    type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    params: dict[str, Any]
    tokens: list[str]  # the raw param tokens after the output names


@dataclass
class TnnModel:
    magic: int
    blob_count: int
    inputs: list[TnnInput]
    blobs: list[str]
    outputs: list[str]
    layer_count: int  # as declared on the fifth line
    layers: list[TnnLayer]
    model_magic: int | None = None
    # layer name -> its resource fields (names follow the TNN LayerResource members)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_types: dict[str, str] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)


def read_model(proto_path: Path, model_path: Path) -> TnnModel:
    return parse_model(Path(proto_path).read_text(encoding="utf-8"), Path(model_path).read_bytes())


def parse_model(proto: str, model: bytes) -> TnnModel:
    result = parse_proto(proto)
    _parse_binary(model, result)
    return result


def parse_proto(text: str) -> TnnModel:
    # TNN drops every quote and newline, then splits the whole text at commas.
    flat = text.replace('"', "").replace("\n", "")
    records = [r.strip() for r in flat.split(",")]
    if len(records) <= 5:
        raise TnnFormatError("a .tnnproto needs at least 5 comma-separated records")
    header = records[0].split()
    magic = int(header[3]) if len(header) >= 4 else 0
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise TnnFormatError(f"unknown .tnnproto magic number {magic}")
    layers = [_parse_layer(r.split()) for r in records[5:] if r]
    return TnnModel(
        magic=magic,
        blob_count=int(header[1]),
        inputs=[_parse_input(part.split(), magic) for part in records[1].split(":")],
        blobs=records[2].split(),
        outputs=records[3].split(),
        layer_count=int(records[4]),
        layers=layers,
    )


def _parse_input(tokens: list[str], magic: int) -> TnnInput:
    if len(tokens) < 2:
        raise TnnFormatError(f"bad input record {' '.join(tokens)!r}")
    if magic == MAGIC_V1:
        return TnnInput(tokens[0], [int(t) for t in tokens[1:]], 0)
    rank = int(tokens[1])
    if len(tokens) < rank + 2:
        raise TnnFormatError(f"input {tokens[0]!r} has fewer dims than its rank")
    return TnnInput(tokens[0], [int(t) for t in tokens[2 : 2 + rank]], int(tokens[-1]))


def _parse_layer(tokens: list[str]) -> TnnLayer:
    if len(tokens) < 4:
        raise TnnFormatError(f"bad layer record {' '.join(tokens)!r}")
    n_in, n_out = int(tokens[2]), int(tokens[3])
    inputs = tokens[4 : 4 + n_in]
    outputs = tokens[4 + n_in : 4 + n_in + n_out]
    if len(outputs) != n_out:
        raise TnnFormatError(f"layer {tokens[1]!r} lists fewer blobs than it declares")
    rest = tokens[4 + n_in + n_out :]
    return TnnLayer(tokens[0], tokens[1], inputs, outputs, parse_params(tokens[0], rest), rest)


class _Bytes:
    """A cursor over the .tnnmodel bytes (little-endian, like every TNN target)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise TnnFormatError(f"truncated .tnnmodel at byte {self.pos}")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int32(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def uint32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def string(self) -> str:
        return self.take(self.int32()).decode("utf-8")

    def raw(self) -> np.ndarray:
        magic = self.uint32()
        data_type = self.int32()
        length = self.int32()
        if length <= 0:
            return np.zeros(0, np.float32)
        dims = [self.int32() for _ in range(self.int32())] if magic == MAGIC_V2 else []
        if data_type not in _DTYPES:
            raise TnnFormatError(f"raw buffer of unknown data type {data_type}")
        array = np.frombuffer(self.take(length), dtype=_DTYPES[data_type]).copy()
        if dims and int(np.prod(dims)) == array.size:
            return array.reshape(dims)
        return array.reshape(()) if array.size == 1 and not dims else array


def _parse_binary(data: bytes, model: TnnModel) -> None:
    cursor = _Bytes(data)
    first = struct.unpack("<I", data[:4])[0] if len(data) >= 4 else 0
    if first in (MAGIC_V1, MAGIC_V2):
        model.model_magic = cursor.uint32()
    count = cursor.int32() & 0x1FFFFFFF
    known_types = {layer.type for layer in model.layers}
    types_by_name = {layer.name: layer.type for layer in model.layers}
    for _ in range(count):
        cursor.int32()  # the LayerType number; 0 makes TNN use the string instead
        type_str = cursor.string()
        if type_str in known_types:
            name = cursor.string()
        else:
            # Older files: the type number is followed directly by the layer name.
            name, type_str = type_str, types_by_name.get(type_str, "")
        model.resource_types[name] = type_str
        model.resources[name] = _read_resource(cursor, type_str)
    if cursor.remaining() < 4:
        return
    cursor.uint32()  # the constant map repeats the magic number
    for _ in range(cursor.int32()):
        name = cursor.string()
        model.constants[name] = cursor.raw()
    if cursor.remaining():
        raise TnnFormatError(f"{cursor.remaining()} unexpected bytes after the constant map")


def _read_resource(cursor: _Bytes, layer_type: str) -> dict[str, Any]:
    if layer_type in ("Convolution", "Deconvolution"):
        fields: dict[str, Any] = {"name": cursor.string(), "has_bias": cursor.int32()}
        fields["filter"] = cursor.raw()
        if fields["has_bias"]:
            fields["bias"] = cursor.raw()
        return fields
    if layer_type in ("BatchNormCxx", "BatchNormalization"):
        return {"scale": cursor.raw(), "bias": cursor.raw()}
    if layer_type == "Scale":
        fields = {"name": cursor.string(), "has_bias": cursor.int32(), "scale": cursor.raw()}
        if fields["has_bias"]:
            fields["bias"] = cursor.raw()
        return fields
    if layer_type == "PReLU":
        return {"name": cursor.string(), "slope": cursor.raw()}
    if layer_type == "InnerProduct":
        return {"name": cursor.string(), "weight": cursor.raw(), "bias": cursor.raw()}
    if layer_type in ("Add", "Sub", "Mul", "Div", "Maximum", "Minimum"):
        return {"element": cursor.raw()}
    if layer_type in ("MatMul", "Const"):
        return {"weight": cursor.raw()}
    if layer_type == "Gather":
        fields = {}
        if cursor.int32() == 1:
            fields["data"] = cursor.raw()
        if cursor.int32() == 1:
            fields["indices"] = cursor.raw()
        return fields
    raise TnnFormatError(f"no resource layout known for layer type {layer_type!r}")
