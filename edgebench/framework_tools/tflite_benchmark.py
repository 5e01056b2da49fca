"""LiteRT / TensorFlow Lite ``benchmark_model``.

Command::

    benchmark_model --graph=M --num_threads=N --warmup_runs=W --num_runs=R
                    --min_secs=0 --warmup_min_secs=0 [--use_xnnpack=true]
                    [--allow_fp16=true [--xnnpack_force_fp16=true]]

``--num_runs``/``--warmup_runs`` are minimums: by default the tool keeps running until
``min_secs`` (1 s) / ``warmup_min_secs`` (0.5 s) have passed, so the adapter sets both to 0 to
get exactly the cell's counts (``exact_runs=False`` leaves the tool's defaults). Runs still stop
at ``max_secs`` (150 s); the parsed ``count`` is what the tool reports.

Output (to stderr, or logcat on Android; lines may carry ``INFO: `` or a logcat prefix)::

    Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if ...
    count=2 first=339304 curr=266325 min=266325 max=339304 avg=302814 std=36489
    Running benchmark for at least 50 iterations and at least 1 seconds but terminate if ...
    count=50 first=79449 curr=81350 min=77385 max=88213 avg=79732 std=1929 [p5= median= p95=]
    Inference timings in us: Init: 17187, First inference: 3512391, Warmup (avg): 3.51239e+06, ...
    Memory footprint delta from the start of the tool (MB): init=39.4531 overall=40.8281

Statistics are in microseconds (``avg`` and ``std`` in C++ default float formatting, so possibly
scientific notation). There are two ``count=`` lines, warm-up first: the result is the first
``count=`` line after the *last* ``Running benchmark for`` line (the timed runs), or the last
``count=`` line when the tool printed no such line. Op profiling (``--enable_op_profiling``)
adds more ``count=`` lines (``Timings (microseconds): count=...``) after the timed one; they are
ignored. When every run took the same time the tool prints ``count=N curr=T(all same)``, which
gives min = max = avg = T and std = 0.

``first_ms`` is the first warm-up inference ("First inference"), ``init_ms`` the interpreter
initialisation ("Init"). ``memory_mb`` is the ``overall`` value of the "Memory footprint delta"
line: the growth of the process's peak resident set size (getrusage max RSS) from the tool's
start to the end of the timed runs, in MB. It includes the tool's own allocations and is only
approximate (the tool says so itself).

Op profile (``cell.profile_ops``: ``--enable_op_profiling=true``, a run of its own): after
"Operator-wise Profiling Info for Regular Benchmark Runs:" comes the "Run Order" table, one row
per node of the timed runs (warm-up excluded)::

    [node type]  [start]  [first]  [avg ms]  [%]  [cdf%]  [mem KB]  [times called]  [Name]
    CONV_2D        0.000   87.754    60.957  2.066%  2.066%  0.000  1  [MobilenetV1/.../Relu6]:0

(``[start]`` is gone in newer builds; the columns are read from the header.) ``avg ms`` is the
mean of one call and ``times called`` the calls per run (TensorFlow's StatsCalculator), so a
node's time per run is their product. Delegated nodes (XNNPACK's own operators, named
``Delegate/<operator>:<index>`` since TF 2.9.1) get ``impl`` "delegate", the others "builtin".
:meth:`TfliteBenchmarkAdapter.parse_op_profile` returns runners/protocol/op_profile.py's result.

Accelerators: ``gpu`` adds ``--use_gpu=true --gpu_precision_loss_allowed=<fp16 cell>`` (the tool
allows fp16 on the GPU unless told not to), ``nnapi`` adds ``--use_nnapi=true`` (and
``--nnapi_allow_fp16=true`` for an fp16 cell). TFLite announces what the delegate took::

    VERBOSE: Replacing 31 out of 31 node(s) with delegate (TfLiteNnapiDelegate) node, yielding 1 partitions for the whole graph.
    INFO: Explicitly applied NNAPI delegate, and the model graph will be completely executed by the delegate.

(older builds: ``Replacing 31 node(s) with delegate (...) node, yielding 1 partitions.``, no
total). Only the line naming the cell's delegate (``TfLiteGpuDelegateV2``,
``TfLiteNnapiDelegate``) counts: XNNPACK prints one of its own for the nodes left to the CPU.
``Though GPU delegate is explicitly applied, the model graph will not be executed by the
delegate.`` and ``GPU acceleration is unsupported on this platform.`` (the delegate was not
created) mean the CPU ran it: a fallback, as is a result with no line saying the delegate took
anything (a build for another OS ignores ``--use_nnapi``). ``Failed to apply GPU delegate.``
ends the run without a result: a refusal, quoting the delegate's reasons.
"""  # noqa: E501

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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
    streams,
)

