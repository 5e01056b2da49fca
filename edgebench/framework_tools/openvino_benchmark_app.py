"""OpenVINO ``benchmark_app`` (C++ sample or the Python tool of the ``openvino`` wheel).

Command::

    benchmark_app -m model.xml -d CPU -hint none -nthreads N -nstreams 1 -api sync -niter I
                  -infer_precision f32|f16 [-shape name[dims],...] [-iop name:f32,...]
                  [-report_type no_counters -report_folder DIR -json_stats]

benchmark_app refuses ``-nthreads``/``-nstreams`` unless ``-hint none``. ``-infer_precision``
is always given (``set_infer_precision=False`` drops it for builds before 2022.3): on ARM CPUs
OpenVINO's default inference precision is f16, so an fp32 cell must ask for f32. ``-shape``
repeats the cell's (ONNX-style) input shapes; ``-iop name:f32`` keeps 4-D inputs in f32, which
benchmark_app would otherwise treat as u8 images (adding a u8->f32 conversion to the graph).

There is no warm-up option: benchmark_app runs one untimed first inference (reported as
``first_ms``) and then ``-niter`` timed ones, so ``cell.warmup`` is not used.

Output (stdout, ``[ INFO ]`` prefix)::

    [ INFO ] Build ................................. 2026.4.1-22982-e213a147257-releases/2026/4
    [ INFO ] Compile model took 13.14 ms
    [ INFO ] First inference took 0.91 ms
    [ INFO ] Count:            50 iterations
    [ INFO ] Duration:         315.6 ms
    [ INFO ] Latency:
    [ INFO ]    Median:        6.05 ms
    [ INFO ]    Average:       6.31 ms
    [ INFO ]    Min:           5.80 ms
    [ INFO ]    Max:           9.02 ms
    [ INFO ] Throughput:   158.43 FPS

Recent builds print latencies in ``us`` when the average is under 1 ms (converted here);
``-latency_percentile P`` replaces ``Median`` by ``P percentile`` (5 and 95 are kept as p5/p95,
others ignored); builds before 2022 print a single ``Latency: X ms`` line, the median. The
statistics after "Latency for each data shape group" (``-pcseq``) are ignored. The version is
the first ``Build ....`` line (the runtime's). ``init_ms`` is the "Compile model took" (older:
"Load network took") time. The ``-json_stats`` report (``DIR/benchmark_report.json``; DIR must
exist) rounds latencies to 0.01 ms, so the text output is what is parsed.

Op profile (``cell.profile_ops``: ``-pc``, a run of its own): after "Performance counts for 0-th
infer request" one row per node of the compiled graph, then "Total time:"::

    Multiply_6833        Status.EXECUTED      layerType: Convolution          execType: \
brgconv_avx2_f32     realTime (ms): 0.980      cpuTime (ms): 0.980

(the C++ tool prints ``EXECUTED`` without ``Status.``). ``realTime`` is OpenVINO's running mean
per node over every inference the compiled model ran: the untimed first one and the ``Count``
timed ones, so ``iterations`` is Count + 1 (1 without a Count line). The text gives no way to
take the first inference out, and ``inference_ms`` is the tool's average of the timed ones: when
a slow first inference lifts the rows' sum above it, the record's op-profile warning says so.
Names longer than the column are cut to ``<prefix>...``, so each row stays one op. Rows that
did not run (``NOT_RUN``, ``OPTIMIZED_OUT``: fused into a neighbour) are left out; ``impl`` is
the ``execType``.
:meth:`OpenvinoBenchmarkAppAdapter.parse_op_profile` returns runners/protocol/op_profile.py's
result.

Accelerators: ``-d`` is the registry's device for an accelerator cell (``GPU``, ``NPU``) instead
of ``device``. The device that ran is the "Execution Devices" line (``Execution
Devices:['GPU.0']``; the C++ tool prints ``Execution Devices: GPU.0``) and the precision the
compiled model's ``INFERENCE_PRECISION_HINT`` (``<Type: 'float16'>`` or ``f16``). A run whose
execution devices are not the asked device is a fallback. Without the device the plugin stops
before a result (``[GPU] Can't get PERFORMANCE_HINT property as no supported devices found or
an error happened during devices query.``, the NPU's ``VCL compiler loading failed``): a
refusal, quoting the plugin's lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from edgebench.runners.protocol.op_profile import profile_result

from .accelerator import BackendReport, accelerator_run, quote, tool_argument
from .base import (
    NUMBER,
    ToolAdapter,
    ToolCell,
    ToolParseError,
    ToolResult,
    finite_or_none,
    int_or_none,
    shape_arg,
    streams,
)

_UNIT = r"(?P<unit>ms|us|\u00b5s|\u03bcs|s)\b"
_PREFIX_RE = re.compile(r"^\[\s*(?:INFO|WARNING|ERROR|DEBUG)\s*\]\s?", re.ASCII)
_COUNT_RE = re.compile(r"^Count:\s*(\d+)\s*iterations", re.ASCII)
_STAT_RE = re.compile(
    rf"^(?P<key>Median|Average|Min|Max|\d+ percentile|Latency):\s*(?P<value>{NUMBER})\s*{_UNIT}",
    re.ASCII,
)
_THROUGHPUT_RE = re.compile(rf"^Throughput:\s*(?P<value>{NUMBER})\s*FPS", re.ASCII)
_BUILD_RE = re.compile(r"^Build\s*\.+\s*(\S+)", re.ASCII)
_FIRST_RE = re.compile(rf"^First inference took\s*(?P<value>{NUMBER})\s*{_UNIT}", re.ASCII)
_INIT_RE = re.compile(
    rf"^(?:Compile model|Load network) took\s*(?P<value>{NUMBER})\s*{_UNIT}", re.ASCII
)
_GROUPS_RE = re.compile(r"^Latency for each data shape group", re.ASCII)
OP_PROFILE_SOURCE = "benchmark_app -pc"
_COUNTERS_RE = re.compile(r"^Performance counts for \d+-th infer request", re.ASCII)
_COUNTER_ROW_RE = re.compile(
    r"^(?P<name>\S.*?)\s+(?:Status\.)?(?P<status>EXECUTED|NOT_RUN|OPTIMIZED_OUT)\s+"
    r"layerType:\s*(?P<type>\S+)\s+execType:\s*(?P<impl>\S+)\s+"
    rf"realTime \(ms\):\s*(?P<real>{NUMBER})",
    re.ASCII,
)
_EXECUTION_RE = re.compile(r"^Execution Devices:\s*\[?(?P<devices>[^\]]*)\]?\s*$", re.ASCII)
_PRECISION_RE = re.compile(r"^INFERENCE_PRECISION_HINT:\s*(?:<Type: ')?(?P<type>\w+)", re.ASCII)
_PRECISIONS = {"f32": "fp32", "float32": "fp32", "f16": "fp16", "float16": "fp16"}
_PRECISIONS |= {"bf16": "bf16", "bfloat16": "bf16"}
# The plugin's own words when its device is not there.
_NO_DEVICE_RE = re.compile(
    r"^\[(?:GPU|NPU)\] |no supported devices found|VCL compiler loading failed|"
    r"Cannot load library|is not registered in the OpenVINO Runtime",
    re.ASCII,
)

# unit -> (scale, divisor) to milliseconds
_TO_MS = {
    "ms": (1.0, 1.0),
    "us": (1.0, 1e3),
    "\u00b5s": (1.0, 1e3),
    "\u03bcs": (1.0, 1e3),
    "s": (1e3, 1.0),
}


def _ms(match: re.Match[str]) -> float | None:
    scale, divisor = _TO_MS[match.group("unit")]
    return finite_or_none(match.group("value"), scale, divisor)


@dataclass(kw_only=True, eq=False)
class OpenvinoBenchmarkAppAdapter(ToolAdapter):
    framework = "openvino"
    binary = "benchmark_app"
    result_line = "'Latency' statistics ('Median:'/'Average:' ... ms) after 'Count:'"

    PRECISION_FLAGS: ClassVar[dict[str, str]] = {"fp32": "f32", "fp16": "f16"}

    device: str = "CPU"
    set_infer_precision: bool = True
    report_folder: str | None = None

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        argv = [
            binary_path,
            "-m",
            cell.model_path,
            "-d",
            tool_argument(self.framework, cell.backend) or self.device,
            "-hint",
            "none",
            "-nthreads",
            str(cell.threads),
            "-nstreams",
            "1",
            "-api",
            "sync",
            "-niter",
            str(cell.iterations),
        ]
        if self.set_infer_precision:
            argv += ["-infer_precision", self.PRECISION_FLAGS[cell.precision]]
        if cell.input_shapes:
            shapes = []
            for name, dims in cell.input_shapes.items():
                dims = shape_arg(dims, what=f"OpenVINO input {name!r}")
                shapes.append(f"{name}[{','.join(str(d) for d in dims)}]")
            argv += ["-shape", ",".join(shapes)]
            images = [name for name, dims in cell.input_shapes.items() if len(dims) == 4]
            if images:
                argv += ["-iop", ",".join(f"{name}:f32" for name in images)]
        if self.report_folder is not None:
            argv += ["-report_type", "no_counters", "-report_folder", self.report_folder]
            argv.append("-json_stats")
        if cell.profile_ops:
            argv.append("-pc")
        return argv

    def parse_op_profile(self, stdout: str, stderr: str = "", logcat: str = "") -> dict[str, Any]:
        """The op profile of a ``profile_ops`` run (see the module docs); raises
        :class:`ToolParseError` without the counters or the latency statistics."""
        for lines in streams(stdout, stderr, logcat):
            lines = [_PREFIX_RE.sub("", line, count=1).strip() for line in lines]
            rows = _counter_rows(lines)
            if rows is None:
                continue
            timed = self.parse_lines(lines, None)
            latency = timed and (timed.avg_ms or timed.median_ms)
            if timed is None or not latency:
                raise ToolParseError(self.tool, self.result_line, "beside the counters")
            # The counters' means take in the untimed first inference too.
            calls = timed.count + 1 if timed.count else 1
            return profile_result(OP_PROFILE_SOURCE, calls, rows, latency)
        raise ToolParseError(self.tool, "'Performance counts for 0-th infer request' rows")

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        lines = [_PREFIX_RE.sub("", line, count=1).strip() for line in lines]
        if self.parse_lines(lines, None) is None:
            refused = [line for line in lines if _NO_DEVICE_RE.search(line)]
            return BackendReport(refusal=quote(self.tool, refused) if refused else None)
        wanted = tool_argument(self.framework, cell.backend) or self.device
        ran = next((m["devices"] for m in map(_EXECUTION_RE.match, lines) if m), None)
        devices = [d.strip(" '\"") for d in (ran or "").split(",") if d.strip(" '\"")]
        if devices and not any(d.split(".")[0] == wanted for d in devices):
            return BackendReport(fallback=f"{self.tool} ran on {', '.join(devices)}, not {wanted}")
        hint = next((m["type"] for m in map(_PRECISION_RE.match, lines) if m), None)
        return BackendReport(
            run=accelerator_run(
                self.framework,
                cell.backend,
                device=", ".join(devices) or None,
                precision=_PRECISIONS.get(hint or "", hint),
            )
        )

    def parse_lines(self, lines: list[str], model_path: str | None) -> ToolResult | None:
        lines = [_PREFIX_RE.sub("", line, count=1).strip() for line in lines]
        counts = [i for i, s in enumerate(lines) if _COUNT_RE.match(s)]
        start = counts[-1] if counts else 0
        result = ToolResult(tool=self.tool)
        found_latency = False
        seen: set[str] = set()
        for line in lines[start:]:
            if _GROUPS_RE.match(line):
                break
            match = _STAT_RE.match(line)
            if match and match.group("key") not in seen:
                key = match.group("key")
                seen.add(key)
                value = _ms(match)
                if key in ("Median", "Latency"):
                    if result.median_ms is None:
                        result.median_ms = value
                elif key == "Average":
                    result.avg_ms = value
                elif key == "Min":
                    result.min_ms = value
                elif key == "Max":
                    result.max_ms = value
                elif key == "5 percentile":
                    result.p5_ms = value
                elif key == "95 percentile":
                    result.p95_ms = value
                else:
                    continue
                found_latency = found_latency or value is not None
                result.raw_lines.append(line)
                continue
            match = _THROUGHPUT_RE.match(line)
            if match and result.throughput_ips is None:
                result.throughput_ips = finite_or_none(match.group("value"))
                result.raw_lines.append(line)
        if not found_latency:
            return None
        if counts:
            result.count = int_or_none(_COUNT_RE.match(lines[start]).group(1))  # type: ignore[union-attr]  # start is a matching line
            result.raw_lines.insert(0, lines[start])
        for line in lines:
            if result.tool_version is None and (match := _BUILD_RE.match(line)):
                result.tool_version = match.group(1)
                result.raw_lines.append(line)
            elif result.first_ms is None and (match := _FIRST_RE.match(line)):
                result.first_ms = _ms(match)
                result.raw_lines.append(line)
            elif result.init_ms is None and (match := _INIT_RE.match(line)):
                result.init_ms = _ms(match)
                result.raw_lines.append(line)
        return result.finish()


def _counter_rows(lines: list[str]) -> list[dict[str, Any]] | None:
    """The executed rows of the first request's counters, or None without counters."""
    start = next((i for i, line in enumerate(lines) if _COUNTERS_RE.match(line)), None)
    if start is None:
        return None
    rows: list[dict[str, Any]] = []
    for line in lines[start + 1 :]:
        match = _COUNTER_ROW_RE.match(line)
        if match is None:
            if rows or line.startswith("Total time"):
                break
            continue
        real_ms = finite_or_none(match.group("real"))
        if match.group("status") != "EXECUTED" or real_ms is None:
            continue
        rows.append(
            {
                "name": match.group("name"),
                "type": match.group("type"),
                "impl": match.group("impl"),
                "time_ms": real_ms,
                "count": 1,
            }
        )
    return rows
