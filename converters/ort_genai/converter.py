"""GGUF -> an ONNX Runtime GenAI model folder (``model.onnx``, ``genai_config.json``), written by
edgebench without torch (ONNX Runtime GenAI's own model builder imports torch and transformers).

The matrices keep the file's weight type: Q8_0 and Q4_0 become ``MatMulNBits`` blocks bit for
bit; F16 matrices are stored as float16 and cast to float32 in the graph (ONNX Runtime folds the
casts at load: its CPU provider multiplies in float32); F32 stays float32. Which of these ran is
written beside the model (``edgebench_weights.json``) for the runner to record. No tokenizer is
written: the runner feeds token ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

import onnx

from edgebench.converters.base import ConversionError, ConversionOptions, Converter
from edgebench.runners.protocol.gguf import GgufError, GgufFile, read_gguf
from edgebench.runners.protocol.llm_shape import (
    DecoderShape,
    ModelError,
    decoder_shape,
    file_weight_type,
)
from edgebench.runners.protocol.model_folders import WEIGHTS_FILE

from .decoder import decoder_model
from .genai_config import MODEL_TYPES, genai_config

MODEL_FILE = "model.onnx"
#: Where the weights go when the graph would pass protobuf's 2 GB (an f32 0.5B model).
DATA_FILE = "model.onnx.data"
EXTERNAL_OVER = 1 << 30
CONFIG_FILE = "genai_config.json"
#: The GGUF weight type -> (the weight type that runs, its form in the graph).
WEIGHT_FORMS = {
    "f32": ("f32", "float32 MatMul"),
    "f16": ("f16-as-f32", "float16 weights cast to float32 at load, float32 MatMul"),
    "q8_0": ("q8_0", "MatMulNBits 8-bit, block 32, symmetric, int8 activations"),
    "q4_0": ("q4_0", "MatMulNBits 4-bit, block 32, symmetric, int8 activations"),
}


class OrtGenAiConverter(Converter):
    format = "ort-genai"
    framework = "onnxruntime-genai"
    precisions = tuple(WEIGHT_FORMS)
    dynamic_note: ClassVar[str] = "the decoder's sequence dims are always symbolic"

    def version(self) -> str:
        # Bump whenever the bytes written for the same input change.
        return "edgebench-ort-genai-1"

    def unavailable_reason(self) -> str | None:
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        """``onnx_path`` is the GGUF file (the generative cells' source model)."""
        gguf, shape, stored = read_source(
            Path(onnx_path), "ONNX Runtime GenAI", MODEL_TYPES, WEIGHT_FORMS, options.precision
        )
        try:
            model = decoder_model(gguf, shape)
        except (GgufError, ModelError, KeyError) as exc:
            raise ConversionError("failed", f"{Path(onnx_path).name}: {exc}") from None
        out_dir = Path(out_dir)
        external = sum(len(t.raw_data) for t in model.graph.initializer) > EXTERNAL_OVER
        onnx.save_model(
            model, str(out_dir / MODEL_FILE), save_as_external_data=external, location=DATA_FILE
        )
        vocab = gguf.tensors["token_embd.weight"].shape[0]
        config = genai_config(shape, gguf.metadata, vocab, MODEL_FILE)
        (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2))
        ran, form = WEIGHT_FORMS[stored]
        (out_dir / WEIGHTS_FILE).write_text(json.dumps({"weight_type": ran, "form": form}))
        return [MODEL_FILE, CONFIG_FILE, WEIGHTS_FILE] + ([DATA_FILE] if external else [])


def read_source(
    path: Path, writer: str, architectures: Iterable[str], weight_types: Iterable[str], asked: str
) -> tuple[GgufFile, DecoderShape, str]:
    """The GGUF at ``path``, its decoder's shape and its weight type, once the ``writer``'s
    converter takes ``architectures`` at ``weight_types`` and the file holds the ``asked`` one;
    else ConversionError with one line."""
    try:
        gguf = read_gguf(path)
        shape = decoder_shape(gguf.metadata)
        stored = file_weight_type(gguf.metadata, {n: t.ggml_type for n, t in gguf.tensors.items()})
    except (GgufError, ModelError) as exc:
        kind = "unsupported_op" if getattr(exc, "unsupported", False) else "failed"
        raise ConversionError(kind, f"{path.name}: {exc}") from None
    architectures, weight_types = list(architectures), list(weight_types)
    if shape.architecture not in architectures or stored not in weight_types:
        raise ConversionError(
            "unsupported_precision",
            f"{path.name} holds {shape.architecture} weights at {stored}; the {writer} writer "
            f"takes {', '.join(architectures)} at {', '.join(weight_types)}",
        )
    if stored != asked:
        raise ConversionError(
            "failed",
            f"{path.name} holds {stored} weights, not the {asked} asked for "
            "(a GGUF converts at the weight type it holds)",
        )
    return gguf, shape, stored