_MARKER_RE = re.compile(r"Running benchmark for (?:at least )?\d+ iterations", re.ASCII)
_COUNT_RE = re.compile(r"(?:^|[\s:])count=(\d+)\b", re.ASCII)
_PAIR_RE = re.compile(rf"\b([A-Za-z0-9_]+)=({NUMBER})", re.ASCII)
_TIMINGS_RE = re.compile(r"Inference timings in us:", re.ASCII)
_TIMING_FIELD_RE = re.compile(rf"([A-Za-z][A-Za-z ()]*?)\s*:\s*({NUMBER})", re.ASCII)
_MEMORY_RE = re.compile(
    rf"Memory footprint delta from the start of the tool \(MB\):.*?\boverall=({NUMBER})", re.ASCII
)
_INIT_SESSION_RE = re.compile(rf"Initialized session in ({NUMBER})\s*ms", re.ASCII)

_US = 1000.0  # microseconds per millisecond

OP_PROFILE_SOURCE = "benchmark_model --enable_op_profiling"
_OP_SECTION = "Operator-wise Profiling Info for Regular Benchmark Runs"
_RUN_ORDER_RE = re.compile(r"^=+\s*Run Order\s*=+$", re.ASCII)

#: Per backend: the provider name in the tool's messages and the delegate kernels' names.
_DELEGATES = {
    "gpu": ("GPU", ("TfLiteGpuDelegateV2", "TfLiteGpuDelegate")),
    "nnapi": ("NNAPI", ("TfLiteNnapiDelegate",)),
}
_REPLACING_RE = re.compile(
    r"Replacing (?P<taken>\d+)(?: out of (?P<total>\d+))? node\(s\) with delegate "
    r"\((?P<name>[^)]*)\) node, yielding (?P<parts>\d+) partitions",
    re.ASCII,
)
_APPLIED_RE = re.compile(r"Explicitly applied (?P<provider>\S+) delegate, and the model graph")
_GPU_API_RE = re.compile(r"Initialized (?P<api>OpenCL|OpenGL)-based API", re.ASCII)
_NNAPI_DEVICE_RE = re.compile(r"NNAPI accelerator name: \[(?P<name>[^\]]+)\]", re.ASCII)
#: NNAPI's CPU implementation (Android's reference driver).
_NNAPI_ON_CPU = "nnapi-reference"
_COLUMN_RE = re.compile(r"\[([^\]]+)\]", re.ASCII)


