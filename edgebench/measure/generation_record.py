"""A generative cell's record part from its runner's result: the runner's ``generation`` part
(nanoseconds, per test) as the record's ``generation`` (milliseconds, flat; results/
generation_part.py), with energy per token where the cell's telemetry trace has an energy
source: the CNN cells' window arithmetic (analysis/energy.py) over the repetitions' spans."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from edgebench.analysis.energy import spans_active_energy_j
from edgebench.results.generation_part import Generation
from edgebench.results.records import Record
from edgebench.runners.protocol.result_parts import GenerationPart


def generation_of(part: GenerationPart, trace: dict[str, Any] | None = None) -> Generation:
    """The record's ``generation`` part from the runner's, and the cell's telemetry ``trace``."""
    prompt_tokens = [run.prompt_tokens for run in part.prefill for _ in run.ttft_ns]
    decoded = len(part.decode_spans_ns) * (part.gen_tokens - 1)
    return Generation(
        weight_type=part.weight_type,
        ttft_prompt_tokens=prompt_tokens,
        ttft_ms=[ns / 1e6 for run in part.prefill for ns in run.ttft_ns],
        gen_tokens=part.gen_tokens,
        context_depth=part.context_depth,
        decode_wall_ms=[ns / 1e6 for ns in part.decode_wall_ns],
        kv_cache_bytes=part.kv_cache_bytes,
        check_tokens=list(part.check_tokens),
        energy_mj_per_prefill_token=_per_token(trace, part.prefill_spans_ns, sum(prompt_tokens)),
        energy_mj_per_decode_token=_per_token(trace, part.decode_spans_ns, decoded),
    )


def _per_token(trace: dict[str, Any] | None, spans: list[list[int]], tokens: int) -> float | None:
    """Millijoules above the idle baseline over ``spans``, per token; None when unknown."""
    joules = spans_active_energy_j(trace, spans) if tokens > 0 else None
    return None if joules is None else joules / tokens * 1000.0


def with_token_energy(record: Record) -> Record:
    """A generative record's energy per inference is its energy per decoded token (its samples
    are per decoded token), not the whole window's energy over them: the window also holds the
    prefill tests and the warm-ups."""
    generation, energy = record.generation, record.energy
    if generation is None or energy is None or energy.unavailable:
        return record
    per_token = generation.energy_mj_per_decode_token
    return replace(
        record,
        energy=replace(energy, energy_mj_per_inf=per_token),
        energy_mj_per_inf=per_token,
    )
