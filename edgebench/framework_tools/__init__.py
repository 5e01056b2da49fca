"""The framework tools: adapters for the frameworks' own benchmark binaries (benchmark_model,
benchncnn, MNN's benchmark.out, TNNTest, benchmark_app, trtexec), the runner kind "framework-tools".

Each adapter builds the shell command a device runs for a :class:`NativeCell` and parses the
tool's output into a :class:`NativeResult` (see docs/framework-tools.md). They run on the host;
the device runs only the binary.
"""

from __future__ import annotations

from edgebench.frameworks import FRAMEWORKS, load_target

from .base import (
    NativeAdapter,
    NativeCell,
    NativeParseError,
    NativeResult,
    clean_line,
    clean_lines,
    parse_number,
)
from .benchncnn import BenchncnnAdapter, ncnn_shape
from .mnn_benchmark import MnnBenchmarkAdapter
from .openvino_benchmark_app import OpenvinoBenchmarkAppAdapter
from .tflite_benchmark import TfliteBenchmarkAdapter
from .tnn_test import TnnTestAdapter, parse_tnn_output_file
from .trtexec import TrtexecAdapter


def _adapters() -> dict[str, type[NativeAdapter]]:
    found: dict[str, type[NativeAdapter]] = {}
    for framework in FRAMEWORKS:
        if framework.tool is None:
            continue
        adapter = load_target(framework.tool)
        if not (isinstance(adapter, type) and issubclass(adapter, NativeAdapter)):
            raise TypeError(f"{framework.name}'s tool {framework.tool} is not a NativeAdapter")
        found[framework.name] = adapter
    return found


#: Framework name -> adapter class (construct with keyword options, all optional), as each
#: framework folder's ``tool`` names it.
ADAPTERS: dict[str, type[NativeAdapter]] = _adapters()

__all__ = [
    "ADAPTERS",
    "BenchncnnAdapter",
    "MnnBenchmarkAdapter",
    "NativeAdapter",
    "NativeCell",
    "NativeParseError",
    "NativeResult",
    "OpenvinoBenchmarkAppAdapter",
    "TfliteBenchmarkAdapter",
    "TnnTestAdapter",
    "TrtexecAdapter",
    "clean_line",
    "clean_lines",
    "ncnn_shape",
    "parse_number",
    "parse_tnn_output_file",
]
