"""The generative cell the runner tests of every generative runtime send: llm-tiny measured
briefly (two prefill lengths, six decode tokens, two repetitions after one warm-up, a
four-token output check after a twelve-token prompt) on one thread pinned to core 0."""

from __future__ import annotations

from pathlib import Path

from edgebench.runners.protocol import SPEC_SCHEMA

#: Ordinary token ids of the qwen2 vocabulary, the same for every runtime.
PROMPT = [(7919 * i) % 20000 + 1000 for i in range(32)]


def tiny_generative_spec(model: Path, framework: str, saved: Path) -> dict[str, object]:
    """The runner spec measuring ``model`` on ``framework``, its check saved to ``saved``."""
    generation = {
        "prompt": PROMPT,
        "prompt_tokens": [8, 32],
        "gen_tokens": 6,
        "repetitions": 2,
        "warmup": 1,
        "check_prompt": 12,
        "check_tokens": 4,
    }
    return {
        "schema": SPEC_SCHEMA,
        "model": str(model),
        "framework": framework,
        "threads": 1,
        "cores": [0],
        "save_outputs": str(saved),
        "generation": generation,
    }
