"""ONNX -> OpenVINO IR (.xml + .bin) with openvino.convert_model, in a subprocess.

Dynamic (``ConversionOptions.dynamic``): no input shapes are given to convert_model, so the
model's symbolic input dims stay undefined in the IR (``[?,3,?,?]``); the CPU plugin compiles
that once and takes any shape a request's input tensor has.

INT8: the ONNX model is first quantized to QDQ (``qdq.py``, the model ONNX Runtime's int8 cells
run), and OpenVINO converts that; its FakeQuantize layers execute in int8 on the CPU plugin.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import ClassVar

from .base import ConversionOptions, Converter
from .isolation import convert_in_python_subprocess
from .qdq import qdq_version, quantize_qdq

_SCRIPT = """
import json, sys
import openvino as ov
shapes = json.loads(sys.argv[4])
kwargs = {"input": [(name, shape) for name, shape in shapes.items()]} if shapes else {}
model = ov.convert_model(sys.argv[1], **kwargs)
ov.save_model(model, sys.argv[2], compress_to_fp16=(sys.argv[3] == "fp16"))
"""


class OpenVinoConverter(Converter):
    format = "openvino"
    framework = "openvino"
    precisions: tuple[str, ...] = ("fp32", "fp16", "int8")
    dynamic_shapes: ClassVar[bool] = True
    timeout_s = 600.0

    def version(self) -> str:
        try:
            return "ovc-" + importlib.metadata.version("openvino")
        except importlib.metadata.PackageNotFoundError:
            return "ovc-missing"

    def cache_version(self, options: ConversionOptions) -> str:
        # int8 artifacts depend on ONNX Runtime's quantizer too.
        return self.version() + (f"+{qdq_version()}" if options.precision == "int8" else "")

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("openvino") is None:
            return "the OpenVINO converter needs openvino: pip install 'edgebench[openvino]'"
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.check_dynamic(onnx_path, options)
        # Dynamic: no shapes, so convert_model keeps the model's own (symbolic) input dims.
        shapes = {} if options.dynamic else options.input_shapes
        xml = out_dir / "model.xml"
        source, log, self.last_quant = onnx_path, "", None
        if options.precision == "int8":
            source = out_dir / "qdq.onnx"
            qdq_run, self.last_quant = quantize_qdq(onnx_path, source, options, self.timeout_s)
            log = qdq_run.log
        run = convert_in_python_subprocess(
            label="OpenVINO conversion",
            script=_SCRIPT,
            args=[str(source), str(xml), options.precision, json.dumps(shapes)],
            out_dir=out_dir,
            expected=xml,
            timeout=self.timeout_s,
            unsupported_markers=("no conversion rule found for operations", "not supported"),
        )
        self.last_log = log + run.log
        return ["model.xml", "model.bin"]
