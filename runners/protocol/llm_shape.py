"""A decoder-only model's shape as its GGUF metadata gives it: the hyper-parameters, the rotary
tables and the stored weight type, read the same way by the numpy reference on the device
(llm_math.py) and by the host's converters that write other runtimes' model folders.

The rotary layout follows llama.cpp's ``llama_model_rope_type``: qwen2 rotates the pairs
(i, i + head_dim/2) ("neox"); llama rotates neighbouring pairs (2i, 2i + 1) ("normal").

Python 3.8, stdlib + numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

#: The rotary layout of each architecture this module computes.
ROPE_LAYOUTS = {"qwen2": "neox", "llama": "normal"}


class ModelError(ValueError):
    """A file this module cannot compute: ``unsupported`` says whether it is a well-formed
    model of a kind not implemented here (else the file itself is wrong)."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True)
class DecoderShape:
    """The hyper-parameters of one decoder, read from its GGUF metadata."""

    architecture: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    rope_base: float
    rope_layout: str
    rms_eps: float
    context_length: int

    @property
    def group(self) -> int:
        """Query heads per key/value head (query head h reads key/value head h // group)."""
        return self.heads // self.kv_heads


def decoder_shape(metadata: Mapping[str, Any]) -> DecoderShape:
    """The decoder the metadata describes; ModelError with one line if it is not one this
    module computes."""
    arch = metadata.get("general.architecture")
    if arch not in ROPE_LAYOUTS:
        raise ModelError(
            "architecture %r is not one the reference computes (%s)"
            % (arch, ", ".join(sorted(ROPE_LAYOUTS))),
            unsupported=True,
        )

    def number(key: str, default: Optional[float] = None) -> Any:
        value = metadata.get("%s.%s" % (arch, key), default)
        if value is None or isinstance(value, (str, bytes, list)):
            raise ModelError("the metadata key %s.%s is missing or not a number" % (arch, key))
        return value

    hidden = int(number("embedding_length"))
    heads = int(number("attention.head_count"))
    kv_heads = int(number("attention.head_count_kv", heads))
    if heads <= 0 or kv_heads <= 0 or heads % kv_heads or hidden <= 0:
        raise ModelError("%d attention heads do not share %d key/value heads" % (heads, kv_heads))
    head_dim = int(number("attention.key_length", hidden // heads))
    if int(number("attention.value_length", head_dim)) != head_dim or head_dim % 2:
        raise ModelError("key length %d and value length differ or are odd" % head_dim, True)
    if int(number("rope.dimension_count", head_dim)) != head_dim:
        raise ModelError("rotary embedding on part of each head is not implemented", True)
    scaling = metadata.get("%s.rope.scaling.type" % arch, "none")
    if scaling not in ("none", None):
        raise ModelError("rope scaling %r is not implemented" % scaling, True)
    return DecoderShape(
        architecture=arch,
        layers=int(number("block_count")),
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=int(number("feed_forward_length")),
        rope_base=float(number("rope.freq_base", 10000.0)),
        rope_layout=ROPE_LAYOUTS[arch],
        rms_eps=float(number("attention.layer_norm_rms_epsilon")),
        context_length=int(number("context_length")),
    )


def rotary_tables(
    shape: DecoderShape, positions: int, freq_factors: Optional[np.ndarray]
) -> Tuple[np.ndarray, np.ndarray]:
    """(cos, sin), each positions x head_dim/2 float32: angle p * base^(-2i/head_dim), divided
    by the file's per-frequency factors where it has them (llama 3's rope_freqs)."""
    half = shape.head_dim // 2
    inv_freq = shape.rope_base ** (-np.arange(half, dtype=np.float64) * 2.0 / shape.head_dim)
    if freq_factors is not None:
        inv_freq = inv_freq / freq_factors.astype(np.float64)
    angles = np.outer(np.arange(positions, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def file_weight_type(metadata: Mapping[str, Any], tensor_types: Dict[str, str]) -> str:
    """What the file's matrices are stored as: the type of the first layer's query weight
    (the file type's name where the reader gives no tensor types)."""
    stored = tensor_types.get("blk.0.attn_q.weight")
    if stored:
        return stored.lower()
    file_type = metadata.get("general.file_type")
    return FILE_TYPES.get(file_type, "unknown") if isinstance(file_type, int) else "unknown"


#: llama.cpp's llama_ftype numbers of the weight types edgebench writes.
FILE_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 7: "q8_0"}
