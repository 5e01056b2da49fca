#!/usr/bin/env python3
"""Does edgebench-native measure ncnn as the Python runner and ncnn's own benchncnn do?

On one core, one thread and the same converted ncnn model, it runs three measurers in rounds,
rotating their order each round so that drift hits all of them alike:
  native    edgebench-native (the build for this host, `edgebench runners build`), its p50
  python    runners/runner.py with the ncnn wheel, its p50
  benchncnn ncnn's own tool (optional: --benchncnn PATH), its average (it prints no median)
Each figure is the median over the rounds. The table gives the ratios native/python and
native/benchncnn (the goal: within 2%).

benchncnn always turns on fp16 storage and arithmetic, and pool allocators. So the table also
has native at fp16, next to benchncnn. (On x86, ncnn's fp16 storage is used where the CPU has
F16C.) The Python runner's ncnn is the PyPI wheel, which may be a newer ncnn than the one
edgebench-native was built from. Both versions are printed.

It reports; it does not judge (exit status 0).

Usage: python benchmarks/native_fidelity.py [--models mobilenetv2,detector] [--rounds 5]
           [--iterations 200] [--warmup 20] [--core 1] [--benchncnn /path/to/benchncnn]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from edgebench.builds.native_runner import BuiltRunner, find_runner
from edgebench.builds.targets import host_target
from edgebench.framework_tools import BenchncnnAdapter, NativeCell
from edgebench.runners import protocol

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "runners" / "runner.py"
T = TypeVar("T")


def convert(model: str) -> Path:
    made = subprocess.run(
        [sys.executable, "-m", "edgebench", "convert", model, "--to", "ncnn"],
        capture_output=True,
        text=True,
        check=True,
    )
    (folder, first), *_ = re.findall(r"-> (\S+) \(([^,)]+)", made.stdout)
    return Path(folder) / first


def run_protocol(argv: list[str], spec: dict) -> dict:
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
    cell = NativeCell(
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenetv2,detector")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--benchncnn", help="a benchncnn binary built for this host")
    args = parser.parse_args()
    built = host_runner()
    started = time.monotonic()
    rows = []
    pin = ["taskset", "-c", str(args.core)]
    for model_name in args.models.split(","):
        model = convert(model_name)
        spec = {
            "schema": protocol.SPEC_SCHEMA,
            "model": str(model),
            "framework": "ncnn",
            "threads": 1,
            "cores": [args.core],
            "warmup": args.warmup,
            "iterations": args.iterations,
            "min_time_s": 0,
        }
        measurers = {
            "native": lambda s=spec: p50_ms(run_protocol([*pin, str(built.path)], s)),
            "native_fp16": lambda s=spec: p50_ms(
                run_protocol([*pin, str(built.path)], {**s, "precision": "fp16"})
            ),
            "python": lambda s=spec: p50_ms(run_protocol([*pin, sys.executable, str(RUNNER)], s)),
        }
        if args.benchncnn:
            measurers["benchncnn"] = lambda m=model: benchncnn_avg_ms(
                args.benchncnn, m, args.core, args.iterations
            )
        figures = rotated_rounds(measurers, args.rounds, f"  {model_name} ", float)
        medians = {name: statistics.median(values) for name, values in figures.items()}
        rows.append((model_name, medians))
    import ncnn

    print()
    print(
        f"core {args.core}, 1 thread, {args.iterations} iterations x {args.rounds} rounds; "
        f"ncnn: native {built.frameworks['ncnn']}, Python wheel {ncnn.__version__}"
    )
    header = f"{'model':<14}{'native p50':>12}{'python p50':>12}{'native/py':>11}"
    if args.benchncnn:
        header += f"{'native fp16':>13}{'benchncnn avg':>15}{'fp16/bench':>12}"
    print(header)
    for model_name, m in rows:
        line = (
            f"{model_name:<14}{m['native']:>10.2f}ms{m['python']:>10.2f}ms"
            f"{m['native'] / m['python']:>11.3f}"
        )
        if args.benchncnn:
            line += (
                f"{m['native_fp16']:>11.2f}ms{m['benchncnn']:>13.2f}ms"
                f"{m['native_fp16'] / m['benchncnn']:>12.3f}"
            )
        print(line)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
