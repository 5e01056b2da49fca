"""The record's ``generation`` part: what a generative cell measured beside its per-token decode
latencies (which are the record's own ``samples_ns``, so p50/p90/p99 come from raw samples).

Stored flat, each time with the prompt length of its test beside it, so every round's
repetitions pool by concatenation.
"""

from __future__ import annotations

import statistics
import typing
from dataclasses import dataclass, field

from edgebench.results.json_values import RecordPart


@dataclass
class Generation(RecordPart):
    """Time to first token per prompt length, the decode test's walls, and what ran."""

    #: The weight type that ran (``f16``, ``q8_0``, ``q4_0``, or the runtime's own name).
    weight_type: str
    #: Every prefill repetition: its prompt length and its time to first token.
    ttft_prompt_tokens: list[int] = field(default_factory=list)
    ttft_ms: list[float] = field(default_factory=list)
    gen_tokens: int = 0
    context_depth: int = 0
    #: Every decode repetition: first token to last token.
    decode_wall_ms: list[float] = field(default_factory=list)
    #: Tokens each decode wall covers (None: ``gen_tokens - 1``, first token to last; a tool
    #: that times all ``gen_tokens`` decodes, as llama-bench does, says so here).
    decode_wall_tokens: int | None = None
    #: A tool's own prefill times where it gives no time to first token (llama-bench: the
    #: prompt's batch decoded, no token sampled): per repetition, with its prompt length.
    prefill_prompt_tokens: list[int] = field(default_factory=list)
    prefill_ms: list[float] = field(default_factory=list)
    #: What the measuring tool does not give, and why (``ttft``, ``per_token_latency``).
    unavailable: dict[str, str] = field(default_factory=dict)
    kv_cache_bytes: int | None = None
    #: The greedy tokens the output check compared.
    check_tokens: list[int] = field(default_factory=list)
    #: Energy above the idle baseline per prompt token over the prefill repetitions, and per
    #: token after the first over the decode repetitions (mJ); None without an energy source.
    energy_mj_per_prefill_token: float | None = None
    energy_mj_per_decode_token: float | None = None

    @property
    def prompt_lengths(self) -> list[int]:
        """The prefill tests' prompt lengths, shortest first."""
        return sorted(set(self.ttft_prompt_tokens) | set(self.prefill_prompt_tokens))

    def _length(self, prompt_tokens: int | None) -> int | None:
        """``prompt_tokens``, or the longest prompt tested; None when none was."""
        lengths = self.prompt_lengths
        return prompt_tokens if prompt_tokens is not None or not lengths else lengths[-1]

    def ttft_p50_ms(self, prompt_tokens: int | None = None) -> float | None:
        """The median time to first token at ``prompt_tokens`` (default: the longest)."""
        wanted = self._length(prompt_tokens)
        pairs = zip(self.ttft_prompt_tokens, self.ttft_ms, strict=True)
        times = [t for n, t in pairs if n == wanted]
        return statistics.median(times) if times else None

    def prefill_tokens_per_s(self, prompt_tokens: int | None = None) -> float | None:
        """Prompt tokens over the median time to first token (default: the longest prompt)."""
        wanted = self._length(prompt_tokens)
        ttft = self.ttft_p50_ms(wanted)
        if ttft is None:  # a tool's prefill time, where it gives no time to first token
            pairs = zip(self.prefill_prompt_tokens, self.prefill_ms, strict=True)
            times = [t for n, t in pairs if n == wanted]
            ttft = statistics.median(times) if times else None
        return wanted * 1000.0 / ttft if wanted and ttft else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens after the first over the median decode wall: the rate once the prompt is
        in (the first token's time is the prefill's)."""
        if self.gen_tokens < 2 or not self.decode_wall_ms:
            return None
        wall = statistics.median(self.decode_wall_ms)
        tokens = self.decode_wall_tokens or self.gen_tokens - 1
        return tokens * 1000.0 / wall if wall > 0 else None

    @classmethod
    def merge(cls, rounds: typing.Sequence[Generation | None]) -> Generation | None:
        """The rounds' repetitions pooled (the first round's facts kept)."""
        present = [r for r in rounds if r is not None]
        if not present:
            return None
        first = present[0]
        return cls(
            weight_type=first.weight_type,
            ttft_prompt_tokens=[n for r in present for n in r.ttft_prompt_tokens],
            ttft_ms=[t for r in present for t in r.ttft_ms],
            gen_tokens=first.gen_tokens,
            context_depth=first.context_depth,
            decode_wall_ms=[w for r in present for w in r.decode_wall_ms],
            decode_wall_tokens=first.decode_wall_tokens,
            prefill_prompt_tokens=[n for r in present for n in r.prefill_prompt_tokens],
            prefill_ms=[t for r in present for t in r.prefill_ms],
            unavailable=first.unavailable,
            kv_cache_bytes=first.kv_cache_bytes,
            check_tokens=first.check_tokens,
            # energy comes from the first round, as the record's own does (measure/scheduler.py)
            energy_mj_per_prefill_token=first.energy_mj_per_prefill_token,
            energy_mj_per_decode_token=first.energy_mj_per_decode_token,
        )

    def describe(self) -> str:
        parts = [self.weight_type]
        for n in self.prompt_lengths:
            ttft = self.ttft_p50_ms(n)
            rate = self.prefill_tokens_per_s(n)
            if rate is not None:
                parts.append(f"pp{n} {rate:.1f} tok/s" + (f" (TTFT {ttft:.1f} ms)" if ttft else ""))
        decode = self.decode_tokens_per_s
        if decode is not None:
            depth = f" at depth {self.context_depth}" if self.context_depth else ""
            parts.append(f"tg{self.gen_tokens}{depth} {decode:.1f} tok/s")
        if self.energy_mj_per_decode_token is not None:
            parts.append(f"{self.energy_mj_per_decode_token:.3g} mJ/decoded token")
        if self.energy_mj_per_prefill_token is not None:
            parts.append(f"{self.energy_mj_per_prefill_token:.3g} mJ/prompt token")
        return ", ".join(parts)
