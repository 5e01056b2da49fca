"""llama.cpp through llama-cpp-python's low-level binding: its C API called step by step.

The prompt goes in as token ids in one ``llama_decode`` (chunks of ``n_batch`` only past 2048
tokens), only its last position asking for logits, as llama-bench's prompt test does; then one
``llama_decode`` per new token. Greedy is ``numpy.argmax`` over the last position's logits: the
tie rule of the reference-llm backend, and cheaper than llama.cpp's greedy sampler, which
copies the whole vocabulary into a candidates array per token. The KV cache is cleared at the
start of every ``generate`` (the binding's high-level ``Llama`` would reuse a matching prefix).

Batch sizes and flash attention are llama-bench's defaults (n_batch 2048, n_ubatch 512, flash
attention auto), set here rather than inherited so a new default cannot drift the comparison.

llama.cpp's log never reaches a stream: a callback keeps its last lines, from which a failed
load takes its reason and ``kv_cache_bytes`` its size.

Building (no binary wheel): ``CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=ON -DGGML_BLAS=OFF"
pip install 'edgebench[llama-cpp]'``: the CPU backend tuned for the building machine, no
multimodal library (the runner never uses it), no BLAS (llama-bench's CPU figures use ggml's
own kernels).

Runs on the device: Python 3.8+, stdlib + numpy + llama_cpp only.
"""

from __future__ import annotations

import collections
import ctypes
import re
from typing import Any, Callable, Deque, List, Optional

from ..protocol.errors import BackendError
from .generative import GenerativeBackend

FRAMEWORK = "llama.cpp"
REQUIRES = ("llama_cpp",)
PIP_EXTRA = "llama-cpp"

#: llama-bench's defaults (tools/llama-bench: ``-b 2048 -ub 512``): a 512-token prompt is one
#: micro-batch.
N_BATCH = 2048
N_UBATCH = 512
#: LLAMA_FLASH_ATTN_TYPE_AUTO, llama-bench's default.
FLASH_ATTN_AUTO = -1
#: llama_ftype values (llama.h) by GGUF weight-type name; LLAMA_FTYPE_GUESSED is a flag.
FILE_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 7: "q8_0"}
FTYPE_GUESSED = 1024
#: ggml_log_level: ERROR, and CONT (the previous message goes on).
LOG_ERROR = 4
LOG_CONT = 5
#: The KV cache's size as llama_kv_cache logs it when the context is made.
KV_SIZE = re.compile(r"llama_kv_cache: size = +([0-9.]+) MiB")
#: "gguf_init_from_reader: " before a logged message.
FUNCTION_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_:]*: ")
LOG_LINES_KEPT = 200


class LlamaLog:
    """llama.cpp's log (ggml's too), kept instead of printed: the runner's stdout carries only
    its result, and a load failure's reason is among the error lines."""

    def __init__(self, binding: Any) -> None:
        self.lines: Deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)
        self.errors: Deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)
        self._level = 0
        # Kept on self: ctypes frees a callback that Python no longer references.
        self._callback = binding.llama_log_callback(self._keep)
        binding.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _keep(self, level: int, text: bytes, user_data: Any) -> None:
        if level != LOG_CONT:
            self._level = level
        line = text.decode("utf-8", "replace").strip()
        if line:
            self.lines.append(line)
            if self._level == LOG_ERROR:
                self.errors.append(line)

    def clear(self) -> None:
        self.lines.clear()
        self.errors.clear()

    def reason(self) -> str:
        """The first error logged (the cause; later lines say what failed because of it),
        without llama.cpp's function-name prefix."""
        if not self.errors:
            return "no reason logged"
        line = FUNCTION_PREFIX.sub("", self.errors[0], count=1)
        return line.split("error loading model: ", 1)[-1]

    def kv_cache_bytes(self) -> Optional[int]:
        """The K and V buffers' size as llama.cpp logged it making the context (to 0.01 MiB)."""
        for line in reversed(self.lines):
            found = KV_SIZE.search(line)
            if found:
                return round(float(found.group(1)) * 1024 * 1024)
        return None


_LOG: List[LlamaLog] = []


def process_log(binding: Any) -> LlamaLog:
    """The process's one log sink: llama.cpp holds a single callback for the whole process,
    so it must outlive every backend (a freed ctypes callback would crash the next log call)."""
    if not _LOG:
        _LOG.append(LlamaLog(binding))
    return _LOG[0]


