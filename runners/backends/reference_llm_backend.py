"""edgebench's numpy reference for generative models: the runtime whose first logits and greedy
tokens every other generative runtime is checked against (as ONNX Runtime on the CPU is for
tensor models). Never ranked; slow by design.

It reads a llama or qwen2 GGUF file (runners/protocol/gguf.py) and computes it in float32
(runners/llm_math.py). The reference's rule for quantized files: every weight is dequantized
to float32 at load, so a q8_0 or q4_0 file is computed as exactly the values it stores, with
float32 activations and a float32 key/value cache; a runtime that keeps its activations in 8
bits differs from it by that much. ``generate`` prefills the prompt in one batched pass, then
decodes one token per step against the cache. numpy's BLAS runs on the threads its environment
gives it (``OPENBLAS_NUM_THREADS`` and friends); ``threads`` is not applied here.

Runs on the device: Python 3.8+, stdlib + numpy only.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional

from ..llm_math import Decoder, load_weights
from ..protocol.errors import BackendError
from ..protocol.llm_shape import ModelError, decoder_shape, file_weight_type
from .generative import WEIGHT_TYPES, GenerativeBackend

FRAMEWORK = "reference-llm"
REQUIRES = ("numpy",)
#: numpy is one of edgebench's own dependencies: no extra installs the reference.
PIP_EXTRA = None


class ReferenceLlmBackend(GenerativeBackend):
    name = FRAMEWORK
    weight_types = WEIGHT_TYPES

    def __init__(self) -> None:
        self._decoder: Optional[Decoder] = None
        self._weight_type = "unknown"

    def version(self) -> str:
        import numpy

        return "numpy-%s" % numpy.__version__

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        from ..protocol.gguf import GgufError, read_gguf

        label = os.path.basename(model_path)
        try:
            model = read_gguf(model_path)
            shape = decoder_shape(model.metadata)
            if context_tokens > shape.context_length:
                raise ModelError(
                    "a context of %d tokens exceeds the model's context_length %d"
                    % (context_tokens, shape.context_length),
                    unsupported=True,
                )
            weights = load_weights(shape, list(model.tensors), model.tensor)
            types = {name: info.ggml_type for name, info in model.tensors.items()}
            self._weight_type = file_weight_type(model.metadata, types)
        except ModelError as exc:
            kind = "unsupported" if exc.unsupported else "model_load"
            raise BackendError(kind, "reference-llm cannot run %s: %s" % (label, exc)) from None
        except GgufError as exc:  # its line names the file
            raise BackendError("model_load", "reference-llm cannot read %s" % exc) from None
        except MemoryError:
            raise BackendError(
                "out_of_memory", "reference-llm ran out of memory expanding %s to float32" % label
            ) from None
        self._decoder = Decoder(shape, weights, max(1, context_tokens))

    def weight_type(self) -> str:
        return self._weight_type

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        decoder = self._loaded()
        if new_tokens < 1:
            raise BackendError("bad_spec", "reference-llm generates at least one token")
        if len(prompt) + new_tokens - 1 > decoder.context:
            raise BackendError(
                "bad_spec",
                "reference-llm: a prompt of %d tokens and %d new tokens overflow its context of %d"
                % (len(prompt), new_tokens, decoder.context),
            )
        logits = self._prefill(decoder, prompt)
        for step in range(new_tokens):
            token = int(logits.argmax())
            on_token(token)
            if step + 1 < new_tokens:
                logits = decoder.forward([token])

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        return self._prefill(self._loaded(), prompt)

    def kv_cache_bytes(self) -> Optional[int]:
        return self._decoder.cache_bytes() if self._decoder is not None else None

    def close(self) -> None:
        self._decoder = None

    def _loaded(self) -> Decoder:
        if self._decoder is None:
            raise BackendError("internal", "reference-llm was asked to run before load")
        return self._decoder

    @staticmethod
    def _prefill(decoder: Decoder, prompt: List[int]) -> Any:
        decoder.reset()
        try:
            return decoder.forward(prompt)
        except ValueError as exc:
            raise BackendError(
                "bad_spec", "reference-llm cannot feed the prompt: %s" % exc
            ) from None


BACKEND = ReferenceLlmBackend
