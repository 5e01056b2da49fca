"""Where a record's figures came from: the converted file the cell ran (``artifact``) and, for
a cell measured by a framework's own benchmark binary, that tool's report (``native``).

Each field is a key of the stored object (``json_values.read_fields``); docs/results.md lists
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.results.json_values import RecordPart


@dataclass
class Artifact(RecordPart):
    """The converted file: its format, the converter and its version, whether it came from
    the cache, the conversion's time, each file's name and sha256, and its folder on the host
    that converted it (a cluster's lab host rewrites it to the run's host)."""

    format: str | None = None
    converter: str | None = None
    converter_version: str | None = None
    cached: bool | None = None
    convert_s: float | None = None
    files: list[dict[str, str]] = field(default_factory=list)
    path: str | None = None
    #: A model given as a .tflite: how the file the cell ran was made ("onnx-twin": from its
    #: ONNX twin, "direct": from the .tflite by the framework's own reader, "original": the
    #: .tflite itself), the .tflite's and the twin's sha256, and whether the twin is a float
    #: model of an int8 file.
    route: str | None = None
    tflite_sha256: str | None = None
    twin_sha256: str | None = None
    twin_dequantized: bool | None = None


@dataclass
class ToolReport(RecordPart):
    """What a framework's benchmark binary printed: the tool and its version, the statistics
    it prints (no percentiles unless it prints them), its maximum, and its last lines."""

    tool: str | None = None
    tool_version: str | None = None
    stats_available: list[str] = field(default_factory=list)
    max_ms: float | None = None
    raw_lines: list[str] = field(default_factory=list)