@dataclass(kw_only=True, eq=False)
class TfliteBenchmarkAdapter(ToolAdapter):
    framework = "tflite"
    binary = "benchmark_model"
    result_line = "'count=... min=... max=... avg=...' line after 'Running benchmark for ...'"

    use_xnnpack: bool | None = True
    exact_runs: bool = True
    xnnpack_force_fp16: bool = True

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        argv = [
            binary_path,
            f"--graph={cell.model_path}",
            f"--num_threads={cell.threads}",
            f"--warmup_runs={cell.warmup}",
            f"--num_runs={cell.iterations}",
        ]
        if self.exact_runs:
            argv += ["--min_secs=0", "--warmup_min_secs=0"]
        if self.use_xnnpack is not None:
            argv.append(f"--use_xnnpack={'true' if self.use_xnnpack else 'false'}")
        if cell.precision == "fp16":
            argv.append("--allow_fp16=true")
            if self.use_xnnpack and self.xnnpack_force_fp16:
                argv.append("--xnnpack_force_fp16=true")
        selected = tool_argument(self.framework, cell.backend)
        if selected is not None:
            argv.append(selected)
            fp16 = "true" if cell.precision == "fp16" else "false"
            if cell.backend == "gpu":
                argv.append(f"--gpu_precision_loss_allowed={fp16}")
            elif cell.precision == "fp16":
                argv.append("--nnapi_allow_fp16=true")
        if cell.profile_ops:
            argv.append("--enable_op_profiling=true")
        return argv

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        provider, kernels = _DELEGATES[cell.backend]
        failed = f"Failed to apply {provider} delegate"
        if not any(_COUNT_RE.search(line) or _TIMINGS_RE.search(line) for line in lines):
            at = next((i for i, line in enumerate(lines) if failed in line), None)
            if at is None:
                return BackendReport()
            # The delegate's own reasons come just before (Init/Prepare errors, node numbers).
            reasons = [line for line in lines[max(0, at - 4) : at] if "elegate" in line]
            return BackendReport(refusal=quote(self.tool, [lines[at], *reasons]))
        fallback = [
            line
            for line in lines
            if f"{provider} acceleration is unsupported on this platform" in line
            or (f"Though {provider} delegate is explicitly applied" in line and "not" in line)
        ]
        if fallback:
            return BackendReport(fallback=quote(self.tool, fallback))
        taken = next(
            (m for m in map(_REPLACING_RE.search, lines) if m and m["name"] in kernels), None
        )
        applied = any(
            (m := _APPLIED_RE.search(line)) and m["provider"] == provider for line in lines
        )
        if taken is None and not applied:
            return BackendReport(
                fallback=f"{self.tool} printed no line saying the {provider} delegate took any "
                f"node (a build without it ignores {tool_argument(self.framework, cell.backend)})"
            )
        gl = next((m["api"] for m in map(_GPU_API_RE.search, lines) if m), None)
        device = next((m["name"] for m in map(_NNAPI_DEVICE_RE.search, lines) if m), None)
        return BackendReport(
            run=accelerator_run(
                self.framework,
                cell.backend,
                api=gl,
                device=device,
                software=device == _NNAPI_ON_CPU,
                precision=cell.precision,
                delegated_ops=int(taken["taken"]) if taken else None,
                total_ops=int(taken["total"]) if taken and taken["total"] else None,
            )
        )

    def parse_op_profile(self, stdout: str, stderr: str = "", logcat: str = "") -> dict[str, Any]:
        """The op profile of a ``profile_ops`` run (see the module docs); raises
        :class:`ToolParseError` without the table or the timed ``count=`` line."""
        for lines in streams(stdout, stderr, logcat):
            rows = _op_rows(lines)
            if rows is None:
                continue
            timed = self.parse_lines(lines, None)
            if timed is None or timed.avg_ms is None:
                raise ToolParseError(self.tool, self.result_line, "beside the op profile")
            return profile_result(OP_PROFILE_SOURCE, timed.count or 1, rows, timed.avg_ms)
        raise ToolParseError(self.tool, f"'{_OP_SECTION}' table")

    def parse_lines(self, lines: list[str], model_path: str | None) -> ToolResult | None:
        count_idx = _timed_count_line(lines)
        timings_idx = next((i for i, s in enumerate(lines) if _TIMINGS_RE.search(s)), None)
        if count_idx is None and timings_idx is None:
            return None
        result = ToolResult(tool=self.tool)
        if count_idx is not None:
            line = lines[count_idx]
            result.raw_lines.append(line)
            start = _COUNT_RE.search(line)
            if start is None:  # pragma: no cover - _timed_count_line only returns matches
                return None
            result.count = int_or_none(start.group(1))
            values = {key: text for key, text in _PAIR_RE.findall(line[start.start() :])}
            if result.count == 0:
                raise ToolParseError(self.tool, "timed runs", "the tool reported count=0")
            _fill_stats(result, values, all_same="(all same)" in line or "first" not in values)
        if timings_idx is not None:
            line = lines[timings_idx]
            result.raw_lines.append(line)
            timing = {
                key.strip(): text
                for key, text in _TIMING_FIELD_RE.findall(line.split("Inference timings in us:")[1])
            }
            result.init_ms = finite_or_none(timing.get("Init"), divide_by=_US)
            # "First inference" is the first warm-up run; with no warm-up the tool prints 0
            # and a NaN warm-up average.
            if finite_or_none(timing.get("Warmup (avg)")) is not None:
                result.first_ms = finite_or_none(timing.get("First inference"), divide_by=_US)
            if result.avg_ms is None:
                result.avg_ms = finite_or_none(timing.get("Inference (avg)"), divide_by=_US)
        if result.init_ms is None:
            for line in lines:
                match = _INIT_SESSION_RE.search(line)
                if match:
                    result.init_ms = finite_or_none(match.group(1))
                    result.raw_lines.append(line)
                    break
        for line in lines:
            match = _MEMORY_RE.search(line)
            if match:
                result.memory_mb = finite_or_none(match.group(1))
                result.raw_lines.append(line)
        if result.avg_ms is None and result.min_ms is None:
            return None
        return result.finish()


