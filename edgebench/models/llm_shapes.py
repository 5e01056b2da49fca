"""The built-in generative models: a qwen2 architecture at two sizes, with random weights and the
real qwen2 vocabulary (``llm_vocab.py``), written as GGUF by ``llm_writer.py`` at a weight type.

Speed does not depend on the weights' values, only on the shapes and the weights' precision, so
``qwen2.5-0.5b-shape`` has Qwen2.5-0.5B's real layer sizes and ``llm-tiny`` is small enough for
the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.errors import UserError

#: The weight types a built-in generative model is written at; the first is the default.
WEIGHT_TYPES = ("f16", "q8_0", "q4_0")
DEFAULT_WEIGHT_TYPE = WEIGHT_TYPES[0]
#: The real qwen2 vocabulary's size (``tokenizer.ggml.tokens`` of ggml-vocab-qwen2.gguf).
QWEN2_VOCAB_SIZE = 151936


@dataclass(frozen=True)
class LlmShape:
    """A qwen2 decoder's sizes (the GGUF ``qwen2.*`` keys)."""

    name: str
    description: str  # one line
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    context_length: int
    vocab_size: int = QWEN2_VOCAB_SIZE
    rope_theta: float = 1_000_000.0
    rms_eps: float = 1e-6
    architecture: str = "qwen2"

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor the GGUF holds, in the order it is written, at its logical (numpy)
        shape: ``(out_features, in_features)`` for a projection. Embeddings are tied (no
        ``output.weight``); q, k and v have biases, as in qwen2."""
        q_width, kv_width = self.heads * self.head_dim, self.kv_heads * self.head_dim
        shapes: dict[str, tuple[int, ...]] = {"token_embd.weight": (self.vocab_size, self.hidden)}
        for i in range(self.layers):
            block = f"blk.{i}"
            shapes.update(
                {
                    f"{block}.attn_norm.weight": (self.hidden,),
                    f"{block}.attn_q.weight": (q_width, self.hidden),
                    f"{block}.attn_q.bias": (q_width,),
                    f"{block}.attn_k.weight": (kv_width, self.hidden),
                    f"{block}.attn_k.bias": (kv_width,),
                    f"{block}.attn_v.weight": (kv_width, self.hidden),
                    f"{block}.attn_v.bias": (kv_width,),
                    f"{block}.attn_output.weight": (self.hidden, q_width),
                    f"{block}.ffn_norm.weight": (self.hidden,),
                    f"{block}.ffn_gate.weight": (self.intermediate, self.hidden),
                    f"{block}.ffn_up.weight": (self.intermediate, self.hidden),
                    f"{block}.ffn_down.weight": (self.hidden, self.intermediate),
                }
            )
        shapes["output_norm.weight"] = (self.hidden,)
        return shapes

    def parameter_count(self) -> int:
        total = 0
        for shape in self.tensor_shapes().values():
            count = 1
            for dim in shape:
                count *= dim
            total += count
        return total


GENERATIVE_MODELS: dict[str, LlmShape] = {
    m.name: m
    for m in (
        LlmShape(
            "llm-tiny",
            "qwen2, 2 layers, hidden 64, the real qwen2 vocabulary, random weights (for tests)",
            layers=2,
            hidden=64,
            heads=4,
            kv_heads=2,
            head_dim=16,
            intermediate=128,
            context_length=2048,
        ),
        LlmShape(
            "qwen2.5-0.5b-shape",
            "Qwen2.5-0.5B's layer sizes (24 layers, hidden 896, ~494M params), random weights",
            layers=24,
            hidden=896,
            heads=14,
            kv_heads=2,
            head_dim=64,
            intermediate=4864,
            context_length=32768,
        ),
    )
}


def get_generative(name: str) -> LlmShape:
    try:
        return GENERATIVE_MODELS[name]
    except KeyError:
        known = ", ".join(GENERATIVE_MODELS)
        raise UserError(f"unknown built-in generative model {name!r}; known: {known}") from None


def check_weight_type(weight_type: str) -> str:
    if weight_type not in WEIGHT_TYPES:
        raise UserError(
            f"unknown weight type {weight_type!r}: choose one of {', '.join(WEIGHT_TYPES)}"
        )
    return weight_type
