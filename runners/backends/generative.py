"""The contract every generative runtime of the on-device runner fulfils (llama.cpp, MNN-LLM,
ONNX Runtime GenAI, OpenVINO GenAI, and the numpy reference).

A generative backend module is found like any other (``*_backend.py`` with ``FRAMEWORK``,
``REQUIRES``, ``BACKEND``; backends/__init__.py), and its ``BACKEND`` subclasses
``GenerativeBackend`` instead of ``Backend``. The runner, not the backend, owns the clock: it
calls ``generate`` and timestamps every ``on_token`` call with one monotonic timer, so time to
first token, prefill and decode rates and the per-token latencies mean the same thing for every
runtime (runners/generation.py).

Runs on the device: Python 3.8+, stdlib + numpy + the runtime only.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

#: The weight types a generative cell can ask for (GGUF names); each runtime maps them to its
#: nearest form and says which ran (``weight_type``).
WEIGHT_TYPES = ("f32", "f16", "q8_0", "q4_0")


class GenerativeBackend:
    """One generative runtime.

    Lifecycle: ``load`` once, then ``generate`` any number of times (each call starts from an
    empty cache: a repetition never reuses the previous one's context), then ``close``.
    """

    #: The framework name (its module's FRAMEWORK), for messages.
    name = ""
    #: Weight types it can run (``WEIGHT_TYPES``).
    weight_types: Tuple[str, ...] = ("f16",)

    def version(self) -> str:
        raise NotImplementedError

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        """Load the model (a .gguf file, or the runtime's own folder) to run on ``threads``
        threads with room for ``context_tokens`` tokens of context. Raises ``BackendError``
        (base.py) with kind ``model_load`` or ``unsupported`` and one line naming why."""
        raise NotImplementedError

    def weight_type(self) -> str:
        """The weight type that actually runs (``f16``, ``q8_0``, ``q4_0``, or the runtime's own
        name for its nearest form, such as ``int4-sym``)."""
        raise NotImplementedError

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        """Feed ``prompt`` (token ids, fed as ids, never as text), then decode greedily exactly
        ``new_tokens`` tokens, end-of-sequence ignored, calling ``on_token(token_id)`` as each
        one is produced (the first call ends the prefill)."""
        raise NotImplementedError

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        """The logits of the last prompt position after feeding ``prompt`` (a 1-D float
        numpy array over the vocabulary), or None where the runtime's API gives none (the
        output check then compares greedy tokens)."""
        return None

    def kv_cache_bytes(self) -> Optional[int]:
        """The KV cache's size in bytes as the runtime reports it, or None."""
        return None

    def close(self) -> None:
        """Free the model; the default does nothing."""
