"""What a GGUF file says about its model (architecture, sizes, vocabulary, weight type), read
with the runner's GGUF reader, for the host: planning (context, prompt tokens), memory checks
(file size), records (weight type)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.errors import UserError
from edgebench.runners.protocol.gguf import GgufError, GgufFile, read_gguf

#: The architectures edgebench's generative cells run (their GGUF key prefix).
SUPPORTED_ARCHITECTURES = ("llama", "qwen2")
#: ``tokenizer.ggml.token_type``: 1 is an ordinary token (3 control, 4 user-defined, 6 byte...).
NORMAL_TOKEN = 1
#: ``general.file_type`` (llama.cpp's LlamaFileType) -> the weight type's name.
FILE_TYPES = {
    0: "f32",
    1: "f16",
    2: "q4_0",
    3: "q4_1",
    7: "q8_0",
    8: "q5_0",
    9: "q5_1",
    10: "q2_k",
    11: "q3_k_s",
    12: "q3_k_m",
    13: "q3_k_l",
    14: "q4_k_s",
    15: "q4_k_m",
    16: "q5_k_s",
    17: "q5_k_m",
    18: "q6_k",
    32: "bf16",
}


@dataclass(frozen=True)
class LlmFacts:
    architecture: str
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    context_length: int
    vocab_size: int
    #: The ordinary (non-control) token ids as half-open ranges ``(start, stop)``.
    ordinary_ranges: tuple[tuple[int, int], ...]
    weight_type: str  # as the file says: general.file_type, else its 2-D weights' commonest type
    parameters: int
    file_bytes: int

    def ordinary_ids(self) -> np.ndarray:
        """Every ordinary token id, ascending (int64)."""
        parts = [np.arange(a, b, dtype=np.int64) for a, b in self.ordinary_ranges]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def read_llm_facts(path: Path) -> LlmFacts:
    """The facts of the GGUF at ``path``. UserError in one line for a malformed file, an
    architecture other than llama or qwen2, or missing sizes."""
    try:
        gguf = read_gguf(path)
    except GgufError as exc:
        raise UserError(f"{exc}: not a usable GGUF model") from None
    meta = gguf.metadata
    arch = meta.get("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UserError(
            f"{path}: architecture {arch!r} is not supported (generative cells run "
            f"{' and '.join(SUPPORTED_ARCHITECTURES)} models)"
        )
    hidden = _size(meta, path, f"{arch}.embedding_length")
    heads = _size(meta, path, f"{arch}.attention.head_count")
    tokens = meta.get("tokenizer.ggml.tokens")
    embedding = gguf.tensors.get("token_embd.weight")
    vocab = len(tokens) if isinstance(tokens, list) else embedding.shape[0] if embedding else 0
    if not vocab:
        raise UserError(f"{path}: no vocabulary (tokenizer.ggml.tokens) and no token_embd.weight")
    return LlmFacts(
        architecture=arch,
        layers=_size(meta, path, f"{arch}.block_count"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=_size(meta, path, f"{arch}.attention.head_count_kv", heads),
        head_dim=_size(meta, path, f"{arch}.attention.key_length", hidden // heads),
        context_length=_size(meta, path, f"{arch}.context_length"),
        vocab_size=vocab,
        ordinary_ranges=_ordinary_ranges(meta.get("tokenizer.ggml.token_type"), vocab),
        weight_type=_weight_type(gguf),
        parameters=sum(t.n_elements for t in gguf.tensors.values()),
        file_bytes=gguf.file_size,
    )


def _size(meta: dict[str, Any], path: Path, key: str, default: int | None = None) -> int:
    value = meta.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        found = "missing" if value is None else f"{value!r}"
        raise UserError(f"{path}: metadata {key} is {found}, not a positive integer")
    return value


def _ordinary_ranges(types: Any, vocab: int) -> tuple[tuple[int, int], ...]:
    """Runs of ordinary tokens; every id when the file has no token types."""
    if not isinstance(types, list) or len(types) != vocab:
        return ((0, vocab),)
    normal = np.asarray(types) == NORMAL_TOKEN
    edges = np.flatnonzero(np.diff(np.concatenate([[False], normal, [False]]).astype(np.int8)))
    return tuple((int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True))


def _weight_type(gguf: GgufFile) -> str:
    file_type = gguf.metadata.get("general.file_type")
    if isinstance(file_type, int) and file_type in FILE_TYPES:
        return FILE_TYPES[file_type]
    types = Counter(t.ggml_type for t in gguf.tensors.values() if len(t.shape) == 2)
    return types.most_common(1)[0][0].lower() if types else "unknown"
