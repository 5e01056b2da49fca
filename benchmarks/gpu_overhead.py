#!/usr/bin/env python3
"""What does edgebench add to ncnn on Vulkan, against ncnn's own benchncnn on the same device?

On this machine's Vulkan device (Mesa's lavapipe where there is no GPU), one converted ncnn
model, one CPU thread, it runs in rounds, rotating their order so drift hits all alike:
  native fp32/fp16   edgebench-native (`edgebench runners build`), backend vulkan: its p50
  python fp32/fp16   runners/runner.py with the ncnn wheel, backend vulkan: its p50
  benchncnn          ncnn's own tool with gpu_device 0: its average (it prints no median);
                     it always turns fp16 storage and arithmetic on, so compare it with fp16
Each figure is the median over the rounds. Next to each, the ratio to benchncnn, the first
inference, the medians of the three stages and the CPU time per inference.

benchncnn is compiled against edgebench-native's own ncnn library (edgebench/builds/benchncnn.py):
its source is the ncnn release's benchmark/benchncnn.cpp, which the ncnn sdist leaves out, so
give that file with --benchncnn-source (or a built tool with --benchncnn); without either the
table has edgebench's rows only.

A software Vulkan device computes on the CPU: its latencies say nothing about a GPU, and the
ratios say what each harness adds around the same device work. It reports; it does not judge
(exit status 0).

Usage: python benchmarks/gpu_overhead.py [--model mobilenetv2] [--rounds 3] [--iterations 8]
           [--benchncnn-source benchncnn.cpp | --benchncnn PATH]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from fidelity import convert
from runner_rounds import (
    RUNNER_ARGV,
    benchncnn_avg_ms,
    host_runner,
    p50_ms,
    rotated_rounds,
    run_protocol,
)

from edgebench.builds import BuildError
from edgebench.builds.benchncnn import build_benchncnn
from edgebench.builds.targets import host_target
from edgebench.runners import protocol

STAGES = ("copy_in", "compute", "copy_out")


def gpu_spec(model: Path, precision: str, iterations: int) -> dict:
    return {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": "ncnn",
        "backend": "vulkan",
        "precision": precision,
        "threads": 1,
        "warmup": 1,
        "iterations": iterations,
        "min_time_s": 0,
    }


def summary(result: dict) -> dict:
    """A runner's result as the table's figures (milliseconds)."""
    samples = (result.get("stages") or {}).get("samples_ns") or {}
    return {
        "ms": p50_ms(result),
        "precision": (result.get("accelerator") or {}).get("precision"),
        "first": result["first_inference_ns"] / 1e6,
        "cpu": (result.get("cpu_ns_per_inference") or 0) / 1e6,
        **{stage: statistics.median(samples[stage]) / 1e6 for stage in STAGES if stage in samples},
    }


def find_benchncnn(args: argparse.Namespace) -> Path | None:
    if args.benchncnn:
        return Path(args.benchncnn)
    if not args.benchncnn_source:
        print("benchncnn: none (give --benchncnn-source, ncnn's benchmark/benchncnn.cpp)")
        return None
    try:
        return build_benchncnn(host_target(), Path(args.benchncnn_source), progress=print)
    except BuildError as exc:
        print(f"benchncnn: {exc}")
        return None


def median_row(runs: list[dict]) -> dict:
    """Each figure's median over the rounds; the precision of the first."""
    row = {k: statistics.median(run[k] for run in runs) for k in runs[0] if k != "precision"}
    row["precision"] = runs[0]["precision"]
    return row


def print_table(rows: dict[str, dict], bench: float | None) -> None:
    print(
        f"{'measurer':<14}{'ran':>6}{'p50/avg':>10}{'/bench':>8}{'first':>9}"
        f"{'copy_in':>9}{'compute':>9}{'copy_out':>9}{'cpu/inf':>9}"
    )

    def cell(row: dict, key: str) -> str:
        return f"{row[key]:>9.2f}" if key in row else f"{'-':>9}"

    for name, row in rows.items():
        ratio = f"{row['ms'] / bench:>8.3f}" if bench else f"{'-':>8}"
        print(
            f"{name:<14}{row['precision'] or '?':>6}{row['ms']:>10.2f}{ratio}{cell(row, 'first')}"
            + "".join(cell(row, key) for key in (*STAGES, "cpu"))
        )
    print("(milliseconds; p50 for edgebench, benchncnn's average; /bench: the ratio to it)")


def measure_protocol(argv: list[str], spec: dict) -> dict:
    """One measurement of ``spec`` by the runner ``argv``, summarised."""
    return summary(run_protocol(argv, spec))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--benchncnn", help="a benchncnn built with Vulkan for this host")
    parser.add_argument("--benchncnn-source", help="ncnn's benchmark/benchncnn.cpp, same release")
    args = parser.parse_args()
    built = host_runner()
    started = time.monotonic()
    model = convert(args.model, "ncnn")
    native, python = [str(built.path)], list(RUNNER_ARGV)
    measurers: dict[str, Callable[[], dict]] = {
        f"{name} {precision}": functools.partial(
            measure_protocol, argv, gpu_spec(model, precision, args.iterations)
        )
        for name, argv in (("native", native), ("python", python))
        for precision in ("fp32", "fp16")
    }
    bench_binary = find_benchncnn(args)
    if bench_binary is not None:
        measurers["benchncnn"] = lambda: {
            "ms": benchncnn_avg_ms(str(bench_binary), model, None, args.iterations, "vulkan"),
            "precision": "fp16",
        }
    figures = rotated_rounds(measurers, args.rounds, "", lambda row: row["ms"])
    rows = {name: median_row(runs) for name, runs in figures.items()}
    import ncnn

    print(
        f"\n{args.model} on Vulkan, 1 thread, {args.iterations} iterations x {args.rounds} "
        f"rounds; ncnn: native {built.frameworks['ncnn']}, Python wheel {ncnn.__version__}, "
        f"device {ncnn.get_gpu_info(ncnn.get_default_gpu_index()).device_name()}"
    )
    print_table(rows, rows["benchncnn"]["ms"] if "benchncnn" in rows else None)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
