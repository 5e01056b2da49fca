#!/usr/bin/env python3
"""The whole NVIDIA check on one machine with a GPU: TensorRT through edgebench against trtexec,
ONNX Runtime's CUDA and TensorRT providers against TensorRT, CUDA Graphs, the stage split,
instance memory and many-stream throughput.

Per model (default mobilenetv2, resnet50, vit-tiny; one precision, default fp16), it prints:
  fidelity    edgebench's TensorRT p50 (runners/runner.py, backend cuda) against trtexec's
              median Latency (H2D + compute + D2H, as edgebench's iteration is), as a ratio
              (the goal: 1.00 +- 0.03). The rows run in rotated rounds; each figure is the
              median over the rounds.
  engines     ONNX Runtime on cuda, ONNX Runtime on tensorrt, TensorRT: p50, and each as a
              ratio of TensorRT's; each with CUDA Graphs off and on.
  stages      TensorRT's H2D / compute / D2H medians (CUDA events) and their share.
  instances   1, 4 and 10 TensorRT instances, shared (N execution contexts on one engine) and
              separate (N engines): the device memory after loading all of them, and its ratio
              to one instance's.
  streams     16 concurrent streams: throughput of TensorRT (16 contexts), ONNX Runtime on
              cuda (one session) and OpenVINO on the CPU (one compiled model), where installed.

Without an NVIDIA GPU (or without the tensorrt package) it prints one line saying what it needs
and exits with status 2; it measures nothing then. It reports; it does not judge (status 0).

Usage: python benchmarks/gpu_check.py [--models mobilenetv2,resnet50,vit-tiny]
           [--precision fp16|fp32] [--rounds 3] [--iterations 200] [--trtexec PATH]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import onnx
from runner_rounds import RUNNER_ARGV, p50_ms, rotated_rounds

from edgebench.converters import ConversionOptions, get_converter
from edgebench.framework_tools.base import ToolCell
from edgebench.framework_tools.trtexec import (
    DEVICE_LOCATIONS,
    TrtexecAdapter,
    parse_export_times,
    tensorrt_version,
)
from edgebench.models.registry import build_model
from edgebench.runners import protocol
from edgebench.runners.cuda_runtime import CudaUnavailable, open_cuda

MODELS = ("mobilenetv2", "resnet50", "vit-tiny")
INSTANCE_COUNTS = (1, 4, 10)
STREAMS = 16
STAGES = ("copy_in", "compute", "copy_out")
#: Rows of the engines table: (label, framework, backend).
ENGINES = (
    ("onnxruntime·cuda", "onnxruntime", "cuda"),
    ("onnxruntime·tensorrt", "onnxruntime", "tensorrt"),
    ("tensorrt", "tensorrt", "cuda"),
)


def gpu_problem() -> str | None:
    """Why this machine cannot run the check (None: it can)."""
    try:
        cuda = open_cuda()
        count = cuda.device_count()
    except CudaUnavailable as exc:
        return str(exc)
    if count < 1:
        return "no NVIDIA GPU: the CUDA runtime sees no device"
    if importlib.util.find_spec("tensorrt") is None:
        return "the tensorrt package is not installed: pip install 'edgebench[tensorrt]'"
    return None


def model_files(name: str, precision: str, folder: Path) -> tuple[Path, Path]:
    """The built-in model as ONNX, and the file the GPU cells run at ``precision`` (fp16: the
    fp16 ONNX, as `edgebench run` converts it)."""
    source = folder / f"{name}.onnx"
    onnx.save(build_model(name), str(source))
    if precision != "fp16":
        return source, source
    out = folder / f"{name}-fp16"
    out.mkdir()
    (first, *_) = get_converter("onnx-fp16").convert(
        source, out, ConversionOptions(precision="fp16")
    )
    return source, out / first


def spec(model: Path, framework: str, backend: str, precision: str, iterations: int, **extra):
    options = extra.pop("options", {})
    return {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": framework,
        "backend": backend,
        "precision": precision,
        "threads": 1,
        "warmup": 20,
        "iterations": iterations,
        "min_time_s": 0,
        "options": options,
        **extra,
    }


def run_cell(cell_spec: dict) -> dict:
    """One runner process; its result, or ``{"error": line}``."""
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"],
        input=json.dumps(cell_spec),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(protocol.RESULT_PREFIX)]
    if not lines:
        return {"error": f"the runner gave no result (exit {proc.returncode})"}
    result = json.loads(lines[-1][len(protocol.RESULT_PREFIX) :])
    return result if result["status"] == "ok" else {"error": result.get("error")}


def find_trtexec(given: str | None) -> str | None:
    for candidate in (given, shutil.which("trtexec"), *DEVICE_LOCATIONS):
        if candidate and "$" not in candidate and Path(candidate).is_file():
            return candidate
    return None


def run_trtexec(binary: str, model: Path, precision: str, iterations: int, folder: Path) -> dict:
    """trtexec's median Latency and its exportTimes samples' median, in ms."""
    head = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    found = tensorrt_version(head.stdout + head.stderr)
    times = folder / f"{model.stem}-times.json"
    engine = f"{model.stem}.engine"  # built in the first round, loaded in the others
    adapter = TrtexecAdapter(
        tensorrt_major=found[1] if found else 10,
        times_file=str(times),
        cache_dir=str(folder),
        engine_name=engine,
        engine_cached=(folder / engine).exists(),
    )
    cell = ToolCell(
        model_path=str(model),
        model_dir=str(model.parent),
        threads=1,
        warmup=20,
        iterations=iterations,
        precision=precision,
        backend="cuda",
    )
    proc = subprocess.run(
        adapter.command(binary, cell), capture_output=True, text=True, timeout=3600
    )
    result = adapter.parse_lines(proc.stdout.splitlines(), str(model))
    if result is None:
        return {"error": adapter.failure_reason(proc.stdout, proc.stderr) or "no summary"}
    samples = parse_export_times(times.read_text()).latency_ms if times.exists() else []
    return {
        "median": result.median_ms,
        "samples_median": statistics.median(samples) if samples else None,
        "version": result.tool_version,
    }


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:8.3f}"


def ratio(value: float | None, base: float | None) -> str:
    return "n/a" if value is None or not base else f"{value / base:5.2f}"


def median_p50(results: list[dict]) -> float | None:
    good = [p50_ms(r) for r in results if "error" not in r]
    return statistics.median(good) if good else None


def first_error(results: list[dict]) -> str | None:
    return next((r["error"] for r in results if "error" in r), None)


def fidelity_and_engines(model: Path, args: argparse.Namespace, folder: Path) -> dict:
    """The rotated rounds of every latency row."""
    measurers: dict[str, Callable[[], dict]] = {}
    for label, framework, backend in ENGINES:
        for graph in (False, True):
            options = {"cuda_graph": True} if graph else {}
            cell = spec(model, framework, backend, args.precision, args.iterations, options=options)
            measurers[label + ("+graphs" if graph else "")] = functools.partial(run_cell, cell)
    if args.trtexec_path:
        measurers["trtexec"] = lambda: run_trtexec(
            args.trtexec_path, model, args.precision, args.iterations, folder
        )
    return rotated_rounds(measurers, args.rounds, model.stem, _round_ms)


def _round_ms(figure: dict) -> float:
    if "error" in figure:
        return float("nan")
    return figure["median"] if "median" in figure else p50_ms(figure)


def print_fidelity(name: str, rounds: dict) -> None:
    ours = median_p50(rounds["tensorrt"])
    tool = rounds.get("trtexec") or []
    medians = [r["median"] for r in tool if "error" not in r and r.get("median")]
    theirs = statistics.median(medians) if medians else None
    why = first_error(tool) if tool else "trtexec not found (--trtexec PATH)"
    print(
        f"  fidelity  edgebench tensorrt p50 {ms(ours)} ms   trtexec median {ms(theirs)} ms"
        f"   ratio {ratio(ours, theirs)}" + (f"   ({why})" if theirs is None else "")
    )


def print_engines(rounds: dict) -> None:
    base = median_p50(rounds["tensorrt"])
    print("  engines   p50 ms (graphs off / on), ratio to tensorrt's p50 with graphs off")
    for label, _, _ in ENGINES:
        off, on = median_p50(rounds[label]), median_p50(rounds[label + "+graphs"])
        why = first_error(rounds[label]) or first_error(rounds[label + "+graphs"])
        print(
            f"    {label:22s} {ms(off)} / {ms(on)}   {ratio(off, base)} / {ratio(on, base)}"
            + (f"   ({why})" if why else "")
        )


def print_stages(rounds: dict) -> None:
    results = [r for r in rounds["tensorrt"] if "error" not in r]
    samples: dict[str, list[int]] = {stage: [] for stage in STAGES}
    for result in results:
        staged = (result.get("stages") or {}).get("samples_ns") or {}
        for stage in STAGES:
            samples[stage] += staged.get(stage, [])
    medians = {s: statistics.median(v) / 1e6 for s, v in samples.items() if v}
    if len(medians) < len(STAGES):
        print("  stages    n/a (no stage samples)")
        return
    total = sum(medians.values())
    print(
        "  stages    "
        + "   ".join(f"{s} {medians[s]:.3f} ms ({medians[s] / total:.0%})" for s in STAGES)
    )


def print_instances(model: Path, args: argparse.Namespace) -> None:
    print("  instances device memory after loading (MiB), and its ratio to one instance's")
    for mode in ("shared", "separate"):
        figures = []
        for count in INSTANCE_COUNTS:
            cell = spec(
                model,
                "tensorrt",
                "cuda",
                args.precision,
                20,
                instances=count,
                instance_mode=mode,
                concurrency=count,
                stages=False,
            )
            result = run_cell(cell)
            figures.append((count, _device_memory(result), result.get("error")))
        one = figures[0][1]
        row = "   ".join(
            f"{count}: {ms(mb)} ({ratio(mb, one)}x)" if mb is not None else f"{count}: {why}"
            for count, mb, why in figures
        )
        print(f"    {mode:9s} {row}")


def _device_memory(result: dict) -> float | None:
    """The device memory the cell's instances hold: what the last one's load left in use,
    less what was in use before the first (the accelerator report's figure for one)."""
    if "error" in result:
        return None
    report = result.get("accelerator") or {}
    after = (result.get("instances") or {}).get("device_memory_after_load_mb") or []
    first = report.get("device_memory_mb")
    if not after:
        return first
    if first is None or after[0] is None or after[-1] is None:
        return None
    return round(first + after[-1] - after[0], 1)


def print_streams(model: Path, source: Path, args: argparse.Namespace) -> None:
    rows = [
        ("tensorrt", "tensorrt", "cuda", {"instances": STREAMS, "instance_mode": "shared"}),
        ("onnxruntime·cuda", "onnxruntime", "cuda", {}),
        ("openvino (CPU)", "openvino", "cpu", {}),
    ]
    parts = []
    for label, framework, backend, extra in rows:
        on_cpu = backend == "cpu"  # OpenVINO converts the fp32 ONNX itself
        cell = spec(
            source if on_cpu else model,
            framework,
            backend,
            "fp32" if on_cpu else args.precision,
            args.iterations,
            concurrency=STREAMS,
            stages=False,
            **extra,
        )
        result = run_cell(cell)
        qps = result.get("throughput_ips") if "error" not in result else None
        parts.append(f"{label} {qps:.0f}/s" if qps else f"{label} n/a ({result.get('error')})")
    print(f"  streams   {STREAMS} at once: " + "   ".join(parts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--precision", choices=("fp16", "fp32"), default="fp16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--trtexec", help="trtexec's path (default: PATH, then JetPack's)")
    args = parser.parse_args()
    problem = gpu_problem()
    if problem:
        print(f"gpu_check: needs an NVIDIA GPU with the tensorrt package; here: {problem}")
        return 2
    args.trtexec_path = find_trtexec(args.trtexec)
    with tempfile.TemporaryDirectory(prefix="edgebench-gpu-check-") as tmp:
        folder = Path(tmp)
        for name in args.models.split(","):
            source, model = model_files(name, args.precision, folder)
            print(f"{name} ({args.precision})")
            rounds = fidelity_and_engines(model, args, folder)
            print_fidelity(name, rounds)
            print_engines(rounds)
            print_stages(rounds)
            print_instances(model, args)
            print_streams(model, source, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
