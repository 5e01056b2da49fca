#!/usr/bin/env python3
"""Does edgebench measure what the frameworks' own benchmark tools measure?

Prints, per model and framework, edgebench's p50 next to the p50 (median) of the framework's
own tool on the same converted artifact, threads (1) and core, and their ratio (goal: within
3%). The tools:

  openvino  benchmark_app -m model.xml -d CPU -hint none -nthreads 1 -nstreams 1 -api sync
  tflite    litert-benchmark --model model.tflite --num_threads 1

Both run under ``taskset -c CORE``; edgebench runs with ``--cores CORE --threads 1``. The
native tools get exactly the .xml / .tflite files edgebench converted and measured. Each side
runs twice, interleaved (edgebench, native, native, edgebench), and the two p50s are averaged
to cancel drift. It reports; it does not judge (exit status 0).

Usage: python benchmarks/fidelity.py [--models mobilenetv2,vit-tiny] [--iterations 300]
                                     [--warmup 20] [--core 0]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.framework_tools import NativeCell, OpenvinoBenchmarkAppAdapter

FRAMEWORKS = ("openvino", "tflite")
NATIVE_TOOL = {"openvino": "benchmark_app", "tflite": "litert-benchmark"}
_LITERT_MEDIAN_RE = re.compile(r"Inference \(median\):\s*([-+0-9.eE]+)\s*(ms|us|µs|s)\b")
_TO_MS = {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3}


@dataclass
class Cell:
    model: str
    framework: str
    model_file: str = ""
    model_dir: str = ""
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    framework_version: str = ""
    edgebench_p50: list[float] = field(default_factory=list)
    native_p50: list[float] = field(default_factory=list)
    error: str = ""


def tool_path(name: str) -> str:
    """The tool next to this interpreter (the venv's), else on PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} not found next to {sys.executable} or on PATH")
    return found


def run(argv: list[str], timeout: float = 1800.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def run_edgebench(model: str, args: argparse.Namespace, cells: dict[tuple[str, str], Cell]) -> None:
    argv = [
        sys.executable,
        "-m",
        "edgebench",
        "run",
        "--models",
        model,
        "--frameworks",
        ",".join(FRAMEWORKS),
        "--cores",
        str(args.core),
        "--threads",
        "1",
        "--iterations",
        str(args.iterations),
        "--min-time",
        "0",
        "--warmup",
        str(args.warmup),
        "--format",
        "jsonl",
        "--energy-source",
        "none",
        "--baseline-s",
        "0",
    ]
    proc = run(argv)
    seen = set()
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        framework = record.get("framework")
        if framework not in FRAMEWORKS:
            continue
        cell = cells[(model, framework)]
        seen.add(framework)
        if record.get("status") != "ok":
            cell.error = f"edgebench: {record.get('status')}: {record.get('error')}"
            continue
        cell.edgebench_p50.append(float(record["latency_ms"]["p50"]))
        cell.framework_version = str(record.get("framework_version") or "")
        artifact = record.get("artifact") or {}
        suffix = ".xml" if framework == "openvino" else ".tflite"
        names = [f["name"] for f in artifact.get("files", []) if f["name"].endswith(suffix)]
        if artifact.get("path") and names:
            cell.model_dir = artifact["path"]
            cell.model_file = str(Path(artifact["path"]) / names[0])
        cell.input_shapes = {i["name"]: list(i["shape"]) for i in record.get("inputs") or []}
    for framework in FRAMEWORKS:
        if framework not in seen and not cells[(model, framework)].error:
            cells[
                (model, framework)
            ].error = f"edgebench printed no record (rc {proc.returncode}): {tail(proc.stderr)}"


def run_openvino(cell: Cell, args: argparse.Namespace, versions: dict[str, str]) -> None:
    adapter = OpenvinoBenchmarkAppAdapter()
    native = NativeCell(
        model_path=cell.model_file,
        model_dir=cell.model_dir,
        threads=1,
        warmup=args.warmup,
        iterations=args.iterations,
        cores=[args.core],
        input_shapes=cell.input_shapes,
    )
    argv = ["taskset", "-c", str(args.core), *adapter.command(tool_path("benchmark_app"), native)]
    proc = run(argv)
    try:
        result = adapter.parse(proc.stdout, proc.stderr)
    except ValueError as exc:
        cell.error = f"benchmark_app (rc {proc.returncode}): {exc}: {tail(proc.stderr)}"
        return
    if result.median_ms is None:
        cell.error = "benchmark_app: no median"
        return
    cell.native_p50.append(result.median_ms)
    if result.tool_version:
        versions["benchmark_app"] = f"Build {result.tool_version}"


def run_litert(cell: Cell, args: argparse.Namespace) -> None:
    argv = [
        "taskset",
        "-c",
        str(args.core),
        tool_path("litert-benchmark"),
        "--model",
        cell.model_file,
        "--num_threads",
        "1",
        "--num_runs",
        str(args.iterations),
        "--warmup_runs",
        str(args.warmup),
    ]
    proc = run(argv)
    match = _LITERT_MEDIAN_RE.search(proc.stdout) or _LITERT_MEDIAN_RE.search(proc.stderr)
    if match is None:
        cell.error = f"litert-benchmark (rc {proc.returncode}): no 'Inference (median)' line: " + (
            tail(proc.stderr) or tail(proc.stdout)
        )
        return
    cell.native_p50.append(float(match.group(1)) * _TO_MS[match.group(2)])


def run_native(model: str, args: argparse.Namespace, cells, versions: dict[str, str]) -> None:
    for framework in FRAMEWORKS:
        cell = cells[(model, framework)]
        if cell.error or not cell.model_file:
            if not cell.error:
                cell.error = "edgebench gave no artifact file"
            continue
        if framework == "openvino":
            run_openvino(cell, args, versions)
        else:
            run_litert(cell, args)


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenetv2,vit-tiny", help="comma-separated")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--core", type=int, default=0, help="pin every tool to this core")
    parser.add_argument("--goal", type=float, default=0.03, help="allowed |ratio - 1|")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})

    started = time.monotonic()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    cells = {(m, f): Cell(m, f) for m in models for f in FRAMEWORKS}
    versions: dict[str, str] = {}
    for model in models:
        print(f"[{model}] edgebench, native, native, edgebench ...", file=sys.stderr, flush=True)
        run_edgebench(model, args, cells)
        run_native(model, args, cells, versions)
        run_native(model, args, cells, versions)
        run_edgebench(model, args, cells)

    print(
        f"fidelity: edgebench p50 vs the native tool's median; 1 thread, core {args.core}, "
        f"{args.iterations} iterations, {args.warmup} warm-up; mean of 2 interleaved runs per side"
    )
    print()
    header = (
        f"{'model':<14} {'framework':<10} {'edgebench ms':>12} {'native ms':>10} "
        f"{'ratio':>7}  {'goal':<5} {'runs (edgebench | native)'}"
    )
    print(header)
    print("-" * len(header))
    for cell in cells.values():
        if cell.edgebench_p50 and cell.native_p50:
            eb = statistics.fmean(cell.edgebench_p50)
            nat = statistics.fmean(cell.native_p50)
            ratio = eb / nat
            verdict = "OK" if abs(ratio - 1.0) <= args.goal else "OVER"
            runs = (
                " ".join(f"{v:.3f}" for v in cell.edgebench_p50)
                + " | "
                + " ".join(f"{v:.3f}" for v in cell.native_p50)
            )
            print(
                f"{cell.model:<14} {cell.framework:<10} {eb:>12.3f} {nat:>10.3f} "
                f"{ratio:>7.3f}  {verdict:<5} {runs}"
            )
        else:
            print(f"{cell.model:<14} {cell.framework:<10} {'-':>12} {'-':>10} {'-':>7}  ERROR")
        if cell.error:
            print(f"    error: {cell.error}")
    print()
    print(f"goal: |ratio - 1| <= {args.goal:.0%} (ratio = edgebench p50 / native p50)")
    print("versions:")
    print(f"  edgebench         {package_version('edgebench')}")
    print(f"  openvino          {package_version('openvino')}")
    print(f"  benchmark_app     {versions.get('benchmark_app', 'unknown')} (openvino wheel)")
    print(f"  ai-edge-litert    {package_version('ai-edge-litert')}")
    print(f"  litert-benchmark  ai-edge-litert {package_version('ai-edge-litert')}")
    fw = {c.framework: c.framework_version for c in cells.values() if c.framework_version}
    for framework, version in fw.items():
        print(f"  edgebench {framework:<8} reports {version}")
    print(f"  python            {sys.version.split()[0]}")
    print(f"run time: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
