"""A generative cell's record part from its runner's result: the runner's ``generation`` part
(nanoseconds, per test) as the record's ``generation`` (milliseconds, flat; results/
generation_part.py)."""

from __future__ import annotations

from edgebench.results.generation_part import Generation
from edgebench.runners.result_parts import GenerationPart


def generation_of(part: GenerationPart) -> Generation:
    """The record's ``generation`` part from the runner's."""
    return Generation(
        weight_type=part.weight_type,
        ttft_prompt_tokens=[run.prompt_tokens for run in part.prefill for _ in run.ttft_ns],
        ttft_ms=[ns / 1e6 for run in part.prefill for ns in run.ttft_ns],
        gen_tokens=part.gen_tokens,
        context_depth=part.context_depth,
        decode_wall_ms=[ns / 1e6 for ns in part.decode_wall_ns],
        kv_cache_bytes=part.kv_cache_bytes,
        check_tokens=list(part.check_tokens),
    )
