"""Adapters for the frameworks' own native benchmark binaries, for devices without Python.

Each adapter builds the shell command a device runs for a :class:`NativeCell` and parses the
tool's output into a :class:`NativeResult` (see docs/native-runners.md). They run on the host.
"""

from __future__ import annotations

from .base import (
    NativeAdapter,
    NativeCell,
    NativeParseError,
    NativeResult,
    clean_line,
    clean_lines,
    parse_number,
    taskset_mask,
)
from .benchncnn import BenchncnnAdapter, ncnn_shape
from .mnn_benchmark import MnnBenchmarkAdapter
from .openvino_benchmark_app import OpenvinoBenchmarkAppAdapter
from .tflite_benchmark import TfliteBenchmarkAdapter
from .tnn_test import TnnTestAdapter, parse_tnn_output_file

#: Framework name -> adapter class (construct with keyword options, all optional).
NATIVE_TOOLS: dict[str, type[NativeAdapter]] = {
    "tflite": TfliteBenchmarkAdapter,
    "ncnn": BenchncnnAdapter,
    "mnn": MnnBenchmarkAdapter,
    "tnn": TnnTestAdapter,
    "openvino": OpenvinoBenchmarkAppAdapter,
}

__all__ = [
    "NATIVE_TOOLS",
    "BenchncnnAdapter",
    "MnnBenchmarkAdapter",
    "NativeAdapter",
    "NativeCell",
    "NativeParseError",
    "NativeResult",
    "OpenvinoBenchmarkAppAdapter",
    "TfliteBenchmarkAdapter",
    "TnnTestAdapter",
    "clean_line",
    "clean_lines",
    "ncnn_shape",
    "parse_number",
    "parse_tnn_output_file",
    "taskset_mask",
]
