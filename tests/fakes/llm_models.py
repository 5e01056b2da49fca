"""Generative models for the tests: the built-in ``llm-tiny`` GGUF at each weight type (written
once per session into the shared models folder, so edgebench's own cache finds it too), and
``write_tiny_qwen2``, a small random qwen2 GGUF with a made-up vocabulary (no tokenizer needed:
for the reference implementation's tests).

``llm-tiny`` needs the real qwen2 vocabulary, from llama-cpp-python's pinned sdist in the native
sources folder (``edgebench runners fetch-sources``; tests reach no network); where it is
missing, the tests that use these fixtures skip with the line naming that command."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.errors import UserError
from edgebench.models.llm_cache import builtin_llm_path
from edgebench.models.llm_shapes import LlmShape
from edgebench.models.llm_vocab import qwen2_vocab_path
from edgebench.models.llm_writer import write_qwen2_gguf
from fakes.environment import REPO

#: Where the shared machine keeps the pinned source archives (.ci/run copies them from there).
SHARED_SOURCES = REPO.parent / "shared" / "sources"


def qwen2_vocab_or_skip() -> Path:
    """The real qwen2 vocabulary file, or skip the test saying how to get it."""
    try:
        return qwen2_vocab_path()
    except UserError as exc:
        from edgebench.builds.sources import LLAMA_CPP_SDIST

        shared = SHARED_SOURCES / LLAMA_CPP_SDIST.file_name
        if shared.is_file():
            return qwen2_vocab_path(shared)
        pytest.skip(str(exc))


def llama_bench_or_skip() -> Path:
    """llama-bench as edgebench built it for this host, else skip naming the build command."""
    from edgebench.builds import BuildError
    from edgebench.builds.llama_bench import BUILD_COMMAND, built_llama_bench

    try:
        built = built_llama_bench()
    except BuildError as exc:
        pytest.skip(str(exc))
    if built is None:
        pytest.skip(f"llama-bench is not built: run `{BUILD_COMMAND}` (minutes)")
    return built


def llm_tiny_path(models_dir: Path, weight_type: str = "f16") -> Path:
    qwen2_vocab_or_skip()
    return builtin_llm_path("llm-tiny", models_dir, weight_type)


@pytest.fixture(scope="session")
def llm_tiny_gguf(shared_models: Path) -> Path:
    """The built-in llm-tiny at f16 (the default weight type)."""
    return llm_tiny_path(shared_models, "f16")


@pytest.fixture(scope="session")
def llm_tiny_q8_0(shared_models: Path) -> Path:
    return llm_tiny_path(shared_models, "q8_0")


@pytest.fixture(scope="session")
def llm_tiny_q4_0(shared_models: Path) -> Path:
    return llm_tiny_path(shared_models, "q4_0")


def made_up_tokenizer(vocab_size: int) -> dict[str, object]:
    """``tokenizer.*`` metadata of a vocabulary ``<t0>`` ... with its last token a control token
    (end of sequence); no merges, so only a reader of ids can use it."""
    types = [1] * (vocab_size - 1) + [3]
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": [f"<t{i}>" for i in range(vocab_size)],
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.eos_token_id": vocab_size - 1,
        "tokenizer.ggml.bos_token_id": vocab_size - 1,
    }


def write_tiny_qwen2(
    path: Path,
    *,
    weight_type: str = "f16",
    seed: int = 0,
    vocab_size: int = 96,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 4,
    kv_heads: int = 2,
    head_dim: int = 8,
    intermediate: int = 64,
    context_length: int = 256,
) -> Path:
    """A small random qwen2 GGUF (tied embeddings, q/k/v biases) with a made-up vocabulary:
    milliseconds to write. Its tensors read back with ``runners.protocol.gguf.read_gguf``."""
    shape = LlmShape(
        name="tiny-qwen2",
        description="test model",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        context_length=context_length,
        vocab_size=vocab_size,
    )
    write_qwen2_gguf(path, shape, weight_type, made_up_tokenizer(vocab_size), seed)
    return path
