"""OpenVINO GenAI's ``LLMPipeline`` on the CPU: a GGUF file read as is (llama, qwen2, qwen3), or
OpenVINO's own exported model folder.

The prompt goes in as token ids (an ``ov.Tensor`` of input_ids: the tokenizer never runs),
decoding is greedy with end of sequence ignored and the minimum and maximum new tokens equal,
and a ``StreamerBase`` hands each token to the runner's ``on_token`` as the pipeline produces
it (one ``write`` per token). Prefix caching is off (``_scheduler``): no call reuses an earlier
call's KV cache. Its own ``PerfMetrics`` of the last call are kept
(``perf_metrics``) to set beside the runner's figures.

The pipeline gives no logits. For the output check, ``first_logits`` has the pipeline save the
model it built from the GGUF (``enable_save_ov_model``, into a scratch folder through a link to
the file, never beside it) and runs that model once with OpenVINO itself: the same graph on
the same plugin, after the timed tests (the cell's peak memory is taken before).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections import Counter
from typing import Any, Callable, Dict, List, Optional

from ..protocol.errors import BackendError
from ..protocol.gguf import GgufError, GgufFile, read_gguf
from .generative import GenerativeBackend
from .openvino_backend import reason_line

FRAMEWORK = "openvino-genai"
REQUIRES = ("openvino_genai",)
PIP_EXTRA = "openvino-genai"

#: Architectures its GGUF reader builds (the default ``GGUF_READER``, "LEGACY").
ARCHITECTURES = ("llama", "qwen2", "qwen3")
#: GGUF weight types it loads (f32 matrices: "Unsupported quantization type").
WEIGHT_TYPES = ("f16", "q8_0", "q4_0")
#: ``general.file_type`` values of f32 and f16 files (llama.cpp's ALL_F32, MOSTLY_F16).
UNQUANTIZED_FILE_TYPES = (0, 1)
#: The weight type of a model folder OpenVINO exported itself (its own compression).
OWN_FOLDER = "openvino-ir"
#: The model file of such a folder, and of the one the pipeline saves.
MODEL_XML = "openvino_model.xml"

log = logging.getLogger(__name__)


class OpenVinoGenAiBackend(GenerativeBackend):
    name = FRAMEWORK
    weight_types = WEIGHT_TYPES

    def __init__(self) -> None:
        import openvino_genai

        self._genai: Any = openvino_genai
        self._streamer = streamer_type(openvino_genai)
        self._pipe: Any = None
        self._weights = OWN_FOLDER
        self._model_path = ""
        self._threads = 1
        #: The pipeline's own PerfMetrics of the last ``generate``.
        self.perf_metrics: Any = None

    def version(self) -> str:
        return str(self._genai.get_version())

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        # The stateful pipeline grows its KV cache as the context does: nothing to size here.
        if not os.path.isdir(model_path):
            self._weights = check_gguf(model_path)
        self._model_path, self._threads = model_path, int(threads)
        try:
            self._pipe = self._genai.LLMPipeline(
                model_path,
                "CPU",
                scheduler_config=self._scheduler(context_tokens),
                INFERENCE_NUM_THREADS=int(threads),
            )
        except Exception as exc:
            line = reason_line(str(exc))
            kind = "unsupported" if "Unsupported" in line else "model_load"
            raise BackendError(
                kind, "%s cannot load %s: %s" % (FRAMEWORK, model_path, line), str(exc)
            ) from exc

    def weight_type(self) -> str:
        return self._weights

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        import numpy as np
        import openvino

        config = self._genai.GenerationConfig()
        config.do_sample = False
        config.ignore_eos = True
        config.min_new_tokens = new_tokens
        config.max_new_tokens = new_tokens
        ids = openvino.Tensor(np.asarray([prompt], dtype=np.int64))
        streamed: List[int] = []

        def hand_over(token: int) -> None:
            streamed.append(token)
            on_token(token)

        result = self._pipe.generate(ids, config, self._streamer(hand_over))
        self.perf_metrics = result.perf_metrics
        produced = [int(t) for t in result.tokens[0]]
        if streamed != produced:  # the streamer must see each token once, as it is produced
            raise BackendError(
                "inference",
                "%s streamed %d tokens but returned %d, or others"
                % (FRAMEWORK, len(streamed), len(produced)),
            )

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        import numpy as np

        request = self._model_request()
        if request is None:
            return None
        inputs = {i.get_any_name() for i in request.model_inputs}
        count = len(prompt)
        feed: Dict[str, Any] = {
            "input_ids": np.asarray([prompt], dtype=np.int64),
            "attention_mask": np.ones((1, count), dtype=np.int64),
            "position_ids": np.arange(count, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, dtype=np.int32),
        }
        request.reset_state()  # the model keeps its KV cache as state
        outputs = request.infer({k: v for k, v in feed.items() if k in inputs})
        return np.asarray(outputs["logits"])[0, -1].astype(np.float32)

    def _model_request(self) -> Optional[Any]:
        """An infer request of the model the pipeline runs (saved by a second pipeline from
        a link in a scratch folder), or None when it could not be had (logged)."""
        import openvino

        scratch = tempfile.mkdtemp(prefix="edgebench-ov-genai-")
        try:
            folder = self._model_path
            if not os.path.isdir(folder):
                link = os.path.join(scratch, os.path.basename(folder))
                os.symlink(os.path.abspath(folder), link)
                self._genai.LLMPipeline(
                    link, "CPU", enable_save_ov_model=True, INFERENCE_NUM_THREADS=self._threads
                )
                folder = scratch
            # At f32: the graph the pipeline built is checked against the reference's math here
            # (a CPU with bf16 would otherwise compile this copy at bf16, which the pipeline's
            # own run does not match); the pipeline's numerics are checked by its greedy tokens.
            config = {"INFERENCE_NUM_THREADS": self._threads, "INFERENCE_PRECISION_HINT": "f32"}
            model = openvino.Core().compile_model(os.path.join(folder, MODEL_XML), "CPU", config)
            return model.create_infer_request()
        except Exception as exc:  # the check falls back to greedy tokens
            log.warning("%s: no logits for the output check: %s", FRAMEWORK, reason_line(str(exc)))
            return None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _scheduler(self, context_tokens: int) -> Any:
        """The pipeline's scheduler with prefix caching off: by default the pipeline keeps
        the KV blocks of earlier prompts and reuses them for a prompt that starts the same way,
        so a repetition of the same prompt (and a longer prompt after its prefix) would time a
        cached prefill (checked: 512 tokens in 1.5 ms repeated against 2.9 ms fresh on
        llm-tiny). Every runtime starts each call from an empty cache. A whole prompt is
        scheduled at once, as llama.cpp's one-batch prefill."""
        config = self._genai.SchedulerConfig()
        config.enable_prefix_caching = False
        config.max_num_batched_tokens = max(int(context_tokens), config.max_num_batched_tokens)
        return config

    def close(self) -> None:
        self._pipe = None


