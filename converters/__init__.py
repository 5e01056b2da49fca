"""ONNX -> target-format converters behind one interface (``base.Converter``).

Imported as ``edgebench.converters``. One module per format; ``CONVERTERS`` maps the format
name used on the command line to its class, as the framework folders declare them.
Pre-converted artifacts given as models are recognised by ``artifact_format``.
"""

from __future__ import annotations

from pathlib import Path

from edgebench.frameworks import FRAMEWORKS, ConverterRow, all_converters, load_target

from .artifact_cache import Artifact, ArtifactCache
from .base import ConversionError, ConversionOptions, Converter

#: ONNX-to-ONNX formats that more than one framework runs (a QDQ int8 model for ONNX Runtime
#: and TensorRT, an fp16 model for GPU backends); every other format's converters are declared
#: by the framework folder that runs it (edgebench/frameworks/<name>/).
SHARED_CONVERTERS = (
    ConverterRow("onnx-qdq", "edgebench.converters.onnx_qdq_converter:OnnxQdqConverter"),
    ConverterRow("onnx-fp16", "edgebench.converters.onnx_fp16_converter:OnnxFp16Converter"),
)


def _choices() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for row in (*all_converters(), *SHARED_CONVERTERS):
        found.setdefault(row.format, {}).setdefault(row.choice, row.target)
    return found


_ALL_CHOICES = _choices()
#: format -> its default converter, ``"module:Class"`` (imported on first use): the ``--to`` list.
CONVERTERS: dict[str, str] = {fmt: next(iter(c.values())) for fmt, c in _ALL_CHOICES.items()}
#: format -> {converter choice -> ``"module:Class"``}: the formats with more than one converter.
#: The first choice is the default (``CONVERTERS``); the cache keys on the converter's version.
CONVERTER_CHOICES: dict[str, dict[str, str]] = {
    fmt: choices for fmt, choices in _ALL_CHOICES.items() if len(choices) > 1
}

#: Suffix of a pre-converted artifact's primary file -> (format, companion suffix or None).
_ARTIFACT_SUFFIXES: dict[str, tuple[str, str | None]] = {
    f.artifact_suffixes[0]: (f.artifact_format, f.artifact_suffixes[1])
    for f in FRAMEWORKS
    if f.artifact_suffixes is not None and f.artifact_format is not None
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
    target = CONVERTERS[fmt]
    if choice is not None:
        options = CONVERTER_CHOICES.get(fmt, {})
        if choice not in options:
            known = ", ".join(options) or "only the default"
            raise ConversionError("failed", f"no {fmt} converter {choice!r}; choose from {known}")
        target = options[choice]
    converter_class = load_target(target)
    assert isinstance(converter_class, type) and issubclass(converter_class, Converter), target
    return converter_class()


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
