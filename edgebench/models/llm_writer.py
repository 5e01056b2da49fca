"""Writes a qwen2 GGUF with seeded random weights and a given vocabulary, with the ``gguf``
package, one tensor at a time (the 0.5B shape never sits in memory whole).

As in real GGUF files, norms and biases (1-D) stay float32, and the 2-D weights take the weight
type (``f16``, ``q8_0``, ``q4_0``) where their rows are whole quantization blocks, else float16.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf import GGMLQuantizationType, GGUFValueType, LlamaFileType

from edgebench.models.llm_shapes import LlmShape, check_weight_type

#: Bump whenever the bytes written change: the tag is part of the cached file's name.
WRITER_VERSION = "3"
#: The random weights' scales. Projections are normal with ``PROJECTION_GAIN / sqrt(fan_in)``
#: (the usual fan-in scale: at gain 4 the 24-layer 0.5B shape was chaotic, and runtimes that
#: round differently disagreed with each other at cosine 0.93) and the tied embedding with
#: ``EMBEDDING_STD``: small enough beside the layers' outputs that the model does not predict
#: the token it was given (at 0.02 everywhere, and at 0.5, it repeated it forever), large enough
#: that the logits spread (std ~1.2 at hidden 64, ~4.5 at 896). Biases: ``BIAS_STD``.
PROJECTION_GAIN = 1.0
EMBEDDING_STD = 0.15
BIAS_STD = 0.02

_GGML = {
    "f16": GGMLQuantizationType.F16,
    "q8_0": GGMLQuantizationType.Q8_0,
    "q4_0": GGMLQuantizationType.Q4_0,
}
_FILE_TYPE = {
    "f16": LlamaFileType.MOSTLY_F16,
    "q8_0": LlamaFileType.MOSTLY_Q8_0,
    "q4_0": LlamaFileType.MOSTLY_Q4_0,
}


class _Writer(gguf.GGUFWriter):
    """GGUFWriter packing an array of strings or of ints in one join: item by item, the
    vocabulary's 300,000 strings take seconds. The bytes are the plain writer's (a test
    compares them)."""

    def _pack_val(
        self, val: Any, vtype: GGUFValueType, add_vtype: bool, sub_type: GGUFValueType | None = None
    ) -> bytes:
        if vtype != GGUFValueType.ARRAY or sub_type is not None or not isinstance(val, list):
            return super()._pack_val(val, vtype, add_vtype, sub_type)
        if self.endianess != gguf.GGUFEndian.LITTLE or not val:
            return super()._pack_val(val, vtype, add_vtype, sub_type)
        head = struct.pack("<I", vtype) if add_vtype else b""
        if all(type(item) is str for item in val):
            encoded = [item.encode("utf-8") for item in val]
            head += struct.pack("<IQ", GGUFValueType.STRING, len(val))
            return head + b"".join(struct.pack("<Q", len(item)) + item for item in encoded)
        if all(type(item) is int for item in val):
            head += struct.pack("<IQ", GGUFValueType.INT32, len(val))
            return head + np.asarray(val, dtype="<i4").tobytes()
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def tensor_type(shape: tuple[int, ...], weight_type: str) -> GGMLQuantizationType:
    """The GGML type a tensor of ``shape`` is stored at in a model of ``weight_type``."""
    if len(shape) == 1:
        return GGMLQuantizationType.F32
    ggml = _GGML[weight_type]
    block, _ = gguf.GGML_QUANT_SIZES[ggml]
    return ggml if shape[-1] % block == 0 else GGMLQuantizationType.F16


def tensor_bytes(dims: tuple[int, ...], weight_type: str) -> int:
    """How many bytes a tensor of ``dims`` takes in a model of ``weight_type``."""
    block, size = gguf.GGML_QUANT_SIZES[tensor_type(dims, weight_type)]
    return int(np.prod(dims)) // block * size


def weight_bytes(shape: LlmShape, weight_type: str) -> int:
    """The bytes of every tensor of ``shape`` at ``weight_type`` (the file adds its metadata,
    mostly the vocabulary, and alignment padding): known without writing the file."""
    return sum(tensor_bytes(dims, weight_type) for dims in shape.tensor_shapes().values())


def random_tensor(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Tensor ``name``'s float32 values: norm weights near 1, everything else normal at its
    scale (``PROJECTION_GAIN``, ``EMBEDDING_STD``, ``BIAS_STD``); each tensor seeded by the
    model's seed and its own name, so any one can be made again alone."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if name in ("token_embd.weight", "output.weight"):
        std = EMBEDDING_STD
    elif len(shape) == 2:
        std = PROJECTION_GAIN / float(np.sqrt(shape[-1]))
    else:
        std = BIAS_STD
    values = rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
    if "norm" in name:
        values += np.float32(1.0)
    return values


def _stored(values: np.ndarray, ggml: GGMLQuantizationType) -> np.ndarray:
    if ggml == GGMLQuantizationType.F32:
        return values
    if ggml == GGMLQuantizationType.F16:
        return values.astype(np.float16)
    return gguf.quants.quantize(values, ggml)


def _add_metadata(writer: gguf.GGUFWriter, key: str, value: Any) -> None:
    if isinstance(value, str):
        writer.add_string(key, value)
    elif isinstance(value, bool):
        writer.add_bool(key, value)
    elif isinstance(value, int):
        writer.add_uint32(key, value)
    elif isinstance(value, float):
        writer.add_float32(key, value)
    else:
        writer.add_array(key, value)


def write_qwen2_gguf(
    path: Path,
    shape: LlmShape,
    weight_type: str,
    tokenizer: Mapping[str, Any],
    seed: int = 0,
    tensors: Mapping[str, np.ndarray] | None = None,
) -> None:
    """Write ``shape`` at ``weight_type`` to ``path``. ``tokenizer``: the ``tokenizer.*``
    metadata (keys and values as :func:`runners.protocol.gguf.read_gguf` gives them). ``tensors``:
    float32 values to write instead of random ones, by name."""
    check_weight_type(weight_type)
    arch = shape.architecture
    writer = _Writer(path, arch)
    writer.add_name(shape.name)
    writer.add_block_count(shape.layers)
    writer.add_context_length(shape.context_length)
    writer.add_embedding_length(shape.hidden)
    writer.add_feed_forward_length(shape.intermediate)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_file_type(_FILE_TYPE[weight_type])
    if weight_type != "f16":
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, value in tokenizer.items():
        _add_metadata(writer, key, value)
    shapes = shape.tensor_shapes()
    for name, dims in shapes.items():
        # Not uint8, so the writer takes ``dims`` as the tensor's own shape.
        writer.add_tensor_info(
            name,
            dims,
            np.dtype(np.float32),
            tensor_bytes(dims, weight_type),
            raw_dtype=tensor_type(dims, weight_type),
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for values in _values(shapes, seed, tensors or {}):
        writer.write_tensor_data(_stored(values, tensor_type(values.shape, weight_type)))
    writer.close()


def _values(
    shapes: Mapping[str, tuple[int, ...]], seed: int, given: Mapping[str, np.ndarray]
) -> Iterator[np.ndarray]:
    for name, dims in shapes.items():
        values = given.get(name)
        if values is None:
            values = random_tensor(name, dims, seed)
        yield np.ascontiguousarray(values, dtype=np.float32).reshape(dims)
