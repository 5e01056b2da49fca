"""llama.cpp as a generative runtime (llama-cpp-python's low-level binding) on llm-tiny: exactly
the asked tokens, greedy and handed over in order, a cleared cache between calls, the first
logits the numpy reference computes, the weight type of each file, its log kept off the
streams, and a file it cannot load refused in one line with llama.cpp's reason."""

from __future__ import annotations

import json
import subprocess

import gguf
import numpy as np
import pytest
from fakes.generative_cells import PROMPT, tiny_generative_spec
from fakes.result_contract import assert_fits_protocol
from fakes.runner_process import RUNNER_ARGV

from edgebench.runners.backends.reference_llm_backend import ReferenceLlmBackend
from edgebench.runners.protocol.errors import BackendError
from edgebench.runners.protocol.gguf import read_gguf


@pytest.fixture
def llama():
    pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python is not installed (pip install 'edgebench[llama-cpp]')"
    )
    from edgebench.runners.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend()
    yield backend
    backend.close()


def generated(backend, prompt: list[int], new_tokens: int) -> list[int]:
    tokens: list[int] = []
    backend.generate(prompt, new_tokens, tokens.append)
    return tokens


def test_exactly_the_asked_tokens_each_the_greedy_next_of_the_ones_before(llama, llm_tiny_gguf):
    llama.load(str(llm_tiny_gguf), 1, 64)
    tokens = generated(llama, PROMPT[:8], 6)
    assert len(tokens) == 6
    # Each handed-over token is the argmax after the prompt and the tokens before it, fed anew
    # (so the order is the generation's, and one decode step agrees with a fresh prefill).
    for i, token in enumerate(tokens):
        assert generated(llama, PROMPT[:8] + tokens[:i], 1) == [token]


def test_a_call_never_sees_the_previous_calls_cache(llama, llm_tiny_gguf):
    llama.load(str(llm_tiny_gguf), 1, 64)
    first = generated(llama, PROMPT[:12], 5)
    other = generated(llama, PROMPT[12:30], 5)
    assert generated(llama, PROMPT[:12], 5) == first
    assert other != first


def test_first_logits_are_the_references_over_the_whole_vocabulary(llama, llm_tiny_gguf):
    vocabulary = len(read_gguf(str(llm_tiny_gguf)).metadata["tokenizer.ggml.tokens"])
    llama.load(str(llm_tiny_gguf), 1, 64)
    logits = llama.first_logits(PROMPT[:16])
    assert logits.dtype == np.float32 and logits.shape == (vocabulary,)
    assert int(np.argmax(logits)) == generated(llama, PROMPT[:16], 1)[0]
    reference = ReferenceLlmBackend()
    reference.load(str(llm_tiny_gguf), 1, 64)
    expected = reference.first_logits(PROMPT[:16])
    cosine = float(np.dot(logits, expected) / np.linalg.norm(logits) / np.linalg.norm(expected))
    assert cosine > 0.999, cosine  # f16 weights, f16 activations in llama.cpp's dot products


@pytest.mark.parametrize("weights", ["q8_0", "q4_0"])
def test_quantized_files_load_and_say_their_weight_type(llama, request, weights):
    model = request.getfixturevalue(f"llm_tiny_{weights}")
    llama.load(str(model), 1, 32)
    assert llama.weight_type() == weights
    assert len(generated(llama, PROMPT[:4], 3)) == 3


def test_the_kv_cache_size_is_the_one_llama_cpp_allocated(llama, llm_tiny_gguf):
    metadata = read_gguf(str(llm_tiny_gguf)).metadata
    llama.load(str(llm_tiny_gguf), 1, 512)
    # K and V at f16, per layer, per KV head and head dimension, for 512 cells.
    head_dim = metadata["qwen2.embedding_length"] // metadata["qwen2.attention.head_count"]
    per_cell = 2 * 2 * metadata["qwen2.block_count"] * metadata["qwen2.attention.head_count_kv"]
    # llama.cpp logs the size to 0.01 MiB (printf rounding: half a unit either way).
    assert abs(llama.kv_cache_bytes() - 512 * per_cell * head_dim) <= 0.005 * 2**20 + 1
    assert llama.weight_type() == "f16"


def unknown_architecture(path) -> str:
    writer = gguf.GGUFWriter(str(path), "nosucharch")
    writer.add_tensor("token_embd.weight", np.ones((8, 32), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


def test_a_file_llama_cpp_cannot_load_is_one_line_with_its_reason(llama, llm_tiny_q4_0, tmp_path):
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(llm_tiny_q4_0.read_bytes()[:4096])
    for path, reason in [
        (str(truncated), "failed to read key-value pairs"),
        (unknown_architecture(tmp_path / "arch.gguf"), "unknown model architecture: 'nosucharch'"),
    ]:
        with pytest.raises(BackendError) as caught:
            llama.load(path, 1, 32)
        message = caught.value.message
        assert caught.value.kind == "model_load" and "\n" not in message, message
        assert message.startswith(f"llama.cpp cannot load {path}: ") and reason in message


def test_the_runner_measures_llm_tiny_on_llama_cpp_and_keeps_its_log_quiet(
    llama, llm_tiny_gguf, tmp_path
):
    saved = tmp_path / "check.npz"
    spec = tiny_generative_spec(llm_tiny_gguf, "llama.cpp", saved)
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"], input=json.dumps(spec), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()  # the result only
    assert "llama_model_loader" not in proc.stderr and "llama_context" not in proc.stderr
    result = json.loads(line.split(" ", 1)[1])
    assert result["status"] == "ok", result["error"]
    assert_fits_protocol(result)
    part = result["generation"]
    assert part["weight_type"] == "f16" and part["kv_cache_bytes"] > 0
    assert [p["prompt_tokens"] for p in part["prefill"]] == [8, 32]
    assert all(len(p["ttft_ns"]) == 2 and min(p["ttft_ns"]) > 0 for p in part["prefill"])
    # Exactly 6 tokens per decode repetition: 5 gaps each, the header's latency samples.
    assert len(result["samples_ns"]) == 2 * 5 and min(result["samples_ns"]) > 0
    assert sum(result["samples_ns"]) == sum(part["decode_wall_ns"])
    assert result["cpu_ns_per_inference"] > 0 and result["load_ns"] > 0
    with np.load(saved) as check:
        assert sorted(check.files) == ["logits", "tokens"]
        assert list(check["tokens"]) == part["check_tokens"] and len(part["check_tokens"]) == 4
        assert int(np.argmax(check["logits"])) == part["check_tokens"][0]
