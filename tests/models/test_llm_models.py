"""The built-in generative models: llm-tiny's facts, its real qwen2 vocabulary, its weight types
(the same seeded weights at each), the cache and its lock, the missing-vocabulary line; the
0.5B shape's size from its shapes (writing it takes about a minute); LlmFacts' refusals."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import gguf
import numpy as np
import pytest
from fakes.llm_models import SHARED_SOURCES, made_up_tokenizer, write_tiny_qwen2

from edgebench.builds.sources import LLAMA_CPP_SDIST
from edgebench.converters.artifact_cache import file_sha256
from edgebench.errors import UserError
from edgebench.models import llm_writer
from edgebench.models.llm_cache import builtin_llm_path, llm_file_name
from edgebench.models.llm_facts import read_llm_facts
from edgebench.models.llm_shapes import GENERATIVE_MODELS, LlmShape
from edgebench.models.llm_vocab import FETCH_COMMAND, VOCAB_SHA256, qwen2_vocab_path
from edgebench.models.llm_writer import (
    EMBEDDING_STD,
    WRITER_VERSION,
    weight_bytes,
    write_qwen2_gguf,
)
from edgebench.paths import exclusive_lock
from edgebench.runners.backends.reference_llm_backend import ReferenceLlmBackend
from edgebench.runners.protocol.gguf import read_gguf

TINY = GENERATIVE_MODELS["llm-tiny"]
#: Each model's header parsed once for this module (the vocabulary is 300,000 strings).
read_once = functools.cache(read_gguf)


def test_llm_tiny_facts_are_its_shape(llm_tiny_gguf):
    facts = read_llm_facts(llm_tiny_gguf)
    assert (facts.architecture, facts.layers, facts.hidden_size) == ("qwen2", 2, 64)
    assert (facts.heads, facts.kv_heads, facts.head_dim) == (4, 2, 16)
    assert facts.context_length == 2048 and facts.weight_type == "f16"
    # tied embeddings: the 151,936 x 64 table, and per layer q/k/v/o with q/k/v biases, the
    # three FFN projections and two norms; one final norm
    per_layer = 64 * 64 * 2 + 2 * 32 * 64 + 64 + 2 * 32 + 3 * 64 * 128 + 2 * 64
    assert facts.parameters == 151936 * 64 + 2 * per_layer + 64 == TINY.parameter_count()
    assert facts.file_bytes == llm_tiny_gguf.stat().st_size < 30_000_000


def test_its_vocabulary_is_the_real_qwen2_one(llm_tiny_gguf):
    meta = read_once(llm_tiny_gguf).metadata
    tokens = meta["tokenizer.ggml.tokens"]
    assert len(tokens) == 151936 and len(meta["tokenizer.ggml.merges"]) == 151387
    assert tokens[9707] == "Hello" and tokens[151643] == "<|endoftext|>"
    assert meta["tokenizer.ggml.pre"] == "qwen2" and meta["tokenizer.ggml.eos_token_id"] == 151643
    facts = read_llm_facts(llm_tiny_gguf)
    assert facts.vocab_size == 151936 and facts.ordinary_ranges == ((0, 151643),)
    assert facts.ordinary_ids()[-1] == 151642 and len(facts.ordinary_ids()) == 151643


QUANTIZED = [("q8_0", "Q8_0", 0.01), ("q4_0", "Q4_0", 0.15)]


@pytest.mark.parametrize(("fixture", "qtype", "error"), QUANTIZED)
def test_each_weight_type_holds_the_same_weights_quantized(
    request, llm_tiny_gguf, fixture, qtype, error
):
    path = request.getfixturevalue(f"llm_tiny_{fixture}")
    assert read_llm_facts(path).weight_type == fixture
    g, f16 = read_once(path), read_once(llm_tiny_gguf)
    for name, info in g.tensors.items():
        assert info.ggml_type == (qtype if len(info.shape) == 2 else "F32"), name
        assert f16.tensors[name].ggml_type == ("F16" if len(info.shape) == 2 else "F32"), name
    for name in ("token_embd.weight", "blk.1.ffn_down.weight", "blk.0.attn_q.bias"):
        want, got = f16.tensor(name), g.tensor(name)
        assert np.linalg.norm(got - want) <= error * np.linalg.norm(want), name
    embedding = f16.tensor("token_embd.weight")
    assert abs(float(embedding.std()) - EMBEDDING_STD) < 0.01  # not degenerate, not huge
    assert abs(float(f16.tensor("output_norm.weight").mean()) - 1) < 0.01


def test_llm_tiny_decodes_varied_tokens_with_spread_logits(llm_tiny_gguf):
    # At 0.02 everywhere (and with a large embedding) a tied model predicted its own input
    # token forever; with large projections, runtimes that round differently disagreed.
    backend = ReferenceLlmBackend()
    backend.load(str(llm_tiny_gguf), 1, 64)
    prompt = [int(t) for t in np.random.default_rng(1).integers(0, 150_000, 16)]
    tokens: list[int] = []
    backend.generate(prompt, 8, tokens.append)
    assert len(set(tokens)) >= 5, tokens
    logits = backend.first_logits(prompt)
    assert 0.8 < float(logits.std()) < 4.0


def test_a_second_call_finds_the_file_without_writing(llm_tiny_gguf, shared_models):
    before = llm_tiny_gguf.stat()
    again = builtin_llm_path("llm-tiny", shared_models, "f16")
    assert again == llm_tiny_gguf and again.name == llm_file_name("llm-tiny", "f16")
    assert f"-w{WRITER_VERSION}-" in again.name
    after = again.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def _waits_for_lock(pid: int) -> bool:
    """Whether ``pid`` is blocked on a file lock (/proc/locks marks waiters with ``->``)."""
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and str(pid) in line.split() for line in lines)


def test_a_second_writer_waits_for_the_first_and_takes_its_file(llm_tiny_q4_0, tmp_path, eb_env):
    """While one process holds the lock (here: the test), another asking for the model waits,
    then returns the file the first wrote, untouched."""
    target = tmp_path / llm_file_name("llm-tiny", "q4_0")
    code = (
        "import sys; from pathlib import Path; "
        "from edgebench.models.llm_cache import builtin_llm_path; "
        "print(builtin_llm_path('llm-tiny', Path(sys.argv[1]), 'q4_0'))"
    )
    with exclusive_lock(target.with_name(f".{target.name}.lock")):
        child = subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)],
            env=eb_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not _waits_for_lock(child.pid):
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "the child never reached the lock"
                time.sleep(0.05)
            shutil.copyfile(llm_tiny_q4_0, target)
            written = target.stat()
        except BaseException:
            child.kill()
            child.wait()
            raise
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.strip() == str(target)
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == (
        written.st_ino,
        written.st_mtime_ns,
    )


def test_without_the_sdist_it_is_one_line_naming_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_NATIVE_DIR", str(tmp_path / "native"))
    with pytest.raises(UserError) as exc:
        builtin_llm_path("llm-tiny", tmp_path / "models", "q8_0")
    text = str(exc.value)
    assert "\n" not in text and f"`{FETCH_COMMAND}`" in text and LLAMA_CPP_SDIST.file_name in text
    assert not (tmp_path / "models").exists()
    sources = tmp_path / "native" / "sources"
    sources.mkdir(parents=True)
    (sources / LLAMA_CPP_SDIST.file_name).write_bytes(b"not the sdist")
    with pytest.raises(UserError, match=f"not the pinned {LLAMA_CPP_SDIST.sha256}"):
        builtin_llm_path("llm-tiny", tmp_path / "models", "q8_0")
    with pytest.raises(UserError, match="choose one of f16, q8_0, q4_0"):
        builtin_llm_path("llm-tiny", tmp_path / "models", "q5_k")
    with pytest.raises(UserError, match=r"known: llm-tiny, qwen2\.5-0\.5b-shape"):
        builtin_llm_path("llm-huge", tmp_path / "models")


def test_the_vocabulary_is_copied_out_of_the_pinned_sdist(tmp_path, monkeypatch):
    """From the real archive into an empty native folder (the one file, checked by sha256)."""
    name = LLAMA_CPP_SDIST.file_name
    found = [Path(os.environ["EDGEBENCH_NATIVE_DIR"]) / "sources" / name, SHARED_SOURCES / name]
    archive = next((path for path in found if path.is_file()), None)
    if archive is None:
        pytest.skip(f"no {name} in the sources folder: `{FETCH_COMMAND}` fetches it")
    monkeypatch.setenv("EDGEBENCH_NATIVE_DIR", str(tmp_path / "native"))
    (tmp_path / "native" / "sources").mkdir(parents=True)
    (tmp_path / "native" / "sources" / name).symlink_to(archive)
    vocab = qwen2_vocab_path()
    assert vocab.is_relative_to(tmp_path / "native" / "extracted")
    assert file_sha256(vocab) == VOCAB_SHA256
    assert qwen2_vocab_path() == vocab


def test_the_05b_shape_has_qwen25_05bs_494m_parameters():
    shape = GENERATIVE_MODELS["qwen2.5-0.5b-shape"]
    hidden, inter, kv = 896, 4864, 2 * 64
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + hidden + 2 * kv + 3 * hidden * inter
    per_layer += 2 * hidden
    assert shape.parameter_count() == 151936 * hidden + 24 * per_layer + hidden
    assert 493e6 < shape.parameter_count() < 495e6
    # q4_0: 18 bytes per 32 weights for every 2-D tensor (all rows are whole blocks), float32
    # norms and biases
    one_d = sum(d[0] for d in shape.tensor_shapes().values() if len(d) == 1)
    two_d = shape.parameter_count() - one_d
    assert weight_bytes(shape, "q4_0") == two_d // 32 * 18 + one_d * 4
    assert weight_bytes(shape, "f16") == two_d * 2 + one_d * 4


def test_a_tiny_qwen2_with_a_made_up_vocabulary(tmp_path):
    path = write_tiny_qwen2(tmp_path / "t.gguf", weight_type="q8_0", vocab_size=96)
    facts = read_llm_facts(path)
    assert (facts.vocab_size, facts.hidden_size, facts.head_dim) == (96, 32, 8)
    assert facts.ordinary_ranges == ((0, 95),) and facts.weight_type == "q8_0"
    assert read_gguf(path).tensor("token_embd.weight").shape == (96, 32)


def _shape(arch: str) -> LlmShape:
    return LlmShape(arch, "", 1, 32, 2, 1, 16, 64, 128, vocab_size=40, architecture=arch)


def test_facts_take_llama_and_refuse_another_architecture_in_one_line(tmp_path):
    llama = tmp_path / "llama.gguf"
    write_qwen2_gguf(llama, _shape("llama"), "f16", made_up_tokenizer(40))
    assert read_llm_facts(llama).architecture == "llama"
    gpt2 = tmp_path / "gpt2.gguf"
    write_qwen2_gguf(gpt2, _shape("gpt2"), "f16", made_up_tokenizer(40))
    with pytest.raises(UserError) as exc:
        read_llm_facts(gpt2)
    assert "architecture 'gpt2' is not supported" in str(exc.value)
    assert "llama and qwen2" in str(exc.value)


def test_facts_of_a_truncated_or_hostile_gguf_are_one_line(tmp_path):
    whole = write_tiny_qwen2(tmp_path / "t.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UserError) as exc:
        read_llm_facts(cut)
    assert "\n" not in str(exc.value) and "truncated" in str(exc.value)
    hostile = tmp_path / "hostile.gguf"
    hostile.write_bytes(whole[:16] + (2**60).to_bytes(8, "little") + whole[24:])
    with pytest.raises(UserError, match="metadata count at byte 16 is 1152921504606846976"):
        read_llm_facts(hostile)


def test_the_writers_fast_arrays_are_the_gguf_packages_own_bytes(tmp_path, monkeypatch):
    tokenizer = made_up_tokenizer(40)
    tokenizer["tokenizer.ggml.tokens"] = [f"Ġé{i}" for i in range(39)] + [""]
    tokenizer["tokenizer.ggml.merges"] = ["Ġ é", "é 1"]
    write_qwen2_gguf(tmp_path / "fast.gguf", _shape("qwen2"), "q4_0", tokenizer)
    monkeypatch.setattr(llm_writer, "_Writer", gguf.GGUFWriter)
    write_qwen2_gguf(tmp_path / "plain.gguf", _shape("qwen2"), "q4_0", tokenizer)
    fast, plain = (tmp_path / "fast.gguf").read_bytes(), (tmp_path / "plain.gguf").read_bytes()
    assert fast == plain
