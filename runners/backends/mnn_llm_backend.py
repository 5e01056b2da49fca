"""MNN-LLM, MNN's LLM engine (``MNN.llm`` in the mnn wheel; transformers/llm/engine in MNN's
source): declared so that its cells say in one line why edgebench cannot measure it yet.

MNN-LLM runs a model folder (``llm.mnn``, ``llm.mnn.weight``, ``llm_config.json``, the
tokenizer) that MNN's ``llmexport.py`` exports from a Hugging Face model with torch; MNN's
``gguf2mnn.py`` only swaps a GGUF's weights into such a folder, it does not make one. edgebench
does not write that graph from a GGUF yet (as it writes ONNX Runtime GenAI's), nor run a folder
a user exported. Until it does, the runner reports the framework ``unsupported`` with this
reason before importing MNN.

Runs on the device: Python 3.8+, stdlib only.
"""

from __future__ import annotations

from typing import Callable, List

from .base import BackendError
from .generative import GenerativeBackend

FRAMEWORK = "mnn-llm"
REQUIRES = ("MNN",)
PIP_EXTRA = "mnn"

WHY_NOT = (
    "mnn-llm runs MNN-LLM model folders (llm.mnn, llm_config.json) that only MNN's llmexport.py "
    "writes, with torch; edgebench cannot make one from a GGUF yet"
)


def _not_yet() -> None:
    raise BackendError("unsupported", WHY_NOT)


DEVICE_CHECK = _not_yet


class MnnLlmBackend(GenerativeBackend):
    """What the runner would drive; every entry says why it cannot (``WHY_NOT``)."""

    name = FRAMEWORK

    def version(self) -> str:
        raise BackendError("unsupported", WHY_NOT)

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        raise BackendError("unsupported", WHY_NOT)

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        raise BackendError("unsupported", WHY_NOT)


BACKEND = MnnLlmBackend
