"""ONNX -> MNN with MNN's native converter, reached without MNN.tools.

Importing ``MNN.tools`` (what the ``mnnconvert`` console script does) runs pip and uploads usage
logs, so the converter is called through the ``_tools`` extension directly, in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from edgebench.paths import cache_dir

from .base import ConversionError, ConversionOptions, Converter
from .isolation import isolated_env, last_line, run_tool

_SCRIPT = """
import sys
import _tools
args = ["mnnconvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
        "--bizCode", "edgebench"]
if sys.argv[3] == "fp16":
    args.append("--fp16")
ok = _tools.mnnconvert(args)
sys.exit(0 if ok in (0, True) else 3)
"""


class MnnConverter(Converter):
    format = "mnn"
    framework = "mnn"
    precisions = ("fp32", "fp16")
    timeout_s = 600.0

    def version(self) -> str:
        try:
            return "mnnconvert-" + importlib.metadata.version("mnn")
        except importlib.metadata.PackageNotFoundError:
            return "mnnconvert-missing"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("_tools") is None:
            return "the MNN converter needs the mnn package: pip install 'edgebench[mnn]'"
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        target = out_dir / "model.mnn"
        run = run_tool(
            [sys.executable, "-c", _SCRIPT, str(onnx_path), str(target), options.precision],
            cwd=out_dir,
            env=isolated_env(cache_dir() / "tool-home"),
            timeout=self.timeout_s,
        )
        self.last_log = run.log
        if run.timed_out:
            raise ConversionError(
                "failed", f"mnnconvert timed out after {self.timeout_s:.0f} s", run.log
            )
        if run.returncode != 0 or not target.is_file():
            unsupported = _unsupported_op(run.log)
            if unsupported:
                raise ConversionError("unsupported_op", f"MNN converter: {unsupported}", run.log)
            raise ConversionError("failed", f"mnnconvert failed: {last_line(run.log)}", run.log)
        return ["model.mnn"]


def _unsupported_op(log: str) -> str | None:
    for line in log.splitlines():
        if "not support" in line.lower() or "unsupported" in line.lower():
            return line.strip()[:300]
    return None
