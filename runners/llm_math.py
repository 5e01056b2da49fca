"""The decoder-only transformer of edgebench's numpy reference (reference_llm_backend.py).

It computes the llama and qwen2 architectures as llama.cpp does from a GGUF file: RMSNorm, rotary
position embeddings, grouped-query attention under a causal mask (q/k/v biases where the file
has them: qwen2), a SwiGLU feed-forward block, and an output head (tied to the token embedding
where the file has no ``output.weight``). Everything is float32: the caller hands the weights
already dequantized to float32, so a q8_0 or q4_0 file is computed as its dequantized values.

The rotary layout follows llama.cpp's ``llama_model_rope_type``: qwen2 rotates the pairs
(i, i + head_dim/2) ("neox"); llama rotates neighbouring pairs (2i, 2i + 1) ("normal"), because
llama.cpp's converter permuted the rows of llama's q and k weights so that rotating neighbours
of the file's weights is the Hugging Face model's half-split rotation of the original ones.

Runs on the device: Python 3.8+, stdlib + numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .protocol.llm_shape import DecoderShape, ModelError, rotary_tables


@dataclass
class Layer:
    """One transformer block's weights (matrices as GGUF stores them: out x in)."""

    attn_norm: np.ndarray
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    bq: Optional[np.ndarray]
    bk: Optional[np.ndarray]
    bv: Optional[np.ndarray]
    ffn_norm: np.ndarray
    gate: np.ndarray
    up: np.ndarray
    down: np.ndarray


@dataclass
class Weights:
    """A decoder's weights; ``output`` is the token embedding itself where tied."""

    token_embd: np.ndarray
    layers: List[Layer]
    output_norm: np.ndarray
    output: np.ndarray
    rope_freqs: Optional[np.ndarray] = None


