"""The two sides of a fidelity row (benchmarks/fidelity.py): edgebench's runner and a framework's
own tool, each run as one fresh process per block, pinned to one core.

A side's ``block(iterations)`` returns milliseconds: edgebench's per-iteration samples (the part
its timer is asked for), or the one figure a tool prints per run (its median or mean).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.builds import native_root
from edgebench.builds.native_runner import find_runner
from edgebench.builds.targets import host_target
from edgebench.framework_tools import (
    BenchncnnAdapter,
    MnnBenchmarkAdapter,
    OpenvinoBenchmarkAppAdapter,
    TnnTestAdapter,
    ToolAdapter,
    ToolCell,
)
from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_choice import RunnerChoice
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.runners import protocol

BLOCK_TIMEOUT_S = 600.0


class MissingTool(Exception):
    """The row cannot run here (no tool, no build, no artifact): it is skipped with this."""


class BlockFailed(Exception):
    """A block ran and gave no figure: the row is an error with this."""


class Side:
    """One side of a row; ``iterations`` (a block's) is set once the blocks are sized."""

    label: str
    iterations: int

    def block(self, iterations: int) -> list[float]:
        raise NotImplementedError

    def notes(self, statistic: str) -> list[str]:
        return []


@dataclass
class EdgebenchSide(Side):
    """edgebench's Python runner or edgebench-native, through the local device as `edgebench
    run` starts it. ``timer``: ``iteration`` (the whole iteration, what edgebench's p50 is) or
    ``compute`` (its compute stage: the tool's timer leaves the copies out)."""

    framework: str
    precision: str
    warmup: int
    timer: str
    core: int
    artifact: Path
    native: bool
    #: Per block, the median of the whole iterations over the median of the part compared.
    overheads: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.device = LocalDevice()
        if self.native:
            build = find_runner(host_target())
            if build is None or self.framework not in build.frameworks:
                raise MissingTool(
                    f"no edgebench-native build with {self.framework} for this host: run "
                    "`edgebench runners build`"
                )
            self.device.runner = RunnerChoice(RunnerKind.EDGEBENCH_NATIVE, build=build)
        runner = "edgebench-native" if self.native else "edgebench (Python runner)"
        self.label = f"{runner} {self.framework} {self.precision}"

    def block(self, iterations: int) -> list[float]:
        spec = {
            "schema": protocol.SPEC_SCHEMA,
            "model": str(self.artifact),
            "framework": self.framework,
            "precision": self.precision,
            "threads": 1,
            "cores": [self.core],
            "warmup": self.warmup,
            "iterations": iterations,
            "min_time_s": 0,
            "stages": self.timer == "compute",
        }
        outcome = self.device.run_runner(spec, [self.core], BLOCK_TIMEOUT_S)
        result = outcome.result
        if result is None or result.get("status") != "ok":
            why = outcome.error or (result or {}).get("error") or "no result"
            raise BlockFailed(f"{self.label}: {why}")
        whole = [ns / 1e6 for ns in result["samples_ns"]]
        if self.timer == "iteration":
            return whole
        compute = ((result.get("stages") or {}).get("samples_ns") or {}).get("compute")
        if not compute:
            raise BlockFailed(f"{self.label}: the runner timed no compute stage")
        part = [ns / 1e6 for ns in compute]
        self.overheads.append(statistics.median(whole) / statistics.median(part) - 1.0)
        return part

    def notes(self, statistic: str = "") -> list[str]:
        said = f"A: {self.label}, warm-up {self.warmup}, {self.iterations} iterations a block"
        if self.timer == "compute" and self.overheads:
            extra = statistics.median(self.overheads)
            said += (
                f"; compared: its compute stage (its whole iteration, its p50, is {extra:+.2%} "
                "longer: copy-in/out the tool does not time)"
            )
        else:
            said += "; compared: its whole iteration"
        return [said]


@dataclass
class ToolSide(Side):
    """A framework's tool: ``command(iterations)`` is its argv (taskset included), ``figure``
    reads the block's milliseconds from its stdout and stderr."""

    label: str
    command: Callable[[int], list[str]]
    figure: Callable[[str, str], float | None]
    about: str
    cwd: Path | None = None
    #: What the block's figure is, where not the tool's median or mean.
    statistic_text: str = ""

    def block(self, iterations: int) -> list[float]:
        argv = self.command(iterations)
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            cwd=self.cwd,
            check=False,
        )
        try:
            value = self.figure(proc.stdout, proc.stderr)
        except ValueError as exc:
            value, why = None, str(exc)
        else:
            why = "no figure"
        if value is None:
            tail = " | ".join((proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:])
            raise BlockFailed(f"{self.label} (rc {proc.returncode}): {why}: {tail}")
        return [value]

    def notes(self, statistic: str = "") -> list[str]:
        what = "median" if statistic == "median" else "mean (it prints no median)"
        what = self.statistic_text or what
        return [f"B: {self.label}, {self.iterations} iterations a run, its {what}; {self.about}"]


