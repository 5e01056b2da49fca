"""TensorRT's ``trtexec``: builds an engine from the ONNX model and times it.

Command (TensorRT 8.6 and 10)::

    trtexec --onnx=model.onnx [--shapes=input:1x3x224x224,...] --warmUp=MS --iterations=N
            --duration=0 --avgRuns=1 --exportTimes=times.json [--useCudaGraph]
            --stronglyTyped --noTF32 (TensorRT 10) | --noTF32 | --fp16 | --int8 (8.6)
            [--timingCacheFile=DIR/timing.cache --saveEngine=DIR/KEY.engine]

An engine already in the cache folder is run with ``--loadEngine=DIR/KEY.engine`` instead of
``--onnx``. ``--shapes`` is given only for the inputs the model leaves open (the host passes
them in ``cell.input_shapes``). ``--duration=0`` lets the iteration count decide; trtexec warms
up for a time (``--warmUp`` milliseconds), not a count, so ``cell.warmup`` is not used.
``--avgRuns=1`` makes every trace line one inference.

Precision: trtexec builds the engine edgebench's TensorRT backend builds: a strongly typed
network (the precision is the graph's: the fp16 ONNX artifact, fp16 weights and Casts at the
fp32 edges, or the QDQ model) with TF32 off (``--noTF32``: TensorRT computes fp32 convolutions
and matrix products in TF32 unless told not to; edgebench's fp32 means fp32). TensorRT 10
takes ``--stronglyTyped --noTF32`` for every precision. TensorRT 11 networks are always strongly
typed and trtexec has no ``--fp16``/``--int8`` (it stops on ``Unknown option``). TensorRT 8.6
has no strong typing: it keeps the weakly typed ``--noTF32`` (fp32), ``--fp16`` or ``--int8``
(without it a weakly typed network ignores the Q/DQ nodes' int8). TensorRT 11 also captures
CUDA graphs and skips the host<->device copies by default, so a cell there passes
``--includeDataTransfers`` (edgebench's latency includes the copies) and ``--noCudaGraph``
unless it is the CUDA Graphs variant (TensorRT 8.6/10: ``--useCudaGraph`` for it). The
version comes from the first line of ``trtexec --help``
(``&&&& RUNNING TensorRT.trtexec [TensorRT v100300] ...``):
:meth:`TrtexecAdapter.version_command`, :func:`tensorrt_version`.

Output: ``=== Performance summary ===`` then ``Throughput: X qps`` and, for ``Latency``
(H2D + GPU compute + D2H of one query), ``Enqueue Time``, ``H2D Latency``, ``GPU Compute Time``
and ``D2H Latency``: ``min = .. ms, max = .. ms, mean = .. ms, median = .. ms,
percentile(90%) = .. ms, percentile(95%) = .. ms, percentile(99%) = .. ms`` (before 8.6 only
the 99th; 8.x before 8.6 also ``End-to-End Host Latency``). ``Timing trace has N queries over
X s`` gives the count, ``Engine built in X sec.`` (8.6 from a file: ``Engine loaded in``, 10+:
``Engine deserialized in``) the load time, ``TensorRT version: 10.3.0`` the version and
``Selected Device: NAME`` the GPU. Every line carries a ``[MM/DD/YYYY-HH:MM:SS] [I] `` prefix.

The ``--exportTimes`` file (read from the device after the run) is a JSON list, one object per
timed query (8.6+; older versions also list the warm-up ones, which start computing before the
warm-up time and are dropped here): ``startEnqMs``, ``endEnqMs``, ``startH2dMs`` ...,
``h2dMs``, ``computeMs``, ``d2hMs``, ``latencyMs`` (= h2dMs + computeMs + d2hMs) and, before
TensorRT 11, ``endToEndMs``. ``latencyMs`` are the record's samples; the summary's medians stay
beside them as trtexec's own figures (the fidelity anchor, :attr:`TrtexecResult.summary`) and
the H2D/compute/D2H medians are the stage split.

Failures: ``[E]`` lines (``[E] [TRT] ... Error Code 4: ...``, ``[E] Engine set up failed``,
``Unknown option: --fp16``) name the reason (:meth:`TrtexecAdapter.failure_reason`); no GPU
(``Cuda failure: no CUDA-capable device is detected``, on TensorRT 10 ``Cuda failure at
<file>:<line>: ...``, ``... driver version is insufficient
...``, ``Cannot find any available devices (GPUs)!``) is a refusal: the cell is unsupported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import posixpath
import re
import shlex
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .accelerator import BackendReport, accelerator_run, quote
from .base import (
    NUMBER,
    ToolAdapter,
    ToolCell,
    ToolResult,
    finite_or_none,
    int_or_none,
    shape_arg,
    streams,
)
from .site import ToolNotFound, ToolSite

#: Where trtexec is when it is not on PATH: JetPack's tensorrt package, then TensorRT's tar
#: package under ``$TENSORRT_HOME``.
DEVICE_LOCATIONS = ("/usr/src/tensorrt/bin/trtexec", "$TENSORRT_HOME/bin/trtexec")
NOT_FOUND = (
    "trtexec not found: on Jetson it is /usr/src/tensorrt/bin/trtexec (JetPack's tensorrt "
    "package); on x86, TensorRT's tar package's bin/ (set TENSORRT_HOME or put it on PATH)"
)
#: The summary's metrics, as the record's stage names where they are one.
METRICS = ("Latency", "Enqueue Time", "H2D Latency", "GPU Compute Time", "D2H Latency")
STAGE_KEYS = {"copy_in": "h2dMs", "compute": "computeMs", "copy_out": "d2hMs"}
#: What each stage of an exportTimes entry covers (the record's ``stages.boundaries``).
STAGE_BOUNDARIES = {
    "copy_in": "trtexec's H2D Latency: the host-to-device copies of one query (CUDA events)",
    "compute": "trtexec's GPU Compute Time: the engine's enqueue on the GPU (CUDA events)",
    "copy_out": "trtexec's D2H Latency: the device-to-host copies of one query (CUDA events)",
}

_PREFIX_RE = re.compile(
    r"^(?:\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\]\s*)?(?:\[(?P<sev>[IWEVF])\]\s*)?(?:\[TRT\]\s*)?",
    re.ASCII,
)
_RUNNING_RE = re.compile(r"TensorRT\.trtexec \[TensorRT v(?P<code>\d+)\]", re.ASCII)
_VERSION_RE = re.compile(r"^TensorRT version:\s*(?P<version>\d+\.\d+\.\d+)", re.ASCII)
_SUMMARY_RE = re.compile(r"^=== Performance summary ===", re.ASCII)
_THROUGHPUT_RE = re.compile(rf"^Throughput:\s*(?P<value>{NUMBER})\s*qps", re.ASCII)
_METRIC_RE = re.compile(r"^(?P<metric>[A-Za-z][A-Za-z0-9 -]*?):\s*(?P<stats>min = .*)$", re.ASCII)
_STAT_RE = re.compile(
    rf"(?P<key>min|max|mean|median|percentile\((?P<p>{NUMBER})%\))\s*=\s*(?P<value>{NUMBER})\s*ms",
    re.ASCII,
)
_COUNT_RE = re.compile(r"^Timing trace has (\d+) queries over", re.ASCII)
_ENGINE_RE = re.compile(
    rf"^Engine (?P<how>built|loaded|deserialized) in (?P<value>{NUMBER}) sec", re.ASCII
)
_DEVICE_RE = re.compile(r"^Selected Device:\s*(?P<name>.+?)\s*$", re.ASCII)
#: ``Cuda failure: <error>`` (TensorRT 8) or ``Cuda failure at <file>:<line>: <error>`` (10).
_CUDA_FAILURE_RE = re.compile(r"^Cuda failure(?: at \S+:\d+)?: ", re.ASCII)
_NO_GPU_RE = re.compile(
    r"^Cuda failure(?: at \S+:\d+)?: |Cannot find any available devices|no CUDA-capable device|"
    r"driver version is insufficient",
    re.ASCII,
)


def strip_prefix(line: str) -> tuple[str | None, str]:
    """(severity letter or None, the message) of one trtexec line."""
    match = _PREFIX_RE.match(line)
    severity = match.group("sev") if match else None
    return severity, line[match.end() :].strip() if match else line.strip()


def tensorrt_version(text: str) -> tuple[str, int] | None:
    """The TensorRT version trtexec printed (``"10.3.0"``, major 10), from its
    ``TensorRT version:`` line or the ``[TensorRT v100300]`` of its first line (8.x encodes
    major*1000 + minor*100 + patch, 10+ major*10000 + minor*100 + patch); None without either."""
    for line in text.splitlines():
        _, message = strip_prefix(line)
        match = _VERSION_RE.match(message)
        if match:
            version = match.group("version")
            return version, int(version.split(".")[0])
    match = _RUNNING_RE.search(text)
    if match is None:
        return None
    code = int(match.group("code"))
    if code >= 100000:
        major, minor, patch = code // 10000, code // 100 % 100, code % 100
    else:
        major, minor, patch = code // 1000, code // 100 % 10, code % 100
    return f"{major}.{minor}.{patch}", major


#: Bumped when the build flags change what engine a key stands for (2: strongly typed, TF32 off
#: on TensorRT 10), so an engine built with the old flags is not loaded.
ENGINE_BUILD = 2


def engine_file_name(
    model_sha256: str,
    input_shapes: Mapping[str, Sequence[int]],
    precision: str,
    tensorrt: str,
    gpu: str | None = None,
) -> str:
    """The cached engine's file name: a digest of everything an engine is specific to (the
    model's bytes, the input shapes, the precision, the TensorRT version and the GPU; the cache
    folder is the device's own, so ``gpu`` may be None on a single-GPU device), and the build
    flags' revision (``ENGINE_BUILD``)."""
    shapes = {k: list(v) for k, v in input_shapes.items()}
    key = json.dumps([model_sha256, shapes, precision, tensorrt, gpu, ENGINE_BUILD], sort_keys=True)
    return f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.engine"


