"""GGUF -> ONNX Runtime GenAI folder (converters/ort_genai), run by onnxruntime-genai itself and
checked against reference-llm (runners/llm_math.py) on a small random qwen2 GGUF: first-step
logits, greedy tokens, and a KV cache that gives what a full recompute gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakes.llm_models import write_tiny_qwen2

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, get_converter
from edgebench.runners import llm_math
from edgebench.runners.protocol import llm_shape
from edgebench.runners.protocol.gguf import read_gguf

og = pytest.importorskip(
    "onnxruntime_genai",
    reason="needs onnxruntime-genai (pip install 'edgebench[onnxruntime-genai]')",
)

PROMPT = [5, 17, 3, 44, 60, 2, 9, 11, 30, 71, 8, 23]
#: Least cosine of the first-step logits with the reference's, per weight type.
MIN_COSINE = {"f16": 0.999, "q8_0": 0.995, "q4_0": 0.99}


def convert(tmp_path: Path, weight_type: str) -> tuple[Path, Path]:
    gguf = write_tiny_qwen2(tmp_path / f"tiny-{weight_type}.gguf", weight_type=weight_type)
    cache = ArtifactCache(tmp_path / "artifacts")
    artifact = cache.convert(
        get_converter("ort-genai"), gguf, f"sha-{weight_type}", ConversionOptions(weight_type)
    )
    return gguf, artifact.path


def load(folder: Path):
    config = og.Config(str(folder))
    config.overlay(
        json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": 1}}}})
    )
    return og.Model(config)


def generator(model, ids: list[int], total: int):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=total, min_length=total)
    gen = og.Generator(model, params)
    gen.append_tokens(np.asarray([ids], dtype=np.int32))
    return gen


def last_logits(gen) -> np.ndarray:
    logits = np.asarray(gen.get_output("logits"), dtype=np.float32)
    return logits.reshape(-1, logits.shape[-1])[-1]


def reference(gguf: Path, prompt: list[int], new_tokens: int) -> tuple[np.ndarray, list[int]]:
    file = read_gguf(gguf)
    shape = llm_shape.decoder_shape(file.metadata)
    weights = llm_math.load_weights(shape, list(file.tensors), file.tensor)
    decoder = llm_math.Decoder(shape, weights, len(prompt) + new_tokens)
    first = logits = decoder.forward(prompt)
    tokens = []
    for _ in range(new_tokens):
        tokens.append(int(np.argmax(logits)))
        logits = decoder.forward([tokens[-1]])
    return first, tokens


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("weight_type", ["f16", "q8_0", "q4_0"])
def test_first_logits_match_reference_llm(tmp_path, weight_type):
    gguf, folder = convert(tmp_path, weight_type)
    ref_logits, ref_tokens = reference(gguf, PROMPT, 1)
    got = last_logits(generator(load(folder), PROMPT, len(PROMPT) + 1))
    assert cosine(got, ref_logits) > MIN_COSINE[weight_type]
    assert int(np.argmax(got)) == ref_tokens[0]
    written = json.loads((folder / "edgebench_weights.json").read_text())
    assert written["weight_type"] == {"f16": "f16-as-f32"}.get(weight_type, weight_type)
    graph = (folder / "model.onnx").read_bytes()
    assert (b"MatMulNBits" in graph) == (weight_type != "f16")


def test_greedy_tokens_and_kv_cache_match_a_full_recompute(tmp_path):
    gguf, folder = convert(tmp_path, "f16")
    model = load(folder)
    steps = 6
    _, ref_tokens = reference(gguf, PROMPT, steps)
    gen = generator(model, PROMPT, len(PROMPT) + steps)
    tokens = []
    for _ in range(steps):
        gen.generate_next_token()
        tokens.append(int(gen.get_next_tokens()[0]))
    assert tokens == ref_tokens
    # The cached run's logits after the last token fed equal a fresh run over every token;
    # but for end of sequence (the made-up vocabulary's last id), which min_length suppressed
    # in the cached run's buffer as it chose its last token.
    cached = last_logits(gen)[:-1]
    fresh = last_logits(generator(model, PROMPT + tokens[:-1], len(PROMPT) + steps))[:-1]
    np.testing.assert_allclose(cached, fresh, rtol=1e-4, atol=1e-4)


def test_a_gguf_of_another_weight_type_than_asked_is_one_line(tmp_path):
    gguf = write_tiny_qwen2(tmp_path / "tiny.gguf", weight_type="q8_0")
    with pytest.raises(ConversionError) as caught:
        get_converter("ort-genai").convert(gguf, tmp_path, ConversionOptions("f16"))
    assert "holds q8_0 weights, not the f16" in caught.value.message
    assert "\n" not in caught.value.message


def test_a_truncated_gguf_fails_the_conversion_in_one_line(tmp_path):
    gguf = write_tiny_qwen2(tmp_path / "tiny.gguf")
    gguf.write_bytes(gguf.read_bytes()[:2000])
    with pytest.raises(ConversionError) as caught:
        get_converter("ort-genai").convert(gguf, tmp_path, ConversionOptions("f16"))
    assert caught.value.kind == "failed" and "tiny.gguf" in caught.value.message
    assert "\n" not in caught.value.message
