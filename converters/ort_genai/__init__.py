"""GGUF -> ONNX Runtime GenAI model folder, written in pure Python (no torch); see
``converter.py``."""

from .converter import CONFIG_FILE, MODEL_FILE, WEIGHTS_FILE, OrtGenAiConverter

__all__ = ["CONFIG_FILE", "MODEL_FILE", "WEIGHTS_FILE", "OrtGenAiConverter"]
