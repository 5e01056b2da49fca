"""ONNX -> OpenVINO IR (.xml + .bin) with openvino.convert_model, in a subprocess."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path

from edgebench.paths import cache_dir

from .base import ConversionError, ConversionOptions, Converter
from .isolation import isolated_env, last_line, run_tool

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
    precisions = ("fp32", "fp16")
    timeout_s = 600.0

    def version(self) -> str:
        try:
            return "ovc-" + importlib.metadata.version("openvino")
        except importlib.metadata.PackageNotFoundError:
            return "ovc-missing"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("openvino") is None:
            return "the OpenVINO converter needs openvino: pip install 'edgebench[openvino]'"
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        xml = out_dir / "model.xml"
        run = run_tool(
            [
                sys.executable,
                "-c",
                _SCRIPT,
                str(onnx_path),
                str(xml),
                options.precision,
                json.dumps(options.input_shapes),
            ],
            cwd=out_dir,
            env=isolated_env(cache_dir() / "tool-home"),
            timeout=self.timeout_s,
        )
        self.last_log = run.log
        if run.timed_out:
            raise ConversionError(
                "failed", f"OpenVINO conversion timed out after {self.timeout_s:.0f} s", run.log
            )
        if run.returncode != 0 or not xml.is_file():
            for line in run.log.splitlines():
                if "No conversion rule found for operations" in line or "not supported" in line:
                    raise ConversionError(
                        "unsupported_op", f"OpenVINO: {line.strip()[:300]}", run.log
                    )
            raise ConversionError(
                "failed", f"OpenVINO conversion failed: {last_line(run.log)}", run.log
            )
        return ["model.xml", "model.bin"]
