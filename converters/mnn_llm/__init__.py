"""GGUF -> MNN-LLM model folder, written without torch; see ``converter.py``."""

from .converter import WEIGHTS_FILE, MnnLlmConverter
from .folder import CONFIG_FILE, MODEL_FILE

__all__ = ["CONFIG_FILE", "MODEL_FILE", "WEIGHTS_FILE", "MnnLlmConverter"]