def load_weights(
    shape: DecoderShape, names: Sequence[str], tensor: Callable[[str], np.ndarray]
) -> Weights:
    """Read every weight by its GGUF name through ``tensor`` (name -> float32 array in the
    logical shape), checking each shape; ModelError with one line naming a missing or
    misshapen tensor."""
    present = set(names)
    embd = _tensor(tensor, present, "token_embd.weight", None)
    vocab = embd.shape[0] if embd.ndim == 2 else 0
    if embd.shape != (vocab, shape.hidden) or vocab == 0:
        raise ModelError(
            "token_embd.weight has shape %s, not (vocab, %d)" % (embd.shape, shape.hidden)
        )
    layers = [_layer(shape, n, present, tensor) for n in range(shape.layers)]
    has_output = "output.weight" in present
    return Weights(
        token_embd=embd,
        layers=layers,
        output_norm=_tensor(tensor, present, "output_norm.weight", (shape.hidden,)),
        output=_tensor(tensor, present, "output.weight", embd.shape) if has_output else embd,
        rope_freqs=(
            _tensor(tensor, present, "rope_freqs.weight", (shape.head_dim // 2,))
            if "rope_freqs.weight" in present
            else None
        ),
    )


def _layer(shape: DecoderShape, n: int, present: set, tensor: Callable[[str], np.ndarray]) -> Layer:
    q_rows = shape.heads * shape.head_dim
    kv_rows = shape.kv_heads * shape.head_dim

    def get(part: str, want: Sequence[int], optional: bool = False) -> Any:
        name = "blk.%d.%s" % (n, part)
        if optional and name not in present:
            return None
        return _tensor(tensor, present, name, tuple(want))

    return Layer(
        attn_norm=get("attn_norm.weight", (shape.hidden,)),
        wq=get("attn_q.weight", (q_rows, shape.hidden)),
        wk=get("attn_k.weight", (kv_rows, shape.hidden)),
        wv=get("attn_v.weight", (kv_rows, shape.hidden)),
        wo=get("attn_output.weight", (shape.hidden, q_rows)),
        bq=get("attn_q.bias", (q_rows,), optional=True),
        bk=get("attn_k.bias", (kv_rows,), optional=True),
        bv=get("attn_v.bias", (kv_rows,), optional=True),
        ffn_norm=get("ffn_norm.weight", (shape.hidden,)),
        gate=get("ffn_gate.weight", (shape.ffn, shape.hidden)),
        up=get("ffn_up.weight", (shape.ffn, shape.hidden)),
        down=get("ffn_down.weight", (shape.hidden, shape.ffn)),
    )


def _tensor(
    tensor: Callable[[str], np.ndarray], present: set, name: str, want: Optional[tuple]
) -> np.ndarray:
    if name not in present:
        raise ModelError("the file has no tensor %s" % name)
    array = np.ascontiguousarray(tensor(name), dtype=np.float32)
    if want is not None and array.shape != want:
        raise ModelError("tensor %s has shape %s, expected %s" % (name, array.shape, want))
    return array


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm over the last axis, then the per-channel weight."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
    return (x / np.sqrt(mean_square + np.float32(eps))) * weight


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """Rotate x (tokens x heads x head_dim) by per-token angles (cos, sin: tokens x half)."""
    c = cos[:, None, :]
    s = sin[:, None, :]
    half = x.shape[-1] // 2
    if layout == "neox":
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = b * c + a * s
    return out


def _linear(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None) -> np.ndarray:
    y = x @ weight.T
    return y + bias if bias is not None else y


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (np.float32(1.0) + np.exp(-x))


class Decoder:
    """The model with a key/value cache of ``context`` positions: ``forward`` appends tokens
    after those already fed (the prompt in one batched pass, then one token at a time)."""

    def __init__(self, shape: DecoderShape, weights: Weights, context: int) -> None:
        self.shape = shape
        self.weights = weights
        self.context = context
        self.vocab = weights.token_embd.shape[0]
        cache_shape = (shape.layers, shape.kv_heads, context, shape.head_dim)
        self.keys = np.zeros(cache_shape, dtype=np.float32)
        self.values = np.zeros(cache_shape, dtype=np.float32)
        self.cos, self.sin = rotary_tables(shape, context, weights.rope_freqs)
        self.position = 0

    def reset(self) -> None:
        """Forget every token fed so far (the cache's contents are overwritten as it refills)."""
        self.position = 0

    def cache_bytes(self) -> int:
        return int(self.keys.nbytes + self.values.nbytes)

    def forward(self, tokens: Sequence[int], all_logits: bool = False) -> np.ndarray:
        """Feed ``tokens`` after the cached ones; the logits of the last one (vocab,), or of
        every one (tokens x vocab) with ``all_logits``."""
        ids = np.asarray(tokens, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError("feed at least one token")
        if self.position + ids.size > self.context:
            raise ValueError(
                "%d tokens after %d overflow the context of %d"
                % (ids.size, self.position, self.context)
            )
        if ids.min() < 0 or ids.max() >= self.vocab:
            raise ValueError("token ids must lie in [0, %d)" % self.vocab)
        x = self.weights.token_embd[ids]
        for index, layer in enumerate(self.weights.layers):
            x = x + self._attention(index, layer, x)
            h = rms_norm(x, layer.ffn_norm, self.shape.rms_eps)
            x = x + _linear(_silu(_linear(h, layer.gate)) * _linear(h, layer.up), layer.down)
        self.position += ids.size
        last = x if all_logits else x[-1:]
        out = _linear(
            rms_norm(last, self.weights.output_norm, self.shape.rms_eps), self.weights.output
        )
        return out if all_logits else out[0]

    def _attention(self, index: int, layer: Layer, x: np.ndarray) -> np.ndarray:
        s = self.shape
        count = x.shape[0]
        start, end = self.position, self.position + count
        h = rms_norm(x, layer.attn_norm, s.rms_eps)
        cos, sin = self.cos[start:end], self.sin[start:end]
        q = rotate(
            _linear(h, layer.wq, layer.bq).reshape(count, s.heads, s.head_dim),
            cos,
            sin,
            s.rope_layout,
        )
        k = rotate(
            _linear(h, layer.wk, layer.bk).reshape(count, s.kv_heads, s.head_dim),
            cos,
            sin,
            s.rope_layout,
        )
        v = _linear(h, layer.wv, layer.bv).reshape(count, s.kv_heads, s.head_dim)
        self.keys[index, :, start:end] = k.transpose(1, 0, 2)
        self.values[index, :, start:end] = v.transpose(1, 0, 2)
        keys = self.keys[index, :, :end]
        values = self.values[index, :, :end]
        # query head h = g * group + r reads key/value head g
        by_group = q.reshape(count, s.kv_heads, s.group, s.head_dim).transpose(1, 2, 0, 3)
        grouped = by_group.reshape(s.kv_heads, s.group * count, s.head_dim)
        scores = grouped @ keys.transpose(0, 2, 1) * np.float32(1.0 / np.sqrt(s.head_dim))
        scores = scores.reshape(s.kv_heads, s.group, count, end)
        query_pos = np.arange(start, end)[:, None]
        scores = np.where(np.arange(end)[None, :] > query_pos, np.float32(-np.inf), scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        mixed = weights.reshape(s.kv_heads, s.group * count, end) @ values
        mixed = mixed.reshape(s.heads, count, s.head_dim).transpose(1, 0, 2)
        return _linear(mixed.reshape(count, s.heads * s.head_dim), layer.wo)
