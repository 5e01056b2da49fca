"""The workload of a generative cell: ``RunSpec.generation`` (spec.py), read and checked strictly.

The host picks the prompt's token ids (the same for every runtime); the runner feeds
``prompt[:n]`` for each prefill test, ``prompt[:context_depth]`` (at least one token) before the
decode test and ``prompt[:check_prompt]`` before the output check's greedy tokens
(generation.py says what each test times).

Standard library only, Python 3.8, imports nothing from the host package.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Tuple

#: The most tokens a prompt, a test or a context may hold (the host's MAX_CONTEXT_TOKENS).
MAX_TOKENS = 1 << 20
#: The most warm-up runs or repetitions of one test.
MAX_RUNS = 1000000
#: Token ids are vocabulary indices; every runtime takes them as 32-bit integers.
MAX_TOKEN_ID = 2**31 - 1
#: Room the context is loaded with beyond the most any test needs (``context_tokens`` 0).
CONTEXT_SLACK = 8

#: Integer fields, each (smallest, largest) allowed.
_BOUNDS: Dict[str, Tuple[int, int]] = {
    "gen_tokens": (1, MAX_TOKENS),
    "context_depth": (0, MAX_TOKENS),
    "repetitions": (1, MAX_RUNS),
    "warmup": (0, MAX_RUNS),
    "check_tokens": (1, MAX_TOKENS),
    "check_prompt": (1, MAX_TOKENS),
    "context_tokens": (0, MAX_TOKENS),
}


class GenerationSpecError(ValueError):
    """The generation spec is malformed (spec.py reports it as its SpecError)."""


@dataclass
class GenerationSpec:
    """What a generative cell runs: one prefill test per ``prompt_tokens`` length, the decode
    test, each ``warmup`` times untimed then ``repetitions`` times, and the output check."""

    #: The prompt's token ids; at least as long as any test feeds.
    prompt: List[int]
    #: One prefill test per length: feed ``prompt[:n]``, produce one token.
    prompt_tokens: List[int] = field(default_factory=lambda: [128, 512])
    #: The decode test: exactly this many tokens, greedy, end of sequence ignored...
    gen_tokens: int = 128
    #: ... after this many prompt tokens (0: after one).
    context_depth: int = 0
    repetitions: int = 3
    warmup: int = 1
    #: The output check: this many greedy tokens after ``prompt[:check_prompt]``.
    check_tokens: int = 8
    check_prompt: int = 16
    #: The context the model is loaded with (0: the most any test needs + CONTEXT_SLACK).
    context_tokens: int = 0

    @classmethod
    def from_json(cls, raw: Any) -> GenerationSpec:
        """The generation spec in ``raw``, checked; GenerationSpecError (one line) when
        malformed."""
        if not isinstance(raw, dict):
            raise GenerationSpecError("spec field 'generation' must be an object or null")
        if "prompt" not in raw:
            raise GenerationSpecError(
                "spec field 'generation.prompt' is missing (the prompt's token ids)"
            )
        known = {f.name for f in fields(cls)}
        spec = cls(**{key: value for key, value in raw.items() if key in known})
        spec.prompt = _ids(spec.prompt, "prompt", 0, MAX_TOKEN_ID)
        spec.prompt_tokens = _ids(spec.prompt_tokens, "prompt_tokens", 1, MAX_TOKENS)
        for key, (low, high) in _BOUNDS.items():
            _check_whole(getattr(spec, key), key, low, high)
        spec.check_lengths()
        return spec

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    def prompt_needed(self) -> int:
        """The most prompt tokens any test feeds."""
        return max([*self.prompt_tokens, self.decode_prompt(), self.check_prompt])

    def decode_prompt(self) -> int:
        """The prompt tokens fed before the decode test."""
        return max(self.context_depth, 1)

    def context_needed(self) -> int:
        """The most tokens any test holds in context at once (prompt and generated)."""
        prefill = max(self.prompt_tokens) + 1
        decode = self.decode_prompt() + self.gen_tokens
        return max(prefill, decode, self.check_prompt + self.check_tokens)

    def context(self) -> int:
        """The context to load the model with."""
        return self.context_tokens or self.context_needed() + CONTEXT_SLACK

    def check_lengths(self) -> None:
        """GenerationSpecError when the prompt is shorter than a test feeds, or the context
        than a test holds."""
        needed = self.prompt_needed()
        if len(self.prompt) < needed:
            raise GenerationSpecError(
                "spec field 'generation.prompt' has %d tokens; the tests feed up to %d "
                "(prompt_tokens, context_depth, check_prompt): give a longer prompt"
                % (len(self.prompt), needed)
            )
        held = self.context_needed()
        if self.context_tokens and self.context_tokens < held:
            raise GenerationSpecError(
                "spec field 'generation.context_tokens' is %d, but the tests hold up to %d "
                "tokens (prompt and generated): raise it or shorten the tests"
                % (self.context_tokens, held)
            )


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_whole(value: Any, key: str, low: int, high: int) -> None:
    if not _is_whole(value) or not low <= value <= high:
        raise GenerationSpecError(
            "spec field 'generation.%s' must be an integer from %d to %d, not %r"
            % (key, low, high, value)
        )


def _ids(value: Any, key: str, low: int, high: int) -> List[int]:
    """``value`` as a list of integers each from ``low`` to ``high``."""
    if not isinstance(value, list) or not value:
        raise GenerationSpecError(
            "spec field 'generation.%s' must be a non-empty list of integers" % key
        )
    for index, item in enumerate(value):
        if not _is_whole(item) or not low <= item <= high:
            raise GenerationSpecError(
                "spec field 'generation.%s[%d]' must be an integer from %d to %d, not %r"
                % (key, index, low, high, item)
            )
    if len(value) > MAX_TOKENS:
        raise GenerationSpecError(
            "spec field 'generation.%s' holds %d items, over %d" % (key, len(value), MAX_TOKENS)
        )
    return list(value)
