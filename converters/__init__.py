"""ONNX -> target-format converters behind one interface (``base.Converter``).

Imported as ``edgebench.converters``. One module per format; ``CONVERTERS`` maps the format
name used on the command line to its class. Pre-converted artifacts given as models are
recognised by ``artifact_format``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .artifact_cache import Artifact, ArtifactCache
from .base import ConversionError, ConversionOptions, Converter

# format -> (module in this package, class); imported on first use.
CONVERTERS: dict[str, tuple[str, str]] = {
    "mnn": ("mnn_converter", "MnnConverter"),
    "ncnn": ("ncnn_converter", "NcnnConverter"),
    "tflite": ("tflite_converter", "TfliteConverter"),
    "openvino": ("openvino_converter", "OpenVinoConverter"),
    "tnn": ("tnn_converter", "TnnConverter"),
    "onnx-qdq": ("onnx_qdq_converter", "OnnxQdqConverter"),
    "onnx-fp16": ("onnx_fp16_converter", "OnnxFp16Converter"),
}
# format -> {converter choice -> (module, class)}: the formats with more than one converter.
# The first choice is the default (``CONVERTERS``); the cache keys on the converter's version.
CONVERTER_CHOICES: dict[str, dict[str, tuple[str, str]]] = {
    "tflite": {
        "edgebench": ("tflite_converter", "TfliteConverter"),
        "onnx2tf": ("onnx2tf_converter", "Onnx2tfConverter"),
    },
}

# Suffix of a pre-converted artifact's primary file -> (format, companion suffix or None).
_ARTIFACT_SUFFIXES: dict[str, tuple[str, str | None]] = {
    ".tflite": ("tflite", None),
    ".mnn": ("mnn", None),
    ".param": ("ncnn", ".bin"),
    ".xml": ("openvino", ".bin"),
    ".tnnproto": ("tnn", ".tnnmodel"),
}


def artifact_format(path: Path) -> tuple[str, Path | None] | None:
    """(format, companion file) for a pre-converted artifact path, else None."""
    entry = _ARTIFACT_SUFFIXES.get(path.suffix.lower())
    if entry is None:
        return None
    fmt, companion = entry
    return fmt, (path.with_suffix(companion) if companion else None)


def get_converter(fmt: str, choice: str | None = None) -> Converter:
    """The converter to ``fmt``; ``choice`` picks one of ``CONVERTER_CHOICES[fmt]``."""
    if fmt not in CONVERTERS:
        raise ConversionError(
            "failed", f"unknown target format {fmt!r}; choose from {', '.join(CONVERTERS)}"
        )
    module_name, class_name = CONVERTERS[fmt]
    if choice is not None:
        options = CONVERTER_CHOICES.get(fmt, {})
        if choice not in options:
            known = ", ".join(options) or "only the default"
            raise ConversionError("failed", f"no {fmt} converter {choice!r}; choose from {known}")
        module_name, class_name = options[choice]
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, class_name)()


__all__ = [
    "CONVERTERS",
    "CONVERTER_CHOICES",
    "Artifact",
    "ArtifactCache",
    "ConversionError",
    "ConversionOptions",
    "Converter",
    "artifact_format",
    "get_converter",
]