def check_gguf(path: str) -> str:
    """The weight type of the GGUF file at ``path``, once its header shows the pipeline can
    read it; BackendError (one line) before a load that would fail after seconds."""
    try:
        gguf = read_gguf(path)
        weights = stored_weight_type(gguf)
    except GgufError as exc:
        raise BackendError("model_load", str(exc)) from None
    architecture = gguf.metadata.get("general.architecture")
    if architecture not in ARCHITECTURES:
        raise BackendError(
            "unsupported",
            "%s reads GGUF models of architecture %s, not %r"
            % (FRAMEWORK, ", ".join(ARCHITECTURES), architecture),
        )
    if weights not in WEIGHT_TYPES:
        raise BackendError(
            "unsupported",
            "%s reads GGUF weights stored at %s, not %s (convert the model to one of them)"
            % (FRAMEWORK, ", ".join(WEIGHT_TYPES), weights),
        )
    declared = gguf.metadata.get("general.file_type")
    if declared is None:  # the pipeline fails with "unordered_map::at"
        raise BackendError(
            "model_load",
            "%s has no general.file_type, which %s's GGUF reader needs" % (path, FRAMEWORK),
        )
    if declared in UNQUANTIZED_FILE_TYPES and weights not in ("f32", "f16"):
        # it would look for the quantized weights' scales under the declared type's names
        raise BackendError(
            "model_load",
            "%s declares unquantized weights (general.file_type %s) but stores them at %s; "
            "%s reads them by the declared type" % (path, declared, weights, FRAMEWORK),
        )
    return weights


def stored_weight_type(gguf: GgufFile) -> str:
    """The type most of the file's weight matrices are stored at, by GGUF's name (``q8_0``)."""
    kinds = Counter(t.ggml_type for t in gguf.tensors.values() if len(t.shape) >= 2)
    if not kinds:
        raise GgufError("%s holds no weight matrices" % gguf.path)
    return kinds.most_common(1)[0][0].lower()


def streamer_type(genai: Any) -> Any:
    """A StreamerBase that hands each token to its ``on_token`` (``write`` gets one token id,
    or a list of them where the pipeline produced several at once)."""

    class TokenStreamer(genai.StreamerBase):
        def __init__(self, on_token: Callable[[int], None]) -> None:
            super().__init__()
            self.on_token = on_token

        def write(self, token: Any) -> Any:
            for one in token if isinstance(token, (list, tuple)) else [token]:
                self.on_token(int(one))
            return genai.StreamingStatus.RUNNING

        def end(self) -> None:
            pass

    return TokenStreamer


BACKEND = OpenVinoGenAiBackend