def _timed_count_line(lines: list[str]) -> int | None:
    """Index of the timed-run ``count=`` line (see the module docs)."""
    markers = [i for i, s in enumerate(lines) if _MARKER_RE.search(s)]
    start = markers[-1] + 1 if markers else 0
    counts = [i for i in range(start, len(lines)) if _COUNT_RE.search(lines[i])]
    if not counts:
        return None
    return counts[0] if markers else counts[-1]


def _fill_stats(result: ToolResult, values: dict[str, str], *, all_same: bool) -> None:
    def us(key: str) -> float | None:
        return finite_or_none(values.get(key), divide_by=_US)

    result.min_ms, result.max_ms, result.avg_ms = us("min"), us("max"), us("avg")
    result.std_ms = us("std")
    result.p5_ms, result.median_ms, result.p95_ms = us("p5"), us("median"), us("p95")
    curr = us("curr")
    if all_same and curr is not None and result.min_ms is None and result.avg_ms is None:
        # `count=N curr=T(all same)` (or `count=1 curr=T`): every run took T.
        result.min_ms = result.max_ms = result.avg_ms = curr
        result.std_ms = 0.0


def _op_rows(lines: list[str]) -> list[dict[str, Any]] | None:
    """The rows of the Run Order table after the op-profile header (builds before the
    initialisation profile print the table alone), or None without a table."""
    sections = [i for i, line in enumerate(lines) if _OP_SECTION in line]
    start = sections[-1] if sections else 0
    at = next((i for i in range(start, len(lines)) if _RUN_ORDER_RE.match(lines[i])), None)
    if at is None or at + 1 >= len(lines):
        return None
    columns = _COLUMN_RE.findall(lines[at + 1])
    numbers = columns[1:-1]
    if "avg ms" not in numbers or "times called" not in numbers:
        return None
    row_re = re.compile(
        r"^(?P<type>.+?)" + rf"\s+({NUMBER})%?" * len(numbers) + r"\s+(?P<name>\S.*)$", re.ASCII
    )
    rows = []
    for line in lines[at + 2 :]:
        match = row_re.match(line)
        if match is None:
            break
        values = dict(zip(numbers, match.groups()[1 : 1 + len(numbers)], strict=False))
        avg_ms = finite_or_none(values["avg ms"])
        if avg_ms is None:
            continue
        # Old builds print 0 calls (an integer division by the run count); a listed node ran.
        calls = max(1, int(finite_or_none(values["times called"]) or 0))
        name, op_type = match.group("name").strip(), match.group("type").strip()
        delegated = name.startswith("Delegate/") or "Delegate" in op_type
        rows.append(
            {
                "name": name,
                "type": op_type,
                "impl": "delegate" if delegated else "builtin",
                "time_ms": avg_ms * calls,
                "count": calls,
            }
        )
    return rows