def built_version(framework: str) -> str:
    """The version of ``framework`` edgebench-native (and the tools built beside it) links."""
    build = find_runner(host_target())
    return build.frameworks.get(framework, "none") if build is not None else "none"


def venv_tool(name: str) -> str:
    """The tool next to this interpreter (the venv's), else on PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        raise MissingTool(f"{name} is not next to {sys.executable} nor on PATH")
    return found


def built_tool(given: Path | None, binary: str, flag: str) -> str:
    """``given``, else the newest ``binary`` under edgebench's native tools folder."""
    if given is not None:
        if not given.is_file():
            raise MissingTool(f"{flag} {given}: no such file")
        return str(given)
    folder = native_root() / "tools" / host_target().name
    found = sorted(folder.glob(f"*/{binary}"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise MissingTool(f"no {binary} under {folder}: build it for this host and give {flag}")
    return str(found[-1])


def pinned(core: int, adapter: ToolAdapter, binary: str, cell: Callable[[int], ToolCell]):
    return lambda n: ["taskset", "-c", str(core), *adapter.command(binary, cell(n))]


def cell_of(artifact: Path, core: int, warmup: int, **more) -> Callable[[int], ToolCell]:
    def make(iterations: int) -> ToolCell:
        return ToolCell(
            model_path=str(artifact),
            model_dir=str(artifact.parent),
            threads=1,
            warmup=warmup,
            iterations=iterations,
            cores=[core],
            **more,
        )

    return make


def benchmark_app_wall_ms(out: str, err: str) -> float | None:
    """benchmark_app's own wall clock per call: its ``Duration`` over its ``Count`` (the timed
    loop only, the first inference left out). Its printed latencies are OpenVINO's
    ``request.latency``, read inside the binding, which leaves out the Python side of each call
    that edgebench's clock holds (benchmarks/openvino_clock_gap.py)."""
    count = duration = None
    for line in out.splitlines():
        text = line.replace("[ INFO ]", "").strip()
        found = re.match(r"Count:\s*(\d+)\s*iterations", text)
        if found:
            count = int(found.group(1))
        found = re.match(r"Duration:\s*([\d.]+)\s*ms", text)
        if found:
            duration = float(found.group(1))
    if not count or duration is None:
        return None
    return duration / count


def benchmark_app_side(artifact: Path, core: int) -> ToolSide:
    binary = venv_tool("benchmark_app")
    import openvino

    inputs = openvino.Core().read_model(str(artifact)).inputs
    shapes = {i.get_any_name(): [int(d) for d in i.get_shape()] for i in inputs}
    adapter = OpenvinoBenchmarkAppAdapter()
    return ToolSide(
        label=f"benchmark_app (openvino {openvino.__version__})",
        command=pinned(core, adapter, binary, cell_of(artifact, core, 0, input_shapes=shapes)),
        figure=benchmark_app_wall_ms,
        about=(
            "one untimed first inference, then infer() alone; its printed median is OpenVINO's "
            "request.latency, without the Python side of a call, so the wall clock is compared"
        ),
        statistic_text="wall clock per call (Duration / Count)",
    )


def litert_side(artifact: Path, core: int, warmup: int) -> ToolSide:
    binary = venv_tool("litert-benchmark")

    def command(iterations: int) -> list[str]:
        return [
            *("taskset", "-c", str(core), binary, "--model", str(artifact)),
            *("--num_threads", "1", "--num_runs", str(iterations)),
            *("--warmup_runs", str(warmup)),
        ]

    def figure(out: str, err: str) -> float | None:
        for line in (out + "\n" + err).splitlines():
            if line.strip().startswith("Inference (median):"):
                value, unit = line.split(":", 1)[1].split()[:2]
                return float(value) * {"ms": 1.0, "us": 1e-3, "s": 1e3}[unit]
        return None

    return ToolSide(
        label="litert-benchmark (ai-edge-litert)",
        command=command,
        figure=figure,
        about="times CompiledModel.run_by_name alone; median printed to 0.01 ms",
    )


def benchncnn_side(artifact: Path, core: int, given: Path | None, native: bool) -> ToolSide:
    if not native:
        linked, wheel = built_version("ncnn"), importlib.metadata.version("ncnn")
        if wheel != linked:
            raise MissingTool(
                f"excluded: the Python runner's ncnn is the wheel's {wheel}, "
                f"benchncnn links ncnn {linked} (edgebench-native's): not the same library; "
                "the ncnn-native row compares the same one"
            )
    binary = built_tool(given, "benchncnn", "--benchncnn")
    io = json.loads((artifact.parent / "io.json").read_text())
    shapes = {t["onnx_name"]: t["onnx_shape"] for t in io["inputs"]}
    adapter = BenchncnnAdapter()
    cell = cell_of(artifact, core, 0, precision="fp16", input_shapes=shapes)
    return ToolSide(
        label="benchncnn",
        command=pinned(core, adapter, binary, cell),
        figure=lambda out, err: adapter.parse(out, err, model_path=str(artifact)).avg_ms,
        about="8 fixed warm-ups, fp16 storage and arithmetic, times input + extract; "
        "reads only the .param (zero weights); avg printed to 0.01 ms",
    )


def mnn_benchmark_side(artifact: Path, core: int, warmup: int, given: Path | None) -> ToolSide:
    binary = built_tool(given, "benchmark.out", "--mnn-benchmark")
    # benchmark.out runs every file of its folder: give it one holding the model alone.
    alone = Path(tempfile.gettempdir()) / "edgebench-fidelity" / artifact.parent.name
    alone.mkdir(parents=True, exist_ok=True)
    link = alone / artifact.name
    if not link.is_symlink():
        link.symlink_to(artifact)
    adapter = MnnBenchmarkAdapter()
    return ToolSide(
        label="MNN benchmark.out",
        command=pinned(core, adapter, binary, cell_of(link, core, warmup)),
        figure=lambda out, err: adapter.parse(out, err).avg_ms,
        about="times runSession (map/unmap copy nothing on the CPU); avg printed to 0.001 ms",
    )


def tnntest_side(artifact: Path, core: int, warmup: int, given: Path | None) -> ToolSide:
    binary = built_tool(given, "TNNTest", "--tnntest")
    x86 = platform.machine() in ("x86_64", "AMD64")
    adapter = TnnTestAdapter(device_type="X86" if x86 else "ARM")
    return ToolSide(
        label=f"TNNTest -dt {adapter.device_type}",
        command=pinned(core, adapter, binary, cell_of(artifact, core, warmup)),
        figure=lambda out, err: adapter.parse(out, err, model_path=str(artifact)).avg_ms,
        about="times convert-in + Forward + convert-out, -pr HIGH; avg printed to 0.001 ms",
        cwd=artifact.parent,
    )
