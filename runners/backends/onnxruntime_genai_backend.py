"""ONNX Runtime GenAI on the CPU: a model folder (``genai_config.json`` and the ONNX decoder),
the one edgebench's converter writes from a GGUF (converters/ort_genai) or the runtime's own.

The threads go to the decoder's session (``intra_op_num_threads``, one inter-op thread) through
a config overlay, so the folder itself is never written to. Each ``generate`` makes a fresh
``Generator``: the prompt's ids in one ``append_tokens`` (the prefill, whose logits are then
ready), then one ``generate_next_token`` per token, greedy, each handed to ``on_token`` as it is
chosen. Making a Generator costs a fixed ~15 ms (whatever its length), setup rather than
prefill, as llama.cpp's context is made at load: so each call's generator is made before the
clock starts (at load, then after each call), with room for the loaded context.
``min_length`` equals ``max_length``, so the search never ends early: end of sequence cannot
end a run (the search then never picks it, as OpenVINO GenAI's ``min_new_tokens``).
``first_logits`` reads the ``logits`` output after the prompt. No tokenizer is loaded.

Runs on the device: Python 3.8+, stdlib + numpy + onnxruntime_genai only.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, List, Optional

from ..protocol.errors import BackendError
from ..protocol.model_folders import FOLDER_WEIGHT_TYPES, read_weight_type
from .generative import GenerativeBackend

FRAMEWORK = "onnxruntime-genai"
REQUIRES = ("onnxruntime_genai",)
PIP_EXTRA = "onnxruntime-genai"

CONFIG_FILE = "genai_config.json"
#: The weight type of a folder edgebench did not write (the runtime's own builder's).
OWN_FOLDER = "ort-genai-model"


class OnnxRuntimeGenAiBackend(GenerativeBackend):
    name = FRAMEWORK
    weight_types = FOLDER_WEIGHT_TYPES

    def __init__(self) -> None:
        import onnxruntime_genai

        self._og: Any = onnxruntime_genai
        self._model: Any = None
        self._weights = OWN_FOLDER
        #: The generator the next ``generate`` uses, made after the previous one ended
        #: (a Generator costs ~15 ms to make, whatever its length: the runtime's setup, not
        #: the prompt's prefill), with room for ``_room`` tokens (the loaded context).
        self._next: Any = None
        self._room = 0

    def version(self) -> str:
        return str(getattr(self._og, "__version__", "unknown"))

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        folder = model_path if os.path.isdir(model_path) else os.path.dirname(model_path)
        if not os.path.isfile(os.path.join(folder, CONFIG_FILE)):
            raise BackendError(
                "model_load",
                "%s needs a model folder with %s; %s has none (convert the GGUF with edgebench)"
                % (FRAMEWORK, CONFIG_FILE, folder or "."),
            )
        self._weights = read_weight_type(folder, OWN_FOLDER)
        options = {"intra_op_num_threads": int(threads), "inter_op_num_threads": 1}
        try:
            config = self._og.Config(folder)
            config.clear_providers()  # the CPU
            config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
            self._model = self._og.Model(config)
            self._room = max(int(context_tokens), 1)
            self._next = self._fresh(self._room)
        except Exception as exc:
            line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BackendError(
                "model_load", "%s cannot load %s: %s" % (FRAMEWORK, folder, line), str(exc)
            ) from exc

    def weight_type(self) -> str:
        return self._weights

    def _fresh(self, length: int) -> Any:
        """A new generator with room for ``length`` tokens (min_length too: never done early)."""
        params = self._og.GeneratorParams(self._model)
        params.set_search_options(
            do_sample=False, max_length=length, min_length=length, num_beams=1
        )
        return self._og.Generator(self._model, params)

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        import numpy as np

        needed = len(prompt) + int(new_tokens)
        prepared, self._next = self._next, None
        generator = prepared if prepared is not None and needed <= self._room else None
        generator = generator or self._fresh(needed)
        generator.append_tokens(np.asarray([prompt], dtype=np.int32))
        for produced in range(new_tokens):
            if generator.is_done():
                raise BackendError(
                    "inference",
                    "%s stopped after %d of %d tokens" % (FRAMEWORK, produced, new_tokens),
                )
            generator.generate_next_token()
            on_token(int(generator.get_next_tokens()[0]))
        del generator  # its cache goes before the next one is made
        self._next = self._fresh(self._room)

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        import numpy as np

        generator = self._fresh(len(prompt) + 1)
        generator.append_tokens(np.asarray([prompt], dtype=np.int32))
        logits = np.asarray(generator.get_output("logits"))
        return logits.reshape(-1, logits.shape[-1])[-1].astype(np.float32)

    def close(self) -> None:
        self._next = None
        self._model = None


BACKEND = OnnxRuntimeGenAiBackend
