"""The workload of a generative cell (prompt tokens, generated tokens, context depth), the
prompt every runtime is given, and the spec's ``generation`` object the runner reads
(runners/protocol/generation_spec.py). See docs/generative.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgebench.runners.protocol.generation_spec import GenerationSpec

#: Untimed runs of each test before its repetitions, and the repetitions in one visit (the
#: rounds interleave visits as for tensor cells).
GENERATIVE_WARMUP = 1
GENERATIVE_REPETITIONS = 3
#: The output check: greedy tokens compared after a prompt of this many tokens.
CHECK_PROMPT_TOKENS = 16
CHECK_TOKENS = 8
#: Room in the loaded context beyond the longest test (a runtime may reserve a token or two).
CONTEXT_SLACK = 8


@dataclass(frozen=True)
class GenerativeWorkload:
    """What a generative cell measures (the ``--prompt-tokens``, ``--gen-tokens`` and
    ``--context-depth`` settings)."""

    prompt_tokens: tuple[int, ...] = (128, 512)
    gen_tokens: int = 128
    context_depth: int = 0
    repetitions: int = GENERATIVE_REPETITIONS
    warmup: int = GENERATIVE_WARMUP

    @property
    def prompt_length(self) -> int:
        """Tokens of prompt the cell needs: the longest prefill test, the decode test's
        context and the output check's prompt."""
        return max(*self.prompt_tokens, self.context_depth, CHECK_PROMPT_TOKENS, 1)

    @property
    def context_tokens(self) -> int:
        """The context the runtime loads with: the longest test, and some slack."""
        longest = max(
            max(self.prompt_tokens) + 1,
            max(self.context_depth, 1) + self.gen_tokens,
            CHECK_PROMPT_TOKENS + CHECK_TOKENS,
        )
        return longest + CONTEXT_SLACK

    def correctness_only(self) -> GenerativeWorkload:
        """The least workload that still yields the output check (an emulated CPU): one short
        prefill test, a few decode tokens, one repetition, no warm-up."""
        return GenerativeWorkload(
            prompt_tokens=(CHECK_PROMPT_TOKENS,),
            gen_tokens=min(self.gen_tokens, CHECK_TOKENS),
            context_depth=0,
            repetitions=1,
            warmup=0,
        )


def prompt_ids(ordinary: Sequence[int], length: int, seed: int) -> list[int]:
    """``length`` token ids drawn (seeded) from the model's ordinary tokens: the same prompt
    for every runtime, never a control token that would end or reshape the text."""
    if not len(ordinary):
        raise ValueError("the model's vocabulary has no ordinary tokens")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(ordinary), size=length)
    return [int(ordinary[i]) for i in picks]


def generation_spec(workload: GenerativeWorkload, prompt: list[int]) -> GenerationSpec:
    """The spec's ``generation`` part (runners/protocol/generation_spec.py documents each field)."""
    return GenerationSpec(
        prompt=prompt,
        prompt_tokens=list(workload.prompt_tokens),
        gen_tokens=workload.gen_tokens,
        context_depth=workload.context_depth,
        repetitions=workload.repetitions,
        warmup=workload.warmup,
        check_tokens=CHECK_TOKENS,
        check_prompt=CHECK_PROMPT_TOKENS,
        context_tokens=workload.context_tokens,
    )
