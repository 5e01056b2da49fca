#!/usr/bin/env python3
"""What does INT8 buy and cost, per framework and built-in model?

Runs `edgebench run --precision fp32,int8` (or --precisions) on the local machine for every
built-in model (or --models) and framework (or --frameworks), interleaved and pinned the way
every run is, with the default synthetic calibration set (or --calibration), and prints per
model and framework:

- int8 / fp32 p50 latency (below 1 = INT8 is faster),
- int8 / fp32 artifact size (the files the runtime loads; ONNX Runtime fp32 loads the .onnx),
- top-1 agreement with fp32 ONNX Runtime and the worst output's SQNR (dB) on the held-out
  evaluation set, and the cell's status (a cell below the accuracy floors is `mismatch`).

With --device NAME (a lab device, e.g. the emulated arm64 board `edgebench board build` makes)
it runs there instead; on an emulated CPU only the accuracy columns mean anything.

It reports; it does not judge (exit status 0 unless edgebench itself failed to run).

Usage: python benchmarks/quantization.py [--models mobilenetv2,resnet50]
           [--frameworks onnxruntime,openvino,mnn,ncnn,tflite] [--precisions fp32,int8]
           [--device local] [--iterations 50] [--threads 1] [--calibration PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FRAMEWORKS = "onnxruntime,openvino,mnn,ncnn,tflite"


def run_edgebench(args: argparse.Namespace, results: Path) -> list[dict[str, Any]]:
    command = [
        sys.executable,
        "-m",
        "edgebench",
        "run",
        "--devices",
        args.device,
        "--frameworks",
        args.frameworks,
        "--precision",
        args.precisions,
        "--threads",
        str(args.threads),
        "--iterations",
        str(args.iterations),
        "--min-time",
        "0",
        "--format",
        "jsonl",
        "--results-dir",
        str(results),
    ]
    for model in args.models.split(",") if args.models else []:
        command += ["--models", model]
    if args.calibration:
        command += ["--calibration", args.calibration]
    if args.lab:
        command += ["--lab", args.lab]
    print("$ edgebench " + " ".join(command[3:]), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    records = []
    for line in done.stdout.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    if not records:
        sys.exit(f"edgebench run produced no records (exit {done.returncode})")
    return records


def artifact_bytes(record: dict[str, Any]) -> int | None:
    artifact = record.get("artifact")
    if artifact:
        folder = Path(artifact["path"])
        return sum((folder / f["name"]).stat().st_size for f in artifact["files"])
    path = record.get("model_path")
    return Path(path).stat().st_size if path and Path(path).is_file() else None


def p50(record: dict[str, Any]) -> float | None:
    return (record.get("latency_ms") or {}).get("p50")


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def table(records: list[dict[str, Any]], quantized: str) -> list[list[str]]:
    by_cell: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        by_cell.setdefault((r["model"], r["framework"]), {})[r["precision"]] = r
    rows = []
    for (model, framework), cells in by_cell.items():
        base, quant = cells.get("fp32"), cells.get(quantized)
        if quant is None:
            continue
        accuracy = quant.get("accuracy") or {}
        top1 = accuracy.get("top1_agreement")
        sqnr = accuracy.get("sqnr_db")
        fallback = ",".join((quant.get("quant") or {}).get("fp32_fallback_ops") or []) or "-"
        reason = "" if quant["status"] == "ok" else f" ({(quant.get('error') or '')[:60]})"
        rows.append(
            [
                model,
                framework,
                ratio(p50(quant), p50(base)) if base else "-",
                f"{p50(base):.2f}" if base and p50(base) else "-",
                f"{p50(quant):.2f}" if p50(quant) else "-",
                ratio(artifact_bytes(quant), artifact_bytes(base)) if base else "-",
                "-" if top1 is None else f"{top1:.0%}",
                "-" if sqnr is None else f"{sqnr:.1f}",
                quant["status"] + reason,
                fallback[:40],
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="")
    parser.add_argument("--frameworks", default=FRAMEWORKS)
    parser.add_argument("--precisions", default="fp32,int8")
    parser.add_argument("--device", default="local")
    parser.add_argument("--lab", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--calibration", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-quant-") as scratch:
        os.environ.setdefault("EDGEBENCH_RESULTS", scratch)
        records = run_edgebench(args, Path(scratch))
    header = [
        "model",
        "framework",
        "int8/fp32 p50",
        "fp32 ms",
        "int8 ms",
        "size ratio",
        "top-1",
        "SQNR dB",
        "status",
        "fp32 fallback",
    ]
    for quantized in [p for p in args.precisions.split(",") if p.startswith("int8")]:
        rows = table(records, quantized)
        if not rows:
            continue
        print(f"\n{quantized} vs fp32 on {args.device}, {args.threads} thread(s)")
        widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, ["-" * w for w in widths], *rows]:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
