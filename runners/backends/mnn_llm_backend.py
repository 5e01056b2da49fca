"""MNN-LLM, MNN's LLM engine (``MNN.llm`` in the mnn wheel; transformers/llm/engine in MNN's
source), on the CPU: a model folder (``config.json``, ``llm.mnn`` and its weights, the
embeddings, the tokenizer), the one edgebench's converter writes from a GGUF
(converters/mnn_llm) or one MNN's own ``llmexport.py`` wrote.

The threads go to the engine's ``thread_num`` and the loaded context to ``max_all_tokens``
(``set_config`` before ``load``: the folder itself is never written to). The engine's own
``generate`` samples inside and returns the tokens only at the end, so each token is driven
here, as llama.cpp's is: ``forward`` of the prompt's ids in one call (the prefill; the engine
looks up their embeddings and fills its key/value cache), then one ``forward`` per new token;
greedy is ``numpy.argmax`` over the last position's logits, each token handed to ``on_token``
as it is chosen. Nothing stops early: end of sequence is never looked at (and the folders
edgebench writes declare no stop token). ``generate_init`` before each call empties the cache.
``first_logits`` reads the prompt's ``forward``. The engine reports no key/value cache size.

Runs on the device: Python 3.8+, stdlib + numpy + MNN only.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, List, Optional

from ..protocol.errors import BackendError
from ..protocol.model_folders import (
    FOLDER_WEIGHT_TYPES,
    MNN_LLM_CONFIG_FILE,
    MNN_LLM_OWN_FOLDER,
    read_weight_type,
)
from .generative import GenerativeBackend

FRAMEWORK = "mnn-llm"
REQUIRES = ("MNN",)
PIP_EXTRA = "mnn"

CONFIG_FILE = MNN_LLM_CONFIG_FILE
#: The weight type of a folder edgebench did not write (llmexport's).
OWN_FOLDER = MNN_LLM_OWN_FOLDER
#: Files the engine reads, by config key -> its default name (llmconfig.hpp).
NEEDED = {
    "llm_model": "llm.mnn",
    "llm_weight": "llm.mnn.weight",
    "tokenizer_file": "tokenizer.txt",
}
#: LlmStatus.RUNNING: what a successful ``load`` leaves.
RUNNING = 0


class MnnLlmBackend(GenerativeBackend):
    name = FRAMEWORK
    weight_types = FOLDER_WEIGHT_TYPES

    def __init__(self) -> None:
        import MNN
        import MNN.llm

        self._mnn: Any = MNN
        self._llm: Any = None
        self._weights = OWN_FOLDER

    def version(self) -> str:
        return str(self._mnn.version())

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        folder = model_path if os.path.isdir(model_path) else os.path.dirname(model_path)
        config_path = os.path.join(folder, CONFIG_FILE)
        missing = [name for name in needed_files(config_path) if not os.path.isfile(name)]
        if missing:
            raise BackendError(
                "model_load",
                "%s needs an MNN-LLM model folder; %s has no %s (convert the GGUF with edgebench)"
                % (FRAMEWORK, folder or ".", os.path.basename(missing[0])),
            )
        self._weights = read_weight_type(folder, OWN_FOLDER)
        llm = self._mnn.llm.create(config_path)
        llm.set_config({"thread_num": int(threads), "max_all_tokens": int(context_tokens)})
        llm.load()
        if int(llm.context.status) != RUNNING:
            raise BackendError(
                "model_load", "%s cannot load %s (MNN's log above says why)" % (FRAMEWORK, folder)
            )
        self._llm = llm

    def weight_type(self) -> str:
        return self._weights

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        import numpy as np

        llm = self._loaded()
        llm.generate_init()
        logits = llm.forward(list(prompt))
        for produced in range(new_tokens):
            if logits is None:
                raise BackendError(
                    "inference",
                    "%s stopped after %d of %d tokens" % (FRAMEWORK, produced, new_tokens),
                )
            token = int(np.argmax(logits.read().reshape(-1)))
            on_token(token)
            if produced + 1 < new_tokens:
                logits = llm.forward([token])

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        import numpy as np

        llm = self._loaded()
        llm.generate_init()
        logits = llm.forward(list(prompt))
        if logits is None:
            raise BackendError("inference", "%s returned no logits for the prompt" % FRAMEWORK)
        values = np.asarray(logits.read(), dtype=np.float32)
        return values.reshape(-1, values.shape[-1])[-1].copy()

    def close(self) -> None:
        self._llm = None

    def _loaded(self) -> Any:
        if self._llm is None:
            raise BackendError("inference", "%s: generate before load" % FRAMEWORK)
        return self._llm


def needed_files(config_path: str) -> List[str]:
    """The config and the files it names that the engine cannot load without."""
    try:
        with open(config_path) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return [config_path]
    base = str(config.get("base_dir") or os.path.dirname(config_path))
    return [config_path] + [
        os.path.join(base, str(config.get(key, default))) for key, default in NEEDED.items()
    ]


BACKEND = MnnLlmBackend
