"""ONNX -> TNN (.tnnproto + .tnnmodel), written in pure Python.

TNN ships no installable converter, so edgebench writes TNN's format itself; see
``docs/tnn.md``. TNN has no Python runtime, so there is no Python runner backend
(``framework = None``): the files run in edgebench-native's TNN backend or TNN's TNNTest.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from edgebench.converters.base import ConversionError, ConversionOptions, Converter, read_onnx
from edgebench.converters.tnn.writer import convert_model

PROTO_FILE = "model.tnnproto"
MODEL_FILE = "model.tnnmodel"


class TnnConverter(Converter):
    format = "tnn"
    framework = None
    precisions = ("fp32", "fp16")
    dynamic_note: ClassVar[str] = (
        "edgebench's TNN writer folds the graph at fixed input shapes and writes them into "
        "the .tnnproto; TNNTest runs the shape it was written for"
    )
    precision_notes: ClassVar[dict[str, str]] = {
        **Converter.precision_notes,
        "int8": "edgebench's TNN writer does not write TNN's quantized layers (Int8 blobs with "
        "per-channel scales); TNN's own quantization tool comes only from a source build",
    }

    def version(self) -> str:
        # Bump whenever the bytes written for the same input change.
        return "edgebench-tnn-3"

    def unavailable_reason(self) -> str | None:
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        if options.precision not in self.precisions:
            raise ConversionError("failed", f"TNN converter has no precision {options.precision!r}")
        self.check_dynamic(onnx_path, options)
        model = read_onnx(onnx_path)
        files = convert_model(model, options.input_shapes, options.precision)
        out_dir = Path(out_dir)
        (out_dir / PROTO_FILE).write_bytes(files.proto.encode("utf-8"))
        (out_dir / MODEL_FILE).write_bytes(files.model)
        return [PROTO_FILE, MODEL_FILE]
