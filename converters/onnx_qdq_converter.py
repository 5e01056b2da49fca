"""ONNX -> INT8 ONNX (QDQ) for ONNX Runtime: the format ``onnx-qdq``, produced only at int8."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from .base import ConversionOptions, Converter
from .qdq import qdq_unavailable, qdq_version, quantize_qdq

MODEL_FILE = "model.int8.onnx"


class OnnxQdqConverter(Converter):
    format = "onnx-qdq"
    framework = "onnxruntime"
    precisions = ("int8",)
    dynamic_note: ClassVar[str] = (
        "it makes int8 only, and ONNX Runtime's quantizer calibrates activation ranges at the "
        "set's fixed input shapes"
    )
    timeout_s = 1800.0

    def version(self) -> str:
        return qdq_version()

    def unavailable_reason(self) -> str | None:
        return qdq_unavailable()

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.check_dynamic(onnx_path, options)
        run, quant = quantize_qdq(onnx_path, Path(out_dir) / MODEL_FILE, options, self.timeout_s)
        self.last_log, self.last_quant = run.log, quant
        return [MODEL_FILE]
