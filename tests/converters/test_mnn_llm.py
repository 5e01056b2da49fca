"""GGUF -> MNN-LLM folder (converters/mnn_llm), run by MNN's own LLM engine (MNN.llm) and
checked against reference-llm (runners/llm_math.py) on a small random qwen2 GGUF: first-step
logits, every decode step's logits against the cache MNN keeps itself, the folder's tokenizer,
a Q4_0 file's blocks written bit for bit, and the weight types it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakes.llm_models import write_tiny_qwen2

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, get_converter
from edgebench.runners import llm_math
from edgebench.runners.backends.mnn_llm_backend import MnnLlmBackend
from edgebench.runners.protocol import llm_shape
from edgebench.runners.protocol.errors import BackendError
from edgebench.runners.protocol.gguf import read_gguf

mllm = pytest.importorskip("MNN.llm", reason="needs the mnn package (pip install 'edgebench[mnn]')")

PROMPT = [5, 17, 3, 44, 60, 2, 9, 11, 30, 71, 8, 23]
#: Least cosine with the reference's logits, per weight type (q8_0 is MNN's own 8-bit blocks
#: of the file's values, q4_0 the file's own blocks; both with int8 activations).
MIN_COSINE = {"f16": 0.999, "q8_0": 0.995, "q4_0": 0.995}
WEIGHT_TYPE_RAN = {"f16": "f16", "q8_0": "mnn-int8-block32", "q4_0": "q4_0"}


def convert(tmp_path: Path, weight_type: str, asked: str | None = None) -> tuple[Path, Path]:
    gguf = write_tiny_qwen2(tmp_path / f"tiny-{weight_type}.gguf", weight_type=weight_type)
    cache = ArtifactCache(tmp_path / "artifacts")
    artifact = cache.convert(
        get_converter("mnn-llm"),
        gguf,
        f"sha-{weight_type}",
        ConversionOptions(asked or weight_type),
    )
    return gguf, artifact.path


def reference_decoder(gguf: Path, room: int) -> llm_math.Decoder:
    file = read_gguf(gguf)
    shape = llm_shape.decoder_shape(file.metadata)
    return llm_math.Decoder(
        shape, llm_math.load_weights(shape, list(file.tensors), file.tensor), room
    )


def engine(folder: Path, memory: str = "low"):
    llm = mllm.create(str(folder / "config.json"))
    llm.set_config({"thread_num": 1, "memory": memory})
    llm.load()
    llm.generate_init()
    return llm


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("weight_type", ["f16", "q8_0", "q4_0"])
def test_every_step_s_logits_match_reference_llm(tmp_path, weight_type):
    """The prompt's logits, then each decode step's with MNN-LLM's own key/value cache (the
    graph's attention fused into MNN's Attention op), fed the same tokens as the reference."""
    gguf, folder = convert(tmp_path, weight_type)
    steps = 6
    ref = reference_decoder(gguf, len(PROMPT) + steps)
    llm = engine(folder)
    expected, got = ref.forward(PROMPT), llm.forward(PROMPT).read().reshape(-1)
    for step in range(steps):
        assert cosine(got, expected) > MIN_COSINE[weight_type], step
        token = (7 * step + 13) % len(expected)  # forced: not the greedy choice of either
        expected, got = ref.forward([token]), llm.forward([token]).read().reshape(-1)
    written = json.loads((folder / "edgebench_weights.json").read_text())
    assert written["weight_type"] == WEIGHT_TYPE_RAN[weight_type]


def test_the_backend_generates_the_reference_s_greedy_tokens(tmp_path):
    gguf, folder = convert(tmp_path, "f16")
    backend = MnnLlmBackend()
    backend.load(str(folder), threads=1, context_tokens=64)
    ref = reference_decoder(gguf, len(PROMPT) + 8)
    logits, expected = ref.forward(PROMPT), []
    for _ in range(8):
        expected.append(int(np.argmax(logits)))
        logits = ref.forward([expected[-1]])
    for _ in range(2):  # each call starts from an empty cache
        tokens: list[int] = []
        backend.generate(PROMPT, 8, tokens.append)
        assert tokens == expected
    assert backend.weight_type() == "f16"


def test_the_folder_s_tokenizer_holds_the_gguf_s_vocabulary(tmp_path):
    gguf, folder = convert(tmp_path, "f16")
    tokens = read_gguf(gguf).metadata["tokenizer.ggml.tokens"]
    llm = engine(folder)
    assert [llm.tokenizer_decode(i) for i in (0, 7, len(tokens) - 1)] == [
        tokens[0],
        tokens[7],
        tokens[-1],
    ]


def test_q4_0_runs_the_file_s_own_blocks(tmp_path):
    """The head's 4-bit codes and scales in llm.mnn.weight are the GGUF's bytes (the embedding
    lookup reads them there), and with the weights expanded to float (memory normal: no int8
    activations) MNN-LLM computes the reference's logits to float rounding."""
    gguf, folder = convert(tmp_path, "q4_0")
    tie = json.loads((folder / "llm_config.json").read_text())["tie_embeddings"]
    assert (tie["quant_bit"], tie["quant_block"]) == (4, 32)
    assert not (folder / "embeddings_f16.bin").exists()
    file = read_gguf(gguf)
    info = file.tensors["token_embd.weight"]
    with open(file.path, "rb") as handle:
        handle.seek(file.data_offset + info.offset)
        stored = np.frombuffer(handle.read(info.nbytes), dtype=np.uint8).reshape(-1, 18)
    blob = (folder / "llm.mnn.weight").read_bytes()
    codes = np.frombuffer(
        blob, np.uint8, tie["alpha_offset"] - tie["weight_offset"], tie["weight_offset"]
    )
    scales = np.frombuffer(blob, "<f4", tie["alpha_size"] // 4, tie["alpha_offset"])
    nibbles = stored[:, 2:]  # GGUF: element j in the low nibble of byte j, j + 16 in the high
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1)
    assert codes.tolist() == (values[:, 0::2] << 4 | values[:, 1::2]).reshape(-1).tolist()
    assert scales.tolist() == stored[:, :2].copy().view("<f2")[:, 0].astype(np.float32).tolist()
    ref = reference_decoder(gguf, len(PROMPT))
    llm = engine(folder, memory="normal")  # held: the logits live in the engine's memory
    got = llm.forward(PROMPT).read().reshape(-1)
    assert cosine(got, ref.forward(PROMPT)) > 0.99999


def test_a_gguf_converts_only_at_the_weight_type_it_holds(tmp_path):
    with pytest.raises(ConversionError) as refused:
        convert(tmp_path, "f16", asked="q8_0")
    assert "holds f16 weights, not the q8_0 asked for" in refused.value.message


def test_a_folder_without_the_model_says_which_file_is_missing(tmp_path):
    _, folder = convert(tmp_path, "f16")
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "llm_config.json", "tokenizer.txt"):
        (broken / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(BackendError) as refused:
        MnnLlmBackend().load(str(broken), threads=1, context_tokens=64)
    assert refused.value.kind == "model_load"
    assert "has no llm.mnn" in str(refused.value)