class LlamaCppBackend(GenerativeBackend):
    name = FRAMEWORK
    weight_types = ("f32", "f16", "q8_0", "q4_0")

    def __init__(self) -> None:
        import llama_cpp
        import numpy as np
        from llama_cpp import llama_cpp as binding

        self._version = str(llama_cpp.__version__)
        self._np = np
        self._c: Any = binding
        self._log = process_log(binding)
        binding.llama_backend_init()
        self._model: Any = None
        self._ctx: Any = None
        self._batch: Any = None
        self._n_vocab = 0
        self._n_batch = 0
        self._kv_bytes: Optional[int] = None

    def version(self) -> str:
        return self._version

    def load(self, model_path: str, threads: int, context_tokens: int) -> None:
        c = self._c
        self._log.clear()  # the reason and KV size read next are this load's
        model = c.llama_model_load_from_file(model_path.encode("utf-8"), self._model_params())
        if not model:
            raise BackendError(
                "model_load",
                "%s cannot load %s: %s" % (FRAMEWORK, model_path, self._log.reason()),
                "\n".join(self._log.lines),
            )
        self._model = model
        ctx = c.llama_init_from_model(model, self._context_params(threads, context_tokens))
        if not ctx:
            raise BackendError(
                "model_load",
                "%s cannot make a %d-token context for %s: %s"
                % (FRAMEWORK, context_tokens, model_path, self._log.reason()),
                "\n".join(self._log.lines),
            )
        self._ctx = ctx
        self._kv_bytes = self._log.kv_cache_bytes()
        self._n_vocab = int(c.llama_vocab_n_tokens(c.llama_model_get_vocab(model)))
        self._n_batch = int(c.llama_n_batch(ctx))
        self._batch = TokenBatch(c, self._np, self._n_batch)

    def _model_params(self) -> Any:
        params = self._c.llama_model_default_params()
        params.n_gpu_layers = 0  # the CPU build; a GPU build must not move layers unasked
        return params

    def _context_params(self, threads: int, context_tokens: int) -> Any:
        params = self._c.llama_context_default_params()
        params.n_ctx = int(context_tokens)
        params.n_batch = N_BATCH
        params.n_ubatch = N_UBATCH
        params.n_threads = int(threads)
        params.n_threads_batch = int(threads)
        params.flash_attn_type = FLASH_ATTN_AUTO
        return params

    def weight_type(self) -> str:
        ftype = int(self._c.llama_model_ftype(self._model)) & ~FTYPE_GUESSED
        if ftype in FILE_TYPES:
            return FILE_TYPES[ftype]
        name = self._c.llama_ftype_name(ftype)
        return name.decode("utf-8", "replace").lower() if name else "ftype-%d" % ftype

    def generate(self, prompt: List[int], new_tokens: int, on_token: Callable[[int], None]) -> None:
        self._prefill(prompt)
        token = self._greedy()
        on_token(token)
        position = len(prompt)
        for _ in range(new_tokens - 1):
            self._decode(self._batch.one(token, position))
            position += 1
            token = self._greedy()
            on_token(token)

    def first_logits(self, prompt: List[int]) -> Optional[Any]:
        self._prefill(prompt)
        return self._np.array(self._last_logits(), dtype=self._np.float32)

    def kv_cache_bytes(self) -> Optional[int]:
        return self._kv_bytes

    def _prefill(self, prompt: List[int]) -> None:
        """Empty the KV cache, then feed ``prompt`` in chunks of n_batch (one, up to 2048
        tokens); only the last position computes logits."""
        if not prompt:
            raise BackendError("inference", "%s needs a prompt of at least one token" % FRAMEWORK)
        c = self._c
        # Cells only, as llama-bench clears: zeroing the buffers too would time a memset.
        c.llama_memory_clear(c.llama_get_memory(self._ctx), False)
        for start in range(0, len(prompt), self._n_batch):
            chunk = prompt[start : start + self._n_batch]
            last = start + len(chunk) == len(prompt)
            self._decode(self._batch.fill(chunk, start, last))

    def _decode(self, batch: Any) -> None:
        status = int(self._c.llama_decode(self._ctx, batch))
        if status != 0:
            raise BackendError(
                "inference",
                "llama_decode returned %d: %s" % (status, self._log.reason()),
                "\n".join(self._log.lines),
            )

    def _last_logits(self) -> Any:
        pointer = self._c.llama_get_logits_ith(self._ctx, -1)
        return self._np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _greedy(self) -> int:
        return int(self._np.argmax(self._last_logits()))

    def close(self) -> None:
        c = self._c
        if self._batch is not None:
            self._batch.free()
            self._batch = None
        if self._ctx:
            c.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            c.llama_model_free(self._model)
            self._model = None


class TokenBatch:
    """One llama_batch for sequence 0, allocated once; numpy views write its arrays, so filling
    512 prompt tokens costs microseconds inside the timed prefill, not a Python loop."""

    def __init__(self, binding: Any, np: Any, capacity: int) -> None:
        self._c = binding
        self.batch = binding.llama_batch_init(capacity, 0, 1)
        b = self.batch
        self._tokens = np.ctypeslib.as_array(b.token, shape=(capacity,))
        self._positions = np.ctypeslib.as_array(b.pos, shape=(capacity,))
        self._logits = np.ctypeslib.as_array(b.logits, shape=(capacity,))
        self._positions_from = np.arange(capacity, dtype=self._positions.dtype)
        np.ctypeslib.as_array(b.n_seq_id, shape=(capacity,))[:] = 1
        for i in range(capacity):
            b.seq_id[i][0] = 0

    def fill(self, tokens: List[int], first_position: int, logits_at_last: bool) -> Any:
        n = len(tokens)
        self._tokens[:n] = tokens
        self._positions[:n] = self._positions_from[:n] + first_position
        self._logits[:n] = 0
        self._logits[n - 1] = 1 if logits_at_last else 0
        self.batch.n_tokens = n
        return self.batch

    def one(self, token: int, position: int) -> Any:
        self._tokens[0] = token
        self._positions[0] = position
        self._logits[0] = 1
        self.batch.n_tokens = 1
        return self.batch

    def free(self) -> None:
        self._c.llama_batch_free(self.batch)


BACKEND = LlamaCppBackend
