"""OpenVINO GenAI as a generative runtime: the runner measures llm-tiny through its real entry
(every field of the generation part, the tokens it counted, the check material: greedy tokens
and the first step's logits; the backend checks that its streamer handed over exactly the
tokens the pipeline returned), and a GGUF it cannot read is refused in one line before the
seconds a load takes."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from fakes.generative_cells import tiny_generative_spec
from fakes.llm_models import write_tiny_qwen2
from fakes.result_contract import assert_fits_protocol
from fakes.runner_process import run_runner

from edgebench.runners.backends.openvino_genai_backend import check_gguf
from edgebench.runners.protocol.errors import BackendError


def needs_openvino_genai() -> None:
    pytest.importorskip("openvino_genai", reason="openvino-genai is not installed")


def test_the_runner_measures_llm_tiny_on_openvino_genai(llm_tiny_gguf, tmp_path):
    needs_openvino_genai()
    saved = tmp_path / "check.npz"
    spec = tiny_generative_spec(llm_tiny_gguf, "openvino-genai", saved)
    result = run_runner(spec, timeout=300)
    assert result["status"] == "ok", result["error"]
    assert_fits_protocol(result)
    part = result["generation"]
    assert part["weight_type"] == "f16"
    assert part["gen_tokens"] == 6 and part["context_depth"] == 0
    assert [p["prompt_tokens"] for p in part["prefill"]] == [8, 32]
    assert all(len(p["ttft_ns"]) == 2 and min(p["ttft_ns"]) > 0 for p in part["prefill"])
    assert len(part["decode_wall_ns"]) == 2 and min(part["decode_wall_ns"]) > 0
    assert "kv_cache_bytes" in part  # the pipeline reports none: null, but written
    # Exactly 6 tokens per decode repetition: 5 gaps each, the header's latency samples.
    assert len(result["samples_ns"]) == 2 * 5 and min(result["samples_ns"]) > 0
    assert sum(result["samples_ns"]) == sum(part["decode_wall_ns"])
    assert result["cpu_ns_per_inference"] > 0 and result["load_ns"] > 0
    assert result["cores_effective"] == [0] and result["peak_rss_kb"] > 0
    assert result["outputs_file"] == str(saved)
    with np.load(saved) as check:
        assert check["tokens"].dtype == np.int64
        assert list(check["tokens"]) == part["check_tokens"] and len(part["check_tokens"]) == 4
        # The logits of the model the pipeline runs, over the whole vocabulary: their top-1 is
        # the greedy token the pipeline produced after the same prompt.
        logits = check["logits"]
        assert logits.dtype == np.float32 and logits.shape == (151936,)
        assert int(np.argmax(logits)) == part["check_tokens"][0]


def matrices_gguf(path, architecture: str, weights: str, file_type=None) -> str:
    """A GGUF holding two weight matrices stored at ``weights`` (f32, f16, q8_0) and a norm,
    and nothing else but ``general.file_type`` where given."""
    writer = gguf.GGUFWriter(str(path), architecture)
    if file_type is not None:
        writer.add_file_type(file_type)
    matrix = np.ones((8, 32), dtype=np.float32)
    for name in ("blk.0.attn_q.weight", "blk.0.ffn_up.weight"):
        if weights == "q8_0":
            quantized = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(matrix, quantized), raw_dtype=quantized)
        else:
            writer.add_tensor(name, matrix.astype(weights))
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(32, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


@pytest.mark.parametrize(
    "architecture, weights, message",
    [
        (
            "qwen2",
            "float32",
            "openvino-genai reads GGUF weights stored at f16, q8_0, q4_0, not f32 "
            "(convert the model to one of them)",
        ),
        (
            "gpt2",
            "float16",
            "openvino-genai reads GGUF models of architecture llama, qwen2, qwen3, not 'gpt2'",
        ),
    ],
)
def test_a_gguf_the_pipeline_cannot_run_is_unsupported_before_loading(
    tmp_path, architecture, weights, message
):
    with pytest.raises(BackendError) as caught:
        check_gguf(matrices_gguf(tmp_path / "m.gguf", architecture, weights, file_type=1))
    assert caught.value.kind == "unsupported" and caught.value.message == message


@pytest.mark.parametrize(
    "weights, file_type, message",
    [
        ("float16", None, "m.gguf has no general.file_type, which openvino-genai's GGUF reader"),
        ("q8_0", 1, "m.gguf declares unquantized weights (general.file_type 1) but stores them"),
    ],
)
def test_a_gguf_whose_declared_type_misleads_the_pipeline_is_one_line(
    tmp_path, weights, file_type, message
):
    with pytest.raises(BackendError) as caught:
        check_gguf(matrices_gguf(tmp_path / "m.gguf", "qwen2", weights, file_type))
    assert caught.value.kind == "model_load" and message in caught.value.message


def test_the_weight_type_is_the_files_and_a_truncated_file_is_one_line(tmp_path):
    q8 = write_tiny_qwen2(tmp_path / "q8.gguf", weight_type="q8_0")
    assert check_gguf(str(q8)) == "q8_0"
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(q8.read_bytes()[:200])
    with pytest.raises(BackendError) as cut:
        check_gguf(str(truncated))
    assert cut.value.kind == "model_load" and "\n" not in cut.value.message


def test_the_pipelines_scheduler_has_prefix_caching_off_and_takes_a_whole_prompt():
    # Its default scheduler caches prefixes across calls: a repeated prompt then times a
    # cached prefill (measured on llm-tiny: 1.5 ms against 2.9 ms fresh, 512 tokens). What
    # the pipeline does with the setting is OpenVINO's; this checks what edgebench hands it.
    needs_openvino_genai()
    from edgebench.runners.backends.openvino_genai_backend import BACKEND

    config = BACKEND()._scheduler(600)
    assert config.enable_prefix_caching is False
    assert config.max_num_batched_tokens >= 600  # a 512-token prompt is scheduled whole
