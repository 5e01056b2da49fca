"""The framework tools: adapters for the frameworks' own benchmark binaries (benchmark_model,
benchncnn, MNN's benchmark.out, TNNTest, benchmark_app, trtexec, llama-bench, MNN's
llm_bench), the runner kind "framework-tools".

Each adapter builds the shell command a device runs for a :class:`ToolCell` and parses the
tool's output into a :class:`ToolResult` (see docs/framework-tools.md). They run on the host;
the device runs only the binary.
"""

from __future__ import annotations

from edgebench.frameworks import FRAMEWORKS, load_target

from .base import (
    ToolAdapter,
    ToolCell,
    ToolParseError,
    ToolResult,
    clean_line,
    clean_lines,
    parse_number,
)
from .benchncnn import BenchncnnAdapter, ncnn_shape
from .llama_bench import LlamaBenchAdapter, parse_llama_bench_json
from .mnn_benchmark import MnnBenchmarkAdapter
from .mnn_llm_bench import LlmBenchAdapter, parse_llm_bench_table
from .openvino_benchmark_app import OpenvinoBenchmarkAppAdapter
from .tflite_benchmark import TfliteBenchmarkAdapter
from .tnn_test import TnnTestAdapter, parse_tnn_output_file
from .trtexec import TrtexecAdapter


def _adapters() -> dict[str, type[ToolAdapter]]:
    found: dict[str, type[ToolAdapter]] = {}
    for framework in FRAMEWORKS:
        if framework.tool is None:
            continue
        adapter = load_target(framework.tool)
        if not (isinstance(adapter, type) and issubclass(adapter, ToolAdapter)):
            raise TypeError(f"{framework.name}'s tool {framework.tool} is not a ToolAdapter")
        found[framework.name] = adapter
    return found


#: Framework name -> adapter class (construct with keyword options, all optional), as each
#: framework folder's ``tool`` names it.
ADAPTERS: dict[str, type[ToolAdapter]] = _adapters()

__all__ = [
    "ADAPTERS",
    "BenchncnnAdapter",
    "LlamaBenchAdapter",
    "LlmBenchAdapter",
    "MnnBenchmarkAdapter",
    "OpenvinoBenchmarkAppAdapter",
    "TfliteBenchmarkAdapter",
    "TnnTestAdapter",
    "ToolAdapter",
    "ToolCell",
    "ToolParseError",
    "ToolResult",
    "TrtexecAdapter",
    "clean_line",
    "clean_lines",
    "ncnn_shape",
    "parse_llama_bench_json",
    "parse_llm_bench_table",
    "parse_number",
    "parse_tnn_output_file",
]
