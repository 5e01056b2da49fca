"""Built-in generative models as a plan sweeps them: once per weight type of ``--weights``
(each written once into the cache; a .gguf file runs at its own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from edgebench.planning.modelref import BUILTIN_LLMS, ModelRef, builtin_llm_ref


def builtin_llm_refs(ref: ModelRef, weights: Sequence[str], cache: Path) -> list[ModelRef]:
    """A built-in generative model once per weight type of ``weights`` (``--weights``)."""
    if ref.source not in BUILTIN_LLMS:
        return [ref]
    return [
        ref if weight == ref.precision else builtin_llm_ref(ref.source, cache, weight)
        for weight in dict.fromkeys(weights)
    ]
