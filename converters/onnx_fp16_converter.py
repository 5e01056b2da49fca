"""ONNX -> fp16 ONNX for TensorRT and ONNX Runtime on CUDA: the format ``onnx-fp16``, made
only at fp16 (converters/fp16.py says what changes)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import onnx

from .base import ConversionError, ConversionOptions, Converter
from .fp16 import Fp16Error, to_fp16

MODEL_FILE = "model.fp16.onnx"


class OnnxFp16Converter(Converter):
    format = "onnx-fp16"
    framework = "tensorrt"
    precisions = ("fp16",)
    dynamic_shapes: ClassVar[bool] = True
    timeout_s = 600.0

    def version(self) -> str:
        return f"edgebench-fp16-1+onnx{onnx.__version__}"

    def unavailable_reason(self) -> str | None:
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.check_dynamic(onnx_path, options)
        try:
            model = onnx.load(str(onnx_path))
            half, counts = to_fp16(model)
            # The full check runs type and shape inference, which the plain one skips: a graph
            # that feeds half tensors to a float32-only input is refused here, not by TensorRT.
            onnx.checker.check_model(half, full_check=True)
        except Fp16Error as exc:
            raise ConversionError("failed", f"fp16 ONNX: {exc}") from exc
        except (
            onnx.checker.ValidationError,
            onnx.onnx_cpp2py_export.shape_inference.InferenceError,
        ) as exc:
            raise ConversionError(
                "failed",
                f"the fp16 model did not check: {str(exc).splitlines()[0]}"
                " (measure this model at fp32)",
            ) from exc
        onnx.save(half, str(Path(out_dir) / MODEL_FILE))
        self.last_log = ", ".join(f"{count} {what}" for what, count in counts.items())
        return [MODEL_FILE]
