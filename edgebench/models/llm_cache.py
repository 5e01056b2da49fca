"""On-disk cache of the built-in generative models, by name, weight type, writer version and
seed: the first call writes the GGUF (under a lock, so two processes never write the same
file; atomically, so no reader sees half of one), every later call only finds it."""

from __future__ import annotations

import functools
import logging
import os
import time
from pathlib import Path
from typing import Any

from edgebench.models.llm_shapes import DEFAULT_WEIGHT_TYPE, check_weight_type, get_generative
from edgebench.models.llm_vocab import qwen2_vocab_path
from edgebench.models.llm_writer import WRITER_VERSION, write_qwen2_gguf
from edgebench.paths import exclusive_lock
from edgebench.runners.protocol.gguf import read_gguf

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def tokenizer_metadata(vocab: Path) -> dict[str, Any]:
    """The ``tokenizer.*`` metadata of a GGUF file (a vocabulary-only one); read once per
    process (a second weight type costs no second parse), and never changed by its users."""
    return {k: v for k, v in read_gguf(vocab).metadata.items() if k.startswith("tokenizer.")}


def llm_file_name(name: str, weight_type: str, seed: int = 0) -> str:
    return f"{name}-{weight_type}-w{WRITER_VERSION}-s{seed}.gguf"


def builtin_llm_path(
    name: str, cache_dir: Path, weight_type: str = DEFAULT_WEIGHT_TYPE, seed: int = 0
) -> Path:
    """Path of built-in generative model ``name`` at ``weight_type`` in ``cache_dir`` (the
    models folder), writing it first when it is not there."""
    shape = get_generative(name)
    check_weight_type(weight_type)
    path = Path(cache_dir) / llm_file_name(name, weight_type, seed)
    if path.is_file():
        return path
    vocab = qwen2_vocab_path()  # before the lock: a missing archive is one line at once
    with exclusive_lock(path.with_name(f".{path.name}.lock")):
        if path.is_file():
            return path
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        started = time.perf_counter()
        try:
            write_qwen2_gguf(tmp, shape, weight_type, tokenizer_metadata(vocab), seed)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    log.info("wrote %s in %.1f s", path, time.perf_counter() - started)
    return path
