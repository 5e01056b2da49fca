"""The direct route from a .tflite (``--from-tflite direct``): OpenVINO's TensorFlow Lite
frontend and ``MNNConvert -f TFLITE`` read the file itself, instead of the ONNX twin.

Each is its framework's ONNX converter with another source; its version says so, so that a
direct artifact never shares a cache entry with one converted from ONNX. Input shapes are
the .tflite's own (fixed), so none are passed.
"""

from __future__ import annotations

from pathlib import Path

from .base import ConversionError, ConversionOptions, Converter
from .isolation import convert_in_python_subprocess
from .mnn_converter import MnnConverter
from .openvino_converter import OpenVinoConverter

DIRECT = "+tflite-direct"

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


class OpenVinoFromTflite(OpenVinoConverter):
    precisions = ("fp32", "fp16")

    def cache_version(self, options: ConversionOptions) -> str:
        return self.version() + DIRECT

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        markers = ("no conversion rule found for operations", "not supported")
        xml = Path(out_dir) / "model.xml"
        label = "OpenVINO conversion of the .tflite"
        self.last_log = _read_tflite(
            label, _OPENVINO_SCRIPT, Path(onnx_path), xml, options.precision, markers
        )
        self.last_quant = None
        return ["model.xml", "model.bin"]


class MnnFromTflite(MnnConverter):
    precisions = ("fp32", "fp16")

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
        self.last_quant = None
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
