"""What benchmarks/gpu_check.py and gpu_overhead.py share (not a script): the on-device runner
run once on a spec, benchncnn's average, this host's edgebench-native build, and measurers run
in rotated rounds."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from edgebench.builds.native_runner import BuiltRunner, find_runner
from edgebench.builds.targets import host_target
from edgebench.framework_tools import BenchncnnAdapter, ToolCell
from edgebench.runners import protocol

REPO = Path(__file__).resolve().parent.parent
#: The Python runner, as the host's local device runs it (the installed package).
RUNNER_ARGV = [sys.executable, "-m", "edgebench.runners"]
T = TypeVar("T")


def run_protocol(argv: list[str], spec: dict) -> dict:
    """A runner (``argv``) on ``spec``: its result; exits with the runner's error."""
    proc = subprocess.run(
        [*argv, "-"], input=json.dumps(spec), capture_output=True, text=True, timeout=1800
    )
    line = next(
        ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith(protocol.RESULT_PREFIX)
    )
    result = json.loads(line[len(protocol.RESULT_PREFIX) :])
    if result["status"] != "ok":
        raise SystemExit(f"{argv[0]}: {result['error']}")
    return result


def p50_ms(result: dict) -> float:
    return statistics.median(result["samples_ns"]) / 1e6


def benchncnn_avg_ms(
    binary: str, model: Path, core: int | None, iterations: int, backend: str = "cpu"
) -> float:
    """benchncnn's average over ``iterations`` on one thread (pinned to ``core`` when given)."""
    io = json.loads((model.parent / "io.json").read_text())
    shapes = {t["onnx_name"]: t["onnx_shape"] for t in io["inputs"]}
    adapter = BenchncnnAdapter()
    cell = ToolCell(
        model_path=str(model),
        model_dir=str(model.parent),
        threads=1,
        warmup=0,
        iterations=iterations,
        cores=None if core is None else [core],
        precision="fp16",
        input_shapes=shapes,
        backend=backend,
    )
    pin = [] if core is None else ["taskset", "-c", str(core)]
    argv = [*pin, *adapter.command(binary, cell)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    parsed = adapter.parse(proc.stdout, proc.stderr, "", model_path=str(model))
    if parsed.avg_ms is None:
        raise RuntimeError(f"{binary} printed no average: {proc.stdout[-200:]}")
    return float(parsed.avg_ms)


def host_runner() -> BuiltRunner:
    """This host's edgebench-native build, named on stdout; exits saying how to build one."""
    built = find_runner(host_target())
    if built is None:
        raise SystemExit("no edgebench-native build for this host: run `edgebench runners build`")
    print(f"edgebench-native: {built.path} ({built.describe()})")
    return built


def rotated_rounds(
    measurers: dict[str, Callable[[], T]], rounds: int, label: str, ms: Callable[[T], float]
) -> dict[str, list[T]]:
    """Each measurer's figures over ``rounds`` rounds, their order rotated each round so that
    drift hits all alike; a line per round (``ms`` of a figure: its milliseconds)."""
    figures: dict[str, list[T]] = {name: [] for name in measurers}
    names = list(measurers)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            figures[name].append(measurers[name]())
        print(
            f"{label}round {round_index + 1}: "
            + ", ".join(f"{n} {ms(figures[n][-1]):.2f}" for n in names),
            flush=True,
        )
    return figures
