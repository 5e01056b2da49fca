"""An ncnn model as files: the layers of its ``.param`` text, where each layer's weights lie in
its ``.bin``, and writing both back with some layers replaced.

``.param`` (ncnn wiki "param and model file structure"): the magic line ``7767517``, a line
``layer_count blob_count``, then one line per layer:
``type name bottom_count top_count bottoms... tops... key=value...``.

``.bin``: every layer's weights, in layer order, in the order that layer's ``load_model`` asks
for them. What a layer asks for depends on its type and params, so the ncnn wheel itself is
asked (each layer of a loaded ``.param`` loads from a recording ModelBin). A "type 0" blob
starts with a 4-byte tag (0 fp32, ``FP16_TAG``, ``INT8_TAG``, ``RAW_TAG`` fp32, any other
non-zero value: a 256-entry fp32 table then uint8 indices); a "type 1" blob is bare fp32.
Every blob is padded to a multiple of 4 bytes (``src/modelbin.cpp``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import ConversionError

PARAM_MAGIC = "7767517"
FP32_TAG = 0
FP16_TAG = 0x01306B47
INT8_TAG = 0x000D4B38
RAW_TAG = 0x0002C056


@dataclass(frozen=True)
class Layer:
    type: str
    name: str
    bottoms: list[str]
    tops: list[str]
    #: key -> value as written (arrays keep their ``-233xx`` key); parsed where needed.
    params: dict[int, str]
    line: str

    def int_param(self, key: int, default: int) -> int:
        value = self.params.get(key)
        return default if value is None else int(value)

    def float_param(self, key: int, default: float) -> float:
        value = self.params.get(key)
        return default if value is None else float(value)


@dataclass(frozen=True)
class Blob:
    """One ``ModelBin.load`` of a layer: ``count`` elements in ``size`` bytes at ``offset``."""

    offset: int  # at the tag, for a tagged blob
    size: int  # tag, data and padding
    count: int
    tag: int | None  # None: a bare fp32 ("type 1") blob

    @property
    def data_offset(self) -> int:
        return self.offset if self.tag is None else self.offset + 4


@dataclass(frozen=True)
class NcnnModel:
    head: list[str]  # the magic line and the count line
    layers: list[Layer]
    blobs: list[list[Blob]]  # per layer, in load order
    weights: bytes

    def floats(self, blob: Blob) -> np.ndarray | None:
        """The blob's values as fp32, or None when it is not stored as fp32."""
        if blob.tag not in (None, FP32_TAG, RAW_TAG):
            return None
        return np.frombuffer(self.weights, np.float32, blob.count, blob.data_offset)


def read_model(param: Path, weights: Path) -> NcnnModel:
    lines = param.read_text().splitlines()
    if not lines or lines[0].strip() != PARAM_MAGIC or len(lines) < 2:
        raise ConversionError("failed", f"{param.name} is not an ncnn text param file")
    layers = [_parse_line(line) for line in lines[2:] if line.strip()]
    data = weights.read_bytes()
    return NcnnModel(lines[:2], layers, _layer_blobs(param, data, len(layers)), data)


def _parse_line(line: str) -> Layer:
    fields = line.split()
    n_in, n_out = int(fields[2]), int(fields[3])
    blobs_end = 4 + n_in + n_out
    params: dict[int, str] = {}
    for token in fields[blobs_end:]:
        key, _, value = token.partition("=")
        if key.lstrip("-").isdigit():
            params[int(key)] = value
    return Layer(
        fields[0], fields[1], fields[4 : 4 + n_in], fields[4 + n_in : blobs_end], params, line
    )


def with_param(layer: Layer, key: int, value: int) -> str:
    """The layer's line with ``key=value`` set (replaced where present, else appended)."""
    fields = layer.line.split()
    prefix = f"{key}="
    kept = [f for f in fields if not f.startswith(prefix)]
    return " ".join([*kept, f"{key}={value}"])


def blob_bytes(tag: int | None, data: np.ndarray) -> bytes:
    """A blob as ncnn reads it: the tag (unless bare), the data, zeros up to 4-byte alignment."""
    raw = np.ascontiguousarray(data).tobytes()
    head = b"" if tag is None else struct.pack("<I", tag)
    return head + raw + b"\0" * (-len(raw) % 4)


def write_model(
    model: NcnnModel, param: Path, weights: Path, replaced: dict[int, tuple[str, bytes]]
) -> None:
    """Write the model with layer ``i`` replaced by ``(param line, weight bytes)``."""
    lines, chunks = list(model.head), []
    for index, layer in enumerate(model.layers):
        blobs = model.blobs[index]
        if index in replaced:
            line, data = replaced[index]
            lines.append(line)
            chunks.append(data)
            continue
        lines.append(layer.line)
        if blobs:
            chunks.append(model.weights[blobs[0].offset : blobs[-1].offset + blobs[-1].size])
    param.write_text("\n".join(lines) + "\n")
    weights.write_bytes(b"".join(chunks))


def _blob_at(data: bytes, offset: int, count: int, kind: int) -> Blob:
    """The blob ``ModelBin::load(count, kind)`` reads at ``offset`` (src/modelbin.cpp)."""
    if kind != 0:
        return Blob(offset, 4 * count, count, None)
    if offset + 4 > len(data):
        raise ConversionError("failed", "ncnn .bin ends before the weights its .param asks for")
    (tag,) = struct.unpack_from("<I", data, offset)
    if tag in (FP32_TAG, RAW_TAG):
        size = 4 * count
    elif tag == FP16_TAG:
        size = 2 * count + (-2 * count % 4)
    elif tag == INT8_TAG:
        size = count + (-count % 4)
    else:  # codebook: 256 fp32 values, then one uint8 index per element
        size = 1024 + count + (-count % 4)
    return Blob(offset, 4 + size, count, tag)


def _layer_blobs(param: Path, data: bytes, layer_count: int) -> list[list[Blob]]:
    """Per layer, the blobs its ``load_model`` reads, found by letting ncnn load each layer from
    a ModelBin that records what is asked for (ncnn knows every layer type's weight layout)."""
    ncnn = import_ncnn()
    net = ncnn.Net()
    if net.load_param(str(param)) != 0:
        raise ConversionError("failed", f"ncnn cannot parse {param.name}")
    recorder = _recorder(ncnn, data)
    found: list[list[Blob]] = []
    for layer in net.layers():
        recorder.blobs = []
        if layer.load_model(recorder) != 0:
            raise ConversionError("failed", f"ncnn cannot load the weights of layer {layer.name}")
        found.append(recorder.blobs)
    net.clear()
    if len(found) != layer_count or recorder.offset != len(data):
        raise ConversionError(
            "failed",
            f"ncnn .bin layout not understood ({recorder.offset} of {len(data)} bytes read)",
        )
    return found


def _recorder(ncnn: Any, data: bytes) -> Any:
    class Recorder(ncnn.ModelBin):
        def __init__(self) -> None:
            super().__init__()
            self.offset = 0
            self.blobs: list[Blob] = []

        def load(self, w: int, type: int) -> Any:  # ncnn calls it with these names
            blob = _blob_at(data, self.offset, w, type)
            self.offset += blob.size
            self.blobs.append(blob)
            # The layer object is thrown away: the values it gets do not matter, their count does.
            mat = ncnn.Mat(max(w, 1))
            mat.fill(0.0)
            return mat

    return Recorder()


def import_ncnn() -> Any:
    try:
        import ncnn
    except ImportError:
        raise ConversionError(
            "failed", "ncnn int8 conversion needs the ncnn Python package: pip install ncnn"
        ) from None
    return ncnn