@dataclass
class TrtexecTimes:
    """The ``--exportTimes`` file: per timed query, milliseconds."""

    latency_ms: list[float]
    stages_ms: dict[str, list[float]]

    def stage_medians(self) -> dict[str, float]:
        return {
            stage: statistics.median(values) for stage, values in self.stages_ms.items() if values
        }


def parse_export_times(text: str, warmup_ms: float = 0.0) -> TrtexecTimes:
    """Read the ``--exportTimes`` JSON; queries that started computing before ``warmup_ms`` are
    warm-up (listed by TensorRT before 8.6). Raises ValueError naming what is wrong."""
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"trtexec's --exportTimes file is not JSON ({exc.msg})") from exc
    if not isinstance(entries, list):
        raise ValueError("trtexec's --exportTimes file is not a JSON list")
    latency: list[float] = []
    stages: dict[str, list[float]] = {stage: [] for stage in STAGE_KEYS}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("latencyMs"), (int, float)):
            raise ValueError("trtexec's --exportTimes entry without latencyMs")
        if float(entry.get("startComputeMs", warmup_ms)) < warmup_ms:
            continue
        latency.append(float(entry["latencyMs"]))
        for stage, key in STAGE_KEYS.items():
            if isinstance(entry.get(key), (int, float)):
                stages[stage].append(float(entry[key]))
    return TrtexecTimes(latency, stages)


