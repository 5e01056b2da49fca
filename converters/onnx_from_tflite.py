""".tflite -> its ONNX twin with edgebench's own reader (``tflite_import``), cached like any
other artifact: keyed on the .tflite's sha256 and on the reader's version, which is the
sha256 of the reader's own source files (any change to the reader makes new twins).

The twin keeps the model's NHWC interface (input and output names and shapes as in the
.tflite), so every runner feeds it what LiteRT is fed. ``import.json`` beside it holds the
reader's report: the ops seen, the inputs and outputs, whether int8 tensors were dequantized,
and the warnings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from edgebench.errors import UserError

from .base import ConversionError, ConversionOptions, Converter
from .tflite.schema import schema_missing

TWIN_FILE = "model.onnx"
REPORT_FILE = "import.json"
FORMAT = "onnx-from-tflite"
_READER_PACKAGE = Path(__file__).with_name("tflite_import")


@cache
def reader_version() -> str:
    """``tflite-import-`` and a digest of the reader's sources."""
    digest = hashlib.sha256()
    for source in sorted(_READER_PACKAGE.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return "tflite-import-" + digest.hexdigest()[:12]


def _plain(value: Any) -> Any:
    """The report as JSON: dataclasses as objects, tuples as lists, numpy scalars as numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value if isinstance(value, str | int | float | bool | None) else str(value)


class OnnxFromTfliteConverter(Converter):
    """Not an ONNX -> X converter: its source is a .tflite file (``convert``'s first
    argument), so it is left out of ``CONVERTERS`` (the ``--to`` list)."""

    format = FORMAT
    framework = None
    precisions = ("fp32",)

    def version(self) -> str:
        return reader_version()

    def unavailable_reason(self) -> str | None:
        missing = schema_missing()
        if missing:
            return missing.replace("TFLite writer", "The .tflite reader")
        if not (_READER_PACKAGE / "__init__.py").is_file():
            return "this edgebench has no .tflite reader (converters/tflite_import); update it"
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        from .tflite_import import tflite_to_onnx

        tflite = Path(onnx_path)
        try:
            report = tflite_to_onnx(tflite, Path(out_dir) / TWIN_FILE)
        except UserError as exc:
            kind = "unsupported_op" if "not supported" in str(exc) else "failed"
            raise ConversionError(kind, str(exc)) from None
        summary = _plain(report)
        summary.pop("onnx_path", None)  # the scratch folder's, gone once the entry is in place
        summary["source"] = tflite.name
        (Path(out_dir) / REPORT_FILE).write_text(json.dumps(summary, indent=2))
        ops = summary.get("op_counts") or {}
        counted = ", ".join(f"{op} x{n}" for op, n in sorted(ops.items()))
        self.last_log = f"{reader_version()}: {sum(ops.values())} operators ({counted})"
        return [TWIN_FILE, REPORT_FILE]
