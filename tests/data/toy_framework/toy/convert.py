"""The toy format: the ONNX file's bytes under another name."""

from __future__ import annotations

import shutil
from pathlib import Path

from edgebench.converters.base import ConversionOptions, Converter


class ToyConverter(Converter):
    format = "toy"
    framework = "toy"

    def version(self) -> str:
        return "toy-1"

    def unavailable_reason(self) -> str | None:
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        shutil.copyfile(onnx_path, out_dir / "model.toy")
        return ["model.toy"]
