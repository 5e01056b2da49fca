"""ONNX -> TFLite with edgebench's own writer (``converters/tflite/``): numpy, onnx and the
.tflite schema from ai-edge-litert, no TensorFlow. See docs/converters.md for its op table and
layout rules; onnx2tf stays available as ``onnx2tf_converter``. int8 converts to fp32 first,
then quantizes that file with ranges calibrated in LiteRT (``tflite/quantize.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from .base import ConversionOptions, Converter, read_onnx
from .calibration_data import load_calibration
from .subprocess_tools import TensorSpec, tensor_entry, write_io_json
from .tflite.convert import WRITER_VERSION, TensorInfo, convert_model
from .tflite.model_builder import SIGNATURE_KEY
from .tflite.quantize import GRANULARITY, METHOD, QUANTIZER_VERSION, quantize_int8
from .tflite.schema import schema_missing

MODEL_FILE = "model.tflite"
IO_FILE = "io.json"


class TfliteConverter(Converter):
    format = "tflite"
    framework = "tflite"
    precisions = ("fp32", "fp16", "int8")
    dynamic_note: ClassVar[str] = (
        "edgebench's TFLite writer folds the graph at fixed input shapes (folding.py) and "
        "writes every tensor's shape as a constant"
    )

    def version(self) -> str:
        # Bump WRITER_VERSION whenever the bytes written for the same input change.
        return WRITER_VERSION

    def cache_version(self, options: ConversionOptions) -> str:
        # Bump QUANTIZER_VERSION whenever the int8 bytes change for the same fp32 file.
        return WRITER_VERSION + (f"+{QUANTIZER_VERSION}" if options.precision == "int8" else "")

    def unavailable_reason(self) -> str | None:
        return schema_missing()

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.check_dynamic(onnx_path, options)
        model = read_onnx(onnx_path)
        self.last_quant = None
        fallbacks: list[str] | None = None
        if options.precision == "int8":
            arrays = load_calibration(options)
            quantized = quantize_int8(convert_model(model, options.input_shapes), arrays)
            converted, fallbacks = quantized.converted, quantized.fallback_ops
            self.last_quant = {
                "method": METHOD,
                "granularity": GRANULARITY,
                "fp32_fallback_ops": fallbacks,
            }
        else:
            converted = convert_model(model, options.input_shapes, options.precision)
        out_dir = Path(out_dir)
        (out_dir / MODEL_FILE).write_bytes(converted.flatbuffer)
        write_io_json(
            out_dir / IO_FILE,
            self.format,
            [_entry(t) for t in converted.inputs],
            [_entry(t) for t in converted.outputs],
            signature=SIGNATURE_KEY,
        )
        ops = ", ".join(f"{code} x{n}" for code, n in sorted(converted.op_counts.items()))
        self.last_log = f"{WRITER_VERSION}: {sum(converted.op_counts.values())} operators ({ops})"
        if fallbacks is not None:
            self.last_log += f"; int8, ops left in fp32: {', '.join(fallbacks) or 'none'}"
        return [MODEL_FILE, IO_FILE]


def _entry(tensor: TensorInfo) -> dict:
    spec = TensorSpec(tensor.onnx_name, tensor.onnx_shape, tensor.dtype)
    return tensor_entry(spec, tensor.name, tensor.shape, tensor.perm, signature_key=tensor.name)
