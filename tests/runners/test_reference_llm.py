"""reference-llm, the numpy decoder every generative runtime's output is checked against
(runners/backends/reference_llm_backend.py, runners/llm_math.py).

Its math is checked three ways: against a per-position, per-head loop written here from the
architectures' definitions (float64, no KV cache, no batching), against itself (incremental
decode against a full recompute, a changed later token, a duplicated key/value head, llama's
permuted weights), and against an implementation edgebench did not write, OpenVINO GenAI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gguf
import numpy as np
import pytest

from edgebench.models.llm_shapes import get_generative
from edgebench.runners.backends import declaration
from edgebench.runners.backends.generative import GenerativeBackend
from edgebench.runners.backends.reference_llm_backend import ReferenceLlmBackend
from edgebench.runners.protocol.errors import BackendError

HIDDEN, HEADS, KV_HEADS, FFN, VOCAB, LAYERS = 64, 4, 2, 128, 96, 2
HEAD_DIM = HIDDEN // HEADS
ROPE_BASE = {"qwen2": 1e6, "llama": 1e4}
EPS = 1e-6
PROMPT = [3, 17, 42, 8, 91, 5, 60, 23, 11, 77]


def random_weights(
    seed: int, bias: bool = True, kv_heads: int = KV_HEADS, vocab: int = VOCAB
) -> dict[str, np.ndarray]:
    """A decoder's float32 weights by GGUF name, scaled so that greedy tokens vary."""
    rng = np.random.default_rng(seed)

    def mat(rows: int, cols: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    kv_rows = kv_heads * HEAD_DIM
    w = {"token_embd.weight": mat(vocab, HIDDEN, np.sqrt(HIDDEN))}
    for n in range(LAYERS):
        w[f"blk.{n}.attn_norm.weight"] = norm(HIDDEN)
        w[f"blk.{n}.attn_q.weight"] = mat(HEADS * HEAD_DIM, HIDDEN, 2.0)
        w[f"blk.{n}.attn_k.weight"] = mat(kv_rows, HIDDEN, 2.0)
        w[f"blk.{n}.attn_v.weight"] = mat(kv_rows, HIDDEN)
        if bias:
            w[f"blk.{n}.attn_q.bias"] = (0.2 * rng.standard_normal(HEADS * HEAD_DIM)).astype(
                np.float32
            )
            w[f"blk.{n}.attn_k.bias"] = (0.2 * rng.standard_normal(kv_rows)).astype(np.float32)
            w[f"blk.{n}.attn_v.bias"] = (0.2 * rng.standard_normal(kv_rows)).astype(np.float32)
        w[f"blk.{n}.attn_output.weight"] = mat(HIDDEN, HEADS * HEAD_DIM)
        w[f"blk.{n}.ffn_norm.weight"] = norm(HIDDEN)
        w[f"blk.{n}.ffn_gate.weight"] = mat(FFN, HIDDEN)
        w[f"blk.{n}.ffn_up.weight"] = mat(FFN, HIDDEN)
        w[f"blk.{n}.ffn_down.weight"] = mat(HIDDEN, FFN)
    w["output_norm.weight"] = norm(HIDDEN)
    w["output.weight"] = mat(vocab, HIDDEN, 3.0)
    return w


def add_byte_level_tokenizer(writer: gguf.GGUFWriter, vocab: int) -> None:
    """A GPT-2 style vocabulary (OpenVINO GenAI builds its tokenizer from one): the 256 byte
    characters first, made-up tokens after, two merges (the writer drops an empty list, and
    the reader then misses the key), and three control tokens at the end."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    chars = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens = ([chars[b] for b in range(256)] + [f"t{i}" for i in range(vocab)])[: vocab - 3]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens + specials)
    writer.add_token_types([1] * len(tokens) + [3] * len(specials))
    writer.add_token_merges(["t 0", "t 1"])
    writer.add_eos_token_id(vocab - 3)
    writer.add_bos_token_id(vocab - 3)


QUANT = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7}


def write_model(
    path: Path,
    weights: dict[str, np.ndarray],
    arch: str = "qwen2",
    weight_type: str = "f32",
    kv_heads: int = KV_HEADS,
) -> Path:
    """A GGUF file of ``weights``: matrices as ``weight_type``, vectors as f32."""
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(LAYERS)
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_freq_base(ROPE_BASE.get(arch, 1e4))
    writer.add_layer_norm_rms_eps(EPS)
    writer.add_file_type(FILE_TYPE[weight_type])
    add_byte_level_tokenizer(writer, weights["token_embd.weight"].shape[0])
    for name, array in weights.items():
        if array.ndim == 1 or weight_type == "f32":
            writer.add_tensor(name, array)
        elif weight_type == "f16":
            writer.add_tensor(name, array.astype(np.float16))
        else:
            kind = QUANT[weight_type]
            packed = gguf.quants.quantize(array, kind)
            writer.add_tensor(name, packed, raw_shape=packed.shape, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def loaded(path: Path, context: int = 64) -> ReferenceLlmBackend:
    backend = ReferenceLlmBackend()
    backend.load(str(path), 1, context)
    return backend


def greedy(backend: ReferenceLlmBackend, prompt: list[int], n: int) -> list[int]:
    tokens: list[int] = []
    backend.generate(prompt, n, tokens.append)
    return tokens


# --- a straightforward implementation to check against -----------------------------------


def loop_logits(w: dict[str, np.ndarray], arch: str, tokens: list[int]) -> np.ndarray:
    """Every position's logits, one position and one head at a time, in float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    kv_heads = w["blk.0.attn_k.weight"].shape[0] // HEAD_DIM
    group = HEADS // kv_heads
    base = ROPE_BASE[arch]

    def rms(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x) + EPS) * weight

    def rope(vec: np.ndarray, pos: int) -> np.ndarray:
        out = vec.copy()
        for i in range(HEAD_DIM // 2):
            angle = pos * base ** (-2.0 * i / HEAD_DIM)
            # qwen2 (llama.cpp's NEOX) pairs i with i + half; llama (NORMAL) pairs neighbours
            a, b = (i, i + HEAD_DIM // 2) if arch == "qwen2" else (2 * i, 2 * i + 1)
            out[a] = vec[a] * np.cos(angle) - vec[b] * np.sin(angle)
            out[b] = vec[b] * np.cos(angle) + vec[a] * np.sin(angle)
        return out

    keys: list[list[list[np.ndarray]]] = [[[] for _ in range(kv_heads)] for _ in range(LAYERS)]
    values: list[list[list[np.ndarray]]] = [[[] for _ in range(kv_heads)] for _ in range(LAYERS)]
    logits = []
    for pos, token in enumerate(tokens):
        x = w["token_embd.weight"][token].copy()
        for n in range(LAYERS):
            p = f"blk.{n}."
            h = rms(x, w[p + "attn_norm.weight"])
            q = w[p + "attn_q.weight"] @ h + w.get(p + "attn_q.bias", 0.0)
            k = w[p + "attn_k.weight"] @ h + w.get(p + "attn_k.bias", 0.0)
            v = w[p + "attn_v.weight"] @ h + w.get(p + "attn_v.bias", 0.0)
            for g in range(kv_heads):
                keys[n][g].append(rope(k[g * HEAD_DIM : (g + 1) * HEAD_DIM], pos))
                values[n][g].append(v[g * HEAD_DIM : (g + 1) * HEAD_DIM])
            heads_out = []
            for head in range(HEADS):
                g = head // group
                qh = rope(q[head * HEAD_DIM : (head + 1) * HEAD_DIM], pos)
                scores = np.array([qh @ kj for kj in keys[n][g]]) / np.sqrt(HEAD_DIM)
                p_attn = np.exp(scores - scores.max())
                p_attn /= p_attn.sum()
                heads_out.append(sum(pj * vj for pj, vj in zip(p_attn, values[n][g], strict=True)))
            x = x + w[p + "attn_output.weight"] @ np.concatenate(heads_out)
            h = rms(x, w[p + "ffn_norm.weight"])
            gate = w[p + "ffn_gate.weight"] @ h
            x = x + w[p + "ffn_down.weight"] @ (
                gate / (1 + np.exp(-gate)) * (w[p + "ffn_up.weight"] @ h)
            )
        logits.append(w["output.weight"] @ rms(x, w["output_norm.weight"]))
    return np.array(logits)


def all_logits(backend: ReferenceLlmBackend, tokens: list[int]) -> np.ndarray:
    decoder = backend._decoder
    assert decoder is not None
    decoder.reset()
    return decoder.forward(tokens, all_logits=True)


# --- tests ---------------------------------------------------------------------------------


def test_the_module_declares_a_generative_backend():
    declared = declaration("reference_llm_backend")
    assert declared.framework == "reference-llm" and declared.requires == ("numpy",)
    assert declared.backend is ReferenceLlmBackend
    assert issubclass(ReferenceLlmBackend, GenerativeBackend)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_logits_match_a_per_position_per_head_loop(tmp_path, arch):
    weights = random_weights(1, bias=arch == "qwen2")
    backend = loaded(write_model(tmp_path / "m.gguf", weights, arch))
    expected = loop_logits(weights, arch, PROMPT)
    got = all_logits(backend, PROMPT)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(backend.first_logits(PROMPT), expected[-1], rtol=1e-4, atol=1e-4)
    assert backend.weight_type() == "f32"


def test_incremental_decode_equals_a_full_recompute(tmp_path):
    backend = loaded(write_model(tmp_path / "m.gguf", random_weights(2)))
    decoder = backend._decoder
    assert decoder is not None
    tokens = greedy(backend, PROMPT, 12)
    assert len(set(tokens)) > 3  # the model is not stuck on one token: the check means something

    decoder.reset()
    steps = [decoder.forward(PROMPT)] + [decoder.forward([t]) for t in tokens[:-1]]
    full = all_logits(backend, PROMPT + tokens[:-1])[len(PROMPT) - 1 :]
    np.testing.assert_allclose(np.array(steps), full, rtol=1e-5, atol=1e-5)
    assert list(full.argmax(axis=1)) == tokens
    assert greedy(backend, PROMPT, 12) == tokens  # each generate starts from an empty cache


def test_a_later_token_never_changes_earlier_logits(tmp_path):
    backend = loaded(write_model(tmp_path / "m.gguf", random_weights(3)))
    changed = list(PROMPT)
    changed[6] = (changed[6] + 1) % VOCAB
    before, after = all_logits(backend, PROMPT), all_logits(backend, changed)
    np.testing.assert_array_equal(before[:6], after[:6])
    assert not np.allclose(before[6:], after[6:], atol=1e-3)


def test_query_heads_read_their_own_key_value_group(tmp_path):
    """A grouped-query model equals the multi-head model whose key/value heads are the
    groups' heads repeated (query head h reads key/value head h // group), and not the one
    whose heads are repeated in turn (h % kv_heads)."""
    weights = random_weights(4)
    group = HEADS // KV_HEADS
    grouped = loaded(write_model(tmp_path / "gqa.gguf", weights))

    def expanded(repeat) -> dict[str, np.ndarray]:
        out = dict(weights)
        for name, array in weights.items():
            if any(part in name for part in ("attn_k.", "attn_v.")):
                heads = array.reshape(KV_HEADS, HEAD_DIM, *array.shape[1:])
                out[name] = repeat(heads).reshape(HEADS * HEAD_DIM, *array.shape[1:])
        return out

    def by_group(heads: np.ndarray) -> np.ndarray:
        return np.repeat(heads, group, axis=0)

    def in_turn(heads: np.ndarray) -> np.ndarray:
        return np.concatenate([heads] * group, axis=0)

    right = loaded(write_model(tmp_path / "mha.gguf", expanded(by_group), kv_heads=HEADS))
    wrong = loaded(write_model(tmp_path / "turn.gguf", expanded(in_turn), kv_heads=HEADS))
    reference = all_logits(grouped, PROMPT)
    np.testing.assert_allclose(all_logits(right, PROMPT), reference, rtol=1e-5, atol=1e-5)
    assert not np.allclose(all_logits(wrong, PROMPT), reference, atol=1e-2)


def test_llama_files_hold_q_and_k_permuted_for_the_normal_rope_layout(tmp_path):
    """llama.cpp's converter permutes llama's q/k rows (LlamaModel.permute) so that rotating
    neighbouring pairs equals the original model's half-split rotation: a llama file of the
    permuted weights computes what a qwen2 file (NEOX rotation) of the same, unpermuted,
    bias-free weights computes."""
    weights = random_weights(5, bias=False)

    def permute(rows: np.ndarray, heads: int) -> np.ndarray:
        shape = rows.shape
        return (
            rows.reshape(heads, 2, shape[0] // heads // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)
        )

    llama = dict(weights)
    for n in range(LAYERS):
        llama[f"blk.{n}.attn_q.weight"] = permute(weights[f"blk.{n}.attn_q.weight"], HEADS)
        llama[f"blk.{n}.attn_k.weight"] = permute(weights[f"blk.{n}.attn_k.weight"], KV_HEADS)
    as_qwen2 = loaded(write_model(tmp_path / "q.gguf", weights, "qwen2"))
    as_llama = loaded(write_model(tmp_path / "l.gguf", llama, "llama"))
    # both files' rope bases must agree for the equality; the loop test covers each base
    assert ROPE_BASE["llama"] != ROPE_BASE["qwen2"]
    as_llama._decoder.cos, as_llama._decoder.sin = as_qwen2._decoder.cos, as_qwen2._decoder.sin
    np.testing.assert_allclose(
        all_logits(as_llama, PROMPT), all_logits(as_qwen2, PROMPT), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(("weight_type", "min_cosine"), [("q8_0", 0.999), ("q4_0", 0.95)])
def test_quantized_files_compute_their_dequantized_weights(tmp_path, weight_type, min_cosine):
    """A q8_0/q4_0 file computes exactly its stored values in float32 (the gguf package
    dequantizes them here), which are close to, but not, the f16 file's."""
    weights = random_weights(6)
    kind = QUANT[weight_type]
    stored = {
        name: gguf.quants.dequantize(gguf.quants.quantize(array, kind), kind)
        if array.ndim == 2
        else array
        for name, array in weights.items()
    }
    f16 = loaded(write_model(tmp_path / "f16.gguf", weights, weight_type="f16"))
    quantized = loaded(write_model(tmp_path / "q.gguf", weights, weight_type=weight_type))
    dequantized = loaded(write_model(tmp_path / "f32.gguf", stored, weight_type="f32"))
    assert (f16.weight_type(), quantized.weight_type()) == ("f16", weight_type)
    a, b = f16.first_logits(PROMPT), quantized.first_logits(PROMPT)
    np.testing.assert_allclose(b, dequantized.first_logits(PROMPT), rtol=1e-5, atol=1e-5)
    cosine = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert min_cosine < cosine < 0.99999


def test_it_reads_the_builtin_llm_tiny(llm_tiny_gguf):
    """The built-in model as edgebench writes it: the real qwen2 vocabulary, tied embeddings,
    key/value lengths in the metadata."""
    shape = get_generative("llm-tiny")
    backend = loaded(llm_tiny_gguf, context=32)
    assert backend.weight_type() == "f16"
    logits = backend.first_logits(PROMPT)
    assert logits.shape == (shape.vocab_size,) and np.isfinite(logits).all()
    assert backend.kv_cache_bytes() == 2 * shape.layers * shape.kv_heads * 32 * shape.head_dim * 4
    assert greedy(backend, PROMPT, 4)[0] == int(logits.argmax())


def one_line_error(path: Path, context: int = 64) -> BackendError:
    with pytest.raises(BackendError) as caught:
        loaded(path, context)
    error = caught.value
    assert "\n" not in error.message and path.name in error.message, error.message
    return error


def test_a_truncated_file_is_one_line(tmp_path):
    whole = write_model(tmp_path / "whole.gguf", random_weights(7)).read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    assert one_line_error(cut).kind == "model_load"


def test_another_architecture_is_unsupported_in_one_line(tmp_path):
    error = one_line_error(write_model(tmp_path / "gpt2.gguf", random_weights(8), arch="gpt2"))
    assert error.kind == "unsupported" and "'gpt2'" in error.message


def test_a_missing_tensor_and_a_too_long_context_are_one_line(tmp_path):
    weights = random_weights(9)
    del weights["blk.1.ffn_up.weight"]
    error = one_line_error(write_model(tmp_path / "part.gguf", weights))
    assert error.kind == "model_load" and "blk.1.ffn_up.weight" in error.message
    error = one_line_error(write_model(tmp_path / "m.gguf", random_weights(9)), context=4096)
    assert error.kind == "unsupported" and "256" in error.message


def test_openvino_genai_generates_the_same_greedy_tokens(tmp_path):
    """OpenVINO GenAI reads the same f16 qwen2 GGUF (its own GGUF reader and graph), computing
    in float32 with a float32 KV cache: its 16 greedy tokens from the same prompt ids are the
    reference's."""
    if importlib.util.find_spec("openvino_genai") is None:
        pytest.skip("openvino_genai is not installed (pip install openvino-genai)")
    import openvino as ov
    import openvino_genai

    path = write_model(tmp_path / "m.gguf", random_weights(10, vocab=320), weight_type="f16")
    prompt = [3, 17, 42, 8, 91, 5, 60, 23, 11, 77, 100, 200, 150, 33, 1, 9]
    backend = loaded(path)
    expected = greedy(backend, prompt, 16)
    assert len(set(expected)) > 8

    pipe = openvino_genai.LLMPipeline(
        str(path),
        "CPU",
        INFERENCE_PRECISION_HINT="f32",
        KV_CACHE_PRECISION="f32",
        INFERENCE_NUM_THREADS=1,
    )
    config = openvino_genai.GenerationConfig()
    config.max_new_tokens = config.min_new_tokens = 16
    config.ignore_eos, config.do_sample = True, False
    ids = np.array([prompt], dtype=np.int64)
    inputs = openvino_genai.TokenizedInputs(ov.Tensor(ids), ov.Tensor(np.ones_like(ids)))
    got = [int(t) for t in pipe.generate(inputs, config).tokens[0]]
    if got != expected:
        step = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        top = np.sort(all_logits(backend, prompt + expected[:step])[-1])[-2:]
        pytest.fail(
            f"step {step}: {got[step]} != {expected[step]} (top-1 margin {top[1] - top[0]:.2e})"
        )
