"""``genai_config.json``: what ONNX Runtime GenAI reads to run the decoder (the keys of its
model builder's output for a ``decoder`` model without a shared KV buffer)."""

from __future__ import annotations

from typing import Any

from edgebench.runners.protocol.llm_shape import DecoderShape

from .decoder import PAST_KEY, PAST_VALUE, PRESENT_KEY, PRESENT_VALUE

#: Model types whose decoder ONNX Runtime GenAI runs with this graph layout.
MODEL_TYPES = {"qwen2": "qwen2", "llama": "llama"}


def genai_config(
    shape: DecoderShape, metadata: dict[str, Any], vocab: int, model_file: str
) -> dict[str, Any]:
    eos = int(metadata.get("tokenizer.ggml.eos_token_id", vocab - 1))
    bos = int(metadata.get("tokenizer.ggml.bos_token_id", eos))
    pad = int(metadata.get("tokenizer.ggml.padding_token_id", eos))
    return {
        "model": {
            "bos_token_id": bos,
            "context_length": shape.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": model_file,
                "head_size": shape.head_dim,
                "hidden_size": shape.hidden,
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "position_ids": "position_ids",
                    "past_key_names": PAST_KEY,
                    "past_value_names": PAST_VALUE,
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": PRESENT_KEY,
                    "present_value_names": PRESENT_VALUE,
                },
                "num_attention_heads": shape.heads,
                "num_hidden_layers": shape.layers,
                "num_key_value_heads": shape.kv_heads,
            },
            "eos_token_id": eos,
            "pad_token_id": pad,
            "type": MODEL_TYPES[shape.architecture],
            "vocab_size": vocab,
        },
        "search": {
            "diversity_penalty": 0.0,
            "do_sample": False,
            "early_stopping": True,
            "length_penalty": 1.0,
            "max_length": shape.context_length,
            "min_length": 0,
            "no_repeat_ngram_size": 0,
            "num_beams": 1,
            "num_return_sequences": 1,
            "past_present_share_buffer": False,
            "repetition_penalty": 1.0,
            "temperature": 1.0,
            "top_k": 1,
            "top_p": 1.0,
        },
    }
