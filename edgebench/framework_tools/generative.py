"""What a generative cell asks a framework's own tool for, and what the tool measured
(llama-bench: edgebench/framework_tools/llama_bench.py; MNN's llm_bench: mnn_llm_bench.py).
The record's part is made from it by the framework-tools runner kind
(measure/methods/framework_tools.py): this stage imports no record types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class GenerativeWork(Protocol):
    """What a generative cell asks a tool for (planning's ``GenerativeWorkload``)."""

    @property
    def prompt_tokens(self) -> tuple[int, ...]: ...
    @property
    def gen_tokens(self) -> int: ...
    @property
    def context_depth(self) -> int: ...
    @property
    def repetitions(self) -> int: ...
    @property
    def warmup(self) -> int: ...


@dataclass
class ToolGeneration:
    """What a tool measured for a generative cell, named as the record's ``generation`` part
    (results/generation_part.py) names it: per repetition, each prefill test's time with its
    prompt length and the decode test's wall over ``decode_wall_tokens`` tokens; and what the
    tool does not give, with why."""

    weight_type: str
    gen_tokens: int
    context_depth: int
    decode_wall_ms: list[float]
    decode_wall_tokens: int
    prefill_prompt_tokens: list[int]
    prefill_ms: list[float]
    unavailable: dict[str, str]


class SizedTest:
    """A tool's test by its sizes, as llama-bench and llm_bench name them: a prompt test
    (``n_prompt`` tokens, none generated) or a generation test (``n_gen`` tokens, no prompt).
    A dataclass that has both fields gets these."""

    n_prompt: int
    n_gen: int

    @property
    def is_prompt(self) -> bool:
        return self.n_prompt > 0 and self.n_gen == 0

    @property
    def is_generation(self) -> bool:
        return self.n_prompt == 0 and self.n_gen > 0
