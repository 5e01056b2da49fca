"""Built-in benchmark models generated with the ``onnx`` package, and model summaries."""

from edgebench.models.cache import builtin_model_path, model_bytes
from edgebench.models.registry import (
    BUILTIN_MODELS,
    BuiltinModel,
    UnknownModelError,
    build_model,
)
from edgebench.models.summary import ModelSummary, TensorSpec, summarize_model
from edgebench.models.version import GENERATOR_VERSION

__all__ = [
    "BUILTIN_MODELS",
    "GENERATOR_VERSION",
    "BuiltinModel",
    "ModelSummary",
    "TensorSpec",
    "UnknownModelError",
    "build_model",
    "builtin_model_path",
    "model_bytes",
    "summarize_model",
]