@dataclass
class TrtexecResult(ToolResult):
    """A ToolResult with trtexec's summary per metric (``{"GPU Compute Time": {"median":
    ..., "p99": ...}}``), the engine's origin and the GPU, and the stage medians."""

    summary: dict[str, dict[str, float]] = field(default_factory=dict)
    engine: str | None = None
    device: str | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)

    def add_times(self, times: TrtexecTimes) -> TrtexecResult:
        """The exportTimes samples become the result's samples and stage samples."""
        if times.latency_ms:
            self.samples_ms = list(times.latency_ms)
            self.count = len(times.latency_ms)
        self.stages_ms = times.stage_medians()
        self.stage_samples_ms = {k: list(v) for k, v in times.stages_ms.items() if v} or None
        self.stage_boundaries = dict(STAGE_BOUNDARIES) if self.stage_samples_ms else None
        return self.finish()


@dataclass(kw_only=True, eq=False)
class TrtexecAdapter(ToolAdapter):
    framework = "tensorrt"
    binary = "trtexec"
    precisions = ("fp32", "fp16", "int8")
    result_line = "'=== Performance summary ===' with its 'Latency: min = ...' line"
    installed_on_device = True
    no_op_profile = (
        "trtexec's summary gives whole-model min/max/avg and percentiles "
        "(its per-layer table, --dumpProfile --separateProfileRun, is not read)"
    )
    #: Installed on the device (JetPack, TensorRT's tar package), not deployed from tools_bin.
    device_locations: ClassVar[tuple[str, ...]] = DEVICE_LOCATIONS
    not_found: ClassVar[str] = NOT_FOUND

    #: TensorRT's major version (picks the precision and CUDA graph flags).
    tensorrt_major: int = 10
    warmup_ms: int = 200
    #: Device path of the --exportTimes file (None: no raw samples).
    times_file: str | None = None
    #: Device folder of the engine and timing caches (None: no cache).
    cache_dir: str | None = None
    engine_name: str | None = None
    #: Whether ``cache_dir/engine_name`` exists (run it with --loadEngine).
    engine_cached: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tensorrt_major < 8:
            raise ValueError(f"trtexec of TensorRT {self.tensorrt_major} is not supported (8.6+)")
        if self.warmup_ms < 0:
            raise ValueError(f"trtexec warm-up must be >= 0 ms, got {self.warmup_ms}")

    def locate(self, site: ToolSite) -> str:
        """A trtexec in the lab's tools_bin folder is deployed; otherwise the device's own is
        looked for: PATH, then JetPack's and TENSORRT_HOME's bin folders."""
        if site.has_local_binary(self.binary):
            return site.deploy(self.binary)
        candidates = " ".join(f'"{path}"' for path in self.device_locations)
        script = (
            f"command -v {shlex.quote(self.binary)} || "
            f'for f in {candidates}; do [ -x "$f" ] && echo "$f" && break; done; true'
        )
        found = site.shell(script, timeout=30).strip().splitlines()
        if not found:
            raise ToolNotFound(self.not_found)
        return found[0].strip()

    def prepare(self, site: ToolSite, binary: str, cell: ToolCell, model: Path) -> ToolAdapter:
        """This device's TensorRT major version, the cache folder and engine name (loaded
        when already there) and the exportTimes file."""
        probe = " ".join(shlex.quote(a) for a in self.version_command(binary))
        found = tensorrt_version(site.shell(probe + " 2>&1 | head -n 3", timeout=60))
        version, major = found if found else ("unknown", self.tensorrt_major)
        cache = site.path("cache", "tensorrt")
        name = engine_file_name(
            site.local_sha256(model), cell.input_shapes, cell.precision, version
        )
        engine = f"{cache}/{name}"
        check = (
            f"mkdir -p {shlex.quote(cache)} && test -f {shlex.quote(engine)} && echo cached; true"
        )
        return dataclasses.replace(
            self,
            tensorrt_major=major,
            cache_dir=cache,
            engine_name=name,
            engine_cached="cached" in site.shell(check, timeout=30),
            times_file=site.path("trtexec-times.json"),
        )

    def collect(self, site: ToolSite, result: ToolResult) -> None:
        """The exportTimes samples and stage split onto ``result`` (kept as the summary alone
        when the file is missing or broken)."""
        if self.times_file is None or not isinstance(result, TrtexecResult):
            return
        text = site.read(self.times_file)
        if not text:
            return
        try:
            result.add_times(parse_export_times(text, float(self.warmup_ms)))
        except ValueError as exc:
            result.raw_lines.append(str(exc))

    def version_command(self, binary_path: str) -> list[str]:
        """The probe whose first line names the version (:func:`tensorrt_version`)."""
        return [binary_path, "--help"]

    @property
    def engine_path(self) -> str | None:
        if self.cache_dir is None or self.engine_name is None:
            return None
        return posixpath.join(self.cache_dir, self.engine_name)

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        engine = self.engine_path
        argv = [binary_path]
        if engine is not None and self.engine_cached:
            argv.append(f"--loadEngine={engine}")
        else:
            argv.append(f"--onnx={cell.model_path}")
            argv += self._precision_flags(cell.precision)
            if self.cache_dir is not None:
                argv.append(f"--timingCacheFile={posixpath.join(self.cache_dir, 'timing.cache')}")
            if engine is not None:
                argv.append(f"--saveEngine={engine}")
        if cell.input_shapes:
            shapes = [
                f"{name}:{'x'.join(str(d) for d in shape_arg(dims, what=f'input {name!r}'))}"
                for name, dims in cell.input_shapes.items()
            ]
            argv.append(f"--shapes={','.join(shapes)}")
        argv += [
            f"--warmUp={self.warmup_ms}",
            f"--iterations={cell.iterations}",
            "--duration=0",
            "--avgRuns=1",
        ]
        if self.tensorrt_major >= 11:
            argv.append("--includeDataTransfers")
            if not cell.cuda_graph:
                argv.append("--noCudaGraph")
        elif cell.cuda_graph:
            argv.append("--useCudaGraph")
        if self.times_file is not None:
            argv.append(f"--exportTimes={self.times_file}")
        return argv

    def _precision_flags(self, precision: str) -> list[str]:
        if self.tensorrt_major >= 11:  # always strongly typed: the fp16 / QDQ graph decides
            return ["--noTF32"]
        if self.tensorrt_major >= 10:  # the same engine as edgebench's own build
            return ["--stronglyTyped", "--noTF32"]
        if precision == "fp32":
            return ["--noTF32"]
        return {"fp16": ["--fp16"], "int8": ["--int8"]}[precision]

    def parse_lines(self, lines: list[str], model_path: str | None) -> TrtexecResult | None:
        messages = [strip_prefix(line)[1] for line in lines]
        start = next((i for i, m in enumerate(messages) if _SUMMARY_RE.match(m)), None)
        if start is None:
            return None
        result = TrtexecResult(tool=self.tool)
        for message in messages[start + 1 :]:
            if match := _THROUGHPUT_RE.match(message):
                result.throughput_ips = finite_or_none(match.group("value"))
            elif (match := _METRIC_RE.match(message)) and match.group("metric") in METRICS:
                result.summary[match.group("metric")] = _stats(match.group("stats"))
            else:
                continue
            result.raw_lines.append(message)
        latency = result.summary.get("Latency", {})
        if not latency:
            return None
        result.min_ms, result.max_ms = latency.get("min"), latency.get("max")
        result.avg_ms, result.median_ms = latency.get("mean"), latency.get("median")
        result.p95_ms = latency.get("p95")
        for message in messages:
            if match := _COUNT_RE.match(message):
                result.count = int_or_none(match.group(1))
            elif (match := _ENGINE_RE.match(message)) and result.engine != "built":
                # A build run also deserializes what it built: the build time is the load time.
                result.engine = "built" if match.group("how") == "built" else "cached"
                result.init_ms = finite_or_none(match.group("value"), 1000.0)
            elif match := _DEVICE_RE.match(message):
                result.device = match.group("name")
            else:
                continue
            result.raw_lines.append(message)
        found = tensorrt_version("\n".join(lines))
        result.tool_version = found[0] if found else None
        return result.finish()

    def failure_reason(self, stdout: str, stderr: str = "") -> str | None:
        """trtexec's own words for a run without a result: its first error lines."""
        errors = [
            message
            for lines in streams(stdout, stderr)
            for severity, message in map(strip_prefix, lines)
            if severity in ("E", "F") or _CUDA_FAILURE_RE.match(message)
        ]
        return quote(self.tool, errors) if errors else None

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        messages = [strip_prefix(line)[1] for line in lines]
        result = self.parse_lines(lines, None)
        if result is None:
            refused = [m for m in messages if _NO_GPU_RE.search(m)]
            return BackendReport(refusal=quote(self.tool, refused) if refused else None)
        return BackendReport(
            run=accelerator_run(
                self.framework,
                cell.backend,
                api="TensorRT",
                device=result.device,
                software=False,
                precision=cell.precision,
                cuda_graph=cell.cuda_graph,
                engine_build_ms=result.init_ms if result.engine == "built" else None,
                engine_cache=_engine_cache(self, result),
                stages_note="trtexec: H2D, GPU compute and D2H timed with CUDA events",
            )
        )


def _engine_cache(adapter: TrtexecAdapter, result: TrtexecResult) -> str:
    if adapter.engine_path is None:
        return "off"
    return "hit" if result.engine == "cached" else "miss"


def _stats(text: str) -> dict[str, float]:
    """``min = 1 ms, ..., percentile(99%) = 2 ms`` as {"min": 1.0, ..., "p99": 2.0}."""
    stats: dict[str, float] = {}
    for match in _STAT_RE.finditer(text):
        value = finite_or_none(match.group("value"))
        if value is None:
            continue
        percentile = match.group("p")
        stats[match.group("key") if percentile is None else f"p{float(percentile):g}"] = value
    return stats


def read_summary(raw_lines: Sequence[str]) -> dict[str, dict[str, Any]]:
    """trtexec's summary from a record's ``native.raw_lines`` (what benchmarks/gpu_check.py
    compares edgebench's p50 with: ``read_summary(lines)["Latency"]["median"]``)."""
    out: dict[str, dict[str, Any]] = {}
    for line in raw_lines:
        match = _METRIC_RE.match(strip_prefix(line)[1])
        if match and match.group("metric") in METRICS:
            out[match.group("metric")] = _stats(match.group("stats"))
    return out
