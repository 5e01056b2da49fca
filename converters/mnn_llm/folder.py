"""The files beside ``llm.mnn`` that MNN-LLM's engine reads (transformers/llm/engine/src):

- ``config.json`` (llmconfig.hpp): the model and weight file names, and the run settings
  (CPU, threads, precision, greedy sampling); the runner overrides the threads at load;
- ``llm_config.json``, merged into it: ``hidden_size``, ``layer_nums``, the float attention
  mask, and ``tie_embeddings`` pointing the embedding lookup at ``embeddings_f16.bin``
  (quant_bit 16 reads rows of float16, diskembedding.cpp: exactly the GGUF's F16 values, where
  the default ``embeddings_bf16.bin`` would round them to bfloat16); for a Q4_0 file whose
  head is its token embedding, at the head's 4-bit blocks in ``llm.mnn.weight`` instead (the
  file's own codes and scales, q4_blocks.py), and no embeddings file;
- ``tokenizer.txt`` (tokenizer/tokenizer.cpp, ``Tokenizer::createTokenizer``): magic 430, type
  1 (tiktoken: one base64 line per token), then a line of special, stop and prefix token
  counts, all 0: no stop token, so end of sequence never ends a generation. The runner feeds
  ids; the vocabulary is there for the engine's own text API.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.runners.protocol.gguf import GgufFile
from edgebench.runners.protocol.llm_shape import DecoderShape

from ..ort_genai.weights import stored_half

MODEL_FILE = "llm.mnn"
WEIGHT_FILE = "llm.mnn.weight"
CONFIG_FILE = "config.json"
LLM_CONFIG_FILE = "llm_config.json"
EMBEDDINGS_FILE = "embeddings_f16.bin"
TOKENIZER_FILE = "tokenizer.txt"
#: tokenizer.hpp: MAGIC_NUMBER and TokenizerType::TIKTOIKEN.
TOKENIZER_MAGIC, TIKTOKEN = 430, 1


def engine_config() -> dict[str, Any]:
    return {
        "llm_model": MODEL_FILE,
        "llm_weight": WEIGHT_FILE,
        "backend_type": "cpu",
        "thread_num": 1,
        # MNN's own defaults (llmexport.py writes them): float16 arithmetic where the CPU has it.
        "precision": "low",
        "memory": "low",
        "sampler_type": "greedy",
        "use_mmap": False,
        "reuse_kv": False,
    }


def llm_config(shape: DecoderShape, tie: dict[str, Any] | None = None) -> dict[str, Any]:
    """``tie``: where the embedding rows lie in the weight file (the head's 4-bit blocks, as
    q4_blocks.py writes them); None: the float16 embeddings file."""
    config = {
        "model_type": shape.architecture,
        "hidden_size": shape.hidden,
        "layer_nums": shape.layers,
        "attention_mask": "float",
        "attention_type": "full",
        "is_mrope": False,
        "embedding_file": EMBEDDINGS_FILE,
        "tie_embeddings": {"weight_offset": 0, "quant_bit": 16, "quant_block": 0},
    }
    if tie is not None:
        del config["embedding_file"]
        config["tie_embeddings"] = tie
    return config


def write_embeddings(gguf: GgufFile, path: Path) -> None:
    """The token embedding as float16 rows [vocab, hidden] (F16 as stored, else rounded)."""
    name = "token_embd.weight"
    if gguf.tensors[name].ggml_type == "F16":
        table = stored_half(gguf, name)
    else:
        table = gguf.tensor(name).astype(np.float16)
    np.ascontiguousarray(table, dtype="<f2").tofile(path)


def tokenizer_text(metadata: dict[str, Any], vocab: int) -> str:
    """tokenizer.txt of the GGUF's vocabulary (placeholders where it has none)."""
    tokens = metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or len(tokens) != vocab:
        tokens = [f"<token{i}>" for i in range(vocab)]
    lines = [f"{TOKENIZER_MAGIC} {TIKTOKEN}", "0 0 0", "", str(vocab)]
    lines += [base64.b64encode(str(t).encode("utf-8")).decode("ascii") for t in tokens]
    return "\n".join(lines) + "\n"


def write_folder_files(
    gguf: GgufFile, shape: DecoderShape, out_dir: Path, tie: dict[str, Any] | None = None
) -> list[str]:
    vocab = gguf.tensors["token_embd.weight"].shape[0]
    (out_dir / CONFIG_FILE).write_text(json.dumps(engine_config(), indent=2))
    (out_dir / LLM_CONFIG_FILE).write_text(json.dumps(llm_config(shape, tie), indent=2))
    (out_dir / TOKENIZER_FILE).write_text(tokenizer_text(gguf.metadata, vocab))
    if tie is not None:
        return [CONFIG_FILE, LLM_CONFIG_FILE, TOKENIZER_FILE]
    write_embeddings(gguf, out_dir / EMBEDDINGS_FILE)
    return [CONFIG_FILE, LLM_CONFIG_FILE, TOKENIZER_FILE, EMBEDDINGS_FILE]
