"""The direct route from a .tflite (``--from-tflite direct``): OpenVINO's TensorFlow Lite
frontend and ``MNNConvert -f TFLITE`` read the file itself, instead of the ONNX twin.

Each is its framework's ONNX converter with another source; its version says so, so that a
direct artifact never shares a cache entry with one converted from ONNX. Input shapes are
the .tflite's own (fixed), so none are passed.

Both keep a quantized .tflite quantized (OpenVINO as FakeQuantize layers, MNN as DT_INT8
tensors and int8 weights): at the precision the file holds (int8, int8-weights) the
conversion is the plain one, and the manifest's ``quant`` says the file came quantized. At
fp32 the artifact of a quantized file is quantized all the same, and its cells are recorded at
the precision it holds (``planning/prepare.py``).
"""

from __future__ import annotations

from pathlib import Path

from .artifact_precision import QUANTIZED, read_precision
from .base import ConversionError, ConversionOptions, Converter
from .isolation import convert_in_python_subprocess
from .mnn_converter import MnnConverter
from .openvino_converter import OpenVinoConverter

DIRECT = "+tflite-direct"
#: The manifest's ``quant.method`` for a direct artifact of a quantized .tflite (the words of
#: ``measure/quantized_check.py``'s pre-converted models).
QUANTIZED_IN_FILE = "pre-converted (quantized outside edgebench)"

_OPENVINO_SCRIPT = """
import sys
import openvino as ov
model = ov.convert_model(sys.argv[1])
ov.save_model(model, sys.argv[2], compress_to_fp16=(sys.argv[3] == "fp16"))
"""

_MNN_SCRIPT = """
import sys
import _tools
args = ["mnnconvert", "-f", "TFLITE", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
        "--bizCode", "edgebench"]
if sys.argv[3] == "fp16":
    args.append("--fp16")
ok = _tools.mnnconvert(args)
sys.exit(0 if ok in (0, True) else 3)
"""


def _read_tflite(
    label: str, script: str, tflite: Path, target: Path, precision: str, markers: tuple[str, ...]
) -> str:
    """Run a framework's converter ``script`` on the .tflite in a subprocess; its log."""
    run = convert_in_python_subprocess(
        label=label,
        script=script,
        args=[str(tflite), str(target), precision],
        out_dir=target.parent,
        expected=target,
        timeout=600.0,
        unsupported_markers=markers,
    )
    return run.log


def _kept_quantization(target: Path, fmt: str) -> dict[str, object] | None:
    """The manifest's ``quant`` for a direct artifact that holds quantized tensors: they came
    from the .tflite, not from a calibration of edgebench's."""
    found = read_precision(target, fmt)
    if not found.quantized:
        return None
    return {"method": QUANTIZED_IN_FILE, "granularity": None, "fp32_fallback_ops": []}


class OpenVinoFromTflite(OpenVinoConverter):
    precisions = ("fp32", "fp16", *QUANTIZED)

    def cache_version(self, options: ConversionOptions) -> str:
        return self.version() + DIRECT

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        markers = ("no conversion rule found for operations", "not supported")
        xml = Path(out_dir) / "model.xml"
        label = "OpenVINO conversion of the .tflite"
        self.last_log = _read_tflite(
            label, _OPENVINO_SCRIPT, Path(onnx_path), xml, options.precision, markers
        )
        self.last_quant = _kept_quantization(xml, "openvino")
        return ["model.xml", "model.bin"]


class MnnFromTflite(MnnConverter):
    precisions = ("fp32", "fp16", *QUANTIZED)

    def cache_version(self, options: ConversionOptions) -> str:
        return self.version() + DIRECT

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        target = Path(out_dir) / "model.mnn"
        self.last_log = _read_tflite(
            "mnnconvert -f TFLITE",
            _MNN_SCRIPT,
            Path(onnx_path),
            target,
            options.precision,
            ("not support", "unsupported"),
        )
        self.last_quant = _kept_quantization(target, "mnn")
        return ["model.mnn"]


#: Artifact format -> the converter that reads a .tflite directly.
DIRECT_CONVERTERS: dict[str, type[Converter]] = {
    "openvino": OpenVinoFromTflite,
    "mnn": MnnFromTflite,
}


def direct_converter(fmt: str) -> Converter:
    """The direct converter to ``fmt``; ConversionError for a format that has none."""
    if fmt not in DIRECT_CONVERTERS:
        raise ConversionError("failed", f"no direct .tflite -> {fmt} converter")
    return DIRECT_CONVERTERS[fmt]()
