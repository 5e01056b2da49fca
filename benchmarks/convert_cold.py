#!/usr/bin/env python3
"""How long does a cold run spend converting, and is edgebench's own .tflite as fast as onnx2tf's?

1. Conversion. Every built-in model (or --models) is converted to every format (or --formats)
   with an empty artifact cache (a fresh temporary folder), at fp32, one conversion at a time, the
   way `edgebench run` does before measuring. It prints seconds per model and format, the total
   per format and the grand total. Goal: under 30 s in all on 2 cores, TFLite under 2 s a model.
   A converter that cannot run here (e.g. ncnn without its toolchain) is listed as skipped.

2. Runtime (only when the onnx2tf toolchain is installed, or with --no-onnx2tf to skip it).
   Each model is also converted with onnx2tf, and both .tflite files are timed in LiteRT on the
   same seeded input, one thread, pinned to one core: rounds alternate the two files, each round
   times --iterations inferences after --warmup; the figure is the median of all samples. The
   table gives ours / onnx2tf's (goal: at most 1.05). It also prints the largest absolute
   difference of each against ONNX Runtime.

It reports; it does not judge (exit status 0).

Usage: python benchmarks/convert_cold.py [--models mobilenetv2,resnet50] [--formats tflite,tnn]
           [--no-onnx2tf] [--rounds 5] [--iterations 30] [--warmup 5] [--core 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edgebench.converters import (
    CONVERTERS,
    ArtifactCache,
    ConversionError,
    ConversionOptions,
    get_converter,
)
from edgebench.converters.artifact_cache import file_sha256
from edgebench.models import BUILTIN_MODELS
from edgebench.models.registry import get_builtin


def convert_all(models: list[str], formats: list[str], work: Path) -> dict[str, dict[str, float]]:
    cache = ArtifactCache(work / "artifacts")
    seconds: dict[str, dict[str, float]] = {fmt: {} for fmt in formats}
    for name in models:
        path = _model_file(name, work)
        sha = file_sha256(path)
        for fmt in formats:
            converter = get_converter(fmt)
            if "fp32" not in converter.precisions:
                only = ", ".join(converter.precisions)
                print(f"  {name} -> {fmt}: skipped (it makes {only} only; this times fp32)")
                continue
            reason = converter.unavailable_reason()
            if reason:
                print(f"  {name} -> {fmt}: skipped ({reason})", flush=True)
                continue
            started = time.perf_counter()
            try:
                cache.convert(converter, path, sha, ConversionOptions(), force=True)
            except ConversionError as exc:
                print(f"  {name} -> {fmt}: {exc.kind}: {exc.message}", flush=True)
                continue
            seconds[fmt][name] = time.perf_counter() - started
            print(f"  {name} -> {fmt}: {seconds[fmt][name]:.2f} s", flush=True)
    return seconds


def _model_file(name: str, work: Path) -> Path:
    import onnx

    path = work / f"{name}.onnx"
    if not path.exists():
        onnx.save(get_builtin(name).build(0), str(path))
    return path


def print_conversions(seconds: dict[str, dict[str, float]], models: list[str]) -> None:
    print()
    print(f"{'format':<10}" + "".join(f"{m:>13}" for m in models) + f"{'total':>10}")
    grand = 0.0
    for fmt, per_model in seconds.items():
        total = sum(per_model.values())
        grand += total
        cells = "".join(
            f"{per_model[m]:>12.2f}s" if m in per_model else f"{'-':>13}" for m in models
        )
        print(f"{fmt:<10}{cells}{total:>9.2f}s")
    print(f"all formats: {grand:.2f} s (goal: under 30 s)")
    tflite = seconds.get("tflite", {})
    if tflite:
        print(f"tflite slowest model: {max(tflite.values()):.2f} s (goal: under 2 s)")


class Timed:
    """One .tflite in LiteRT, fed the seeded input, collecting per-inference seconds."""

    def __init__(self, artifact_dir: Path, feed: np.ndarray) -> None:
        from ai_edge_litert.interpreter import Interpreter

        from edgebench.runners.protocol.io_map import IoMap

        model = artifact_dir / "model.tflite"
        self.interpreter = Interpreter(model_path=str(model), num_threads=1)
        self.interpreter.allocate_tensors()
        io = IoMap.beside(str(model))
        assert io is not None, f"{model} has no io map beside it"
        details = {d["name"]: d["index"] for d in self.interpreter.get_input_details()}
        tensor = io.inputs[0]
        self.interpreter.set_tensor(details[tensor.name], tensor.to_artifact(feed))
        self.io: IoMap = io
        self.samples: list[float] = []

    def output(self) -> np.ndarray:
        self.interpreter.invoke()
        details = {d["name"]: d["index"] for d in self.interpreter.get_output_details()}
        tensor = self.io.outputs[0]
        return tensor.to_onnx(self.interpreter.get_tensor(details[tensor.name]))

    def time(self, iterations: int, warmup: int) -> None:
        for _ in range(warmup):
            self.interpreter.invoke()
        for _ in range(iterations):
            started = time.perf_counter()
            self.interpreter.invoke()
            self.samples.append(time.perf_counter() - started)


def compare_runtime(models: list[str], work: Path, args: argparse.Namespace) -> None:
    import onnxruntime

    ours_conv, theirs_conv = get_converter("tflite"), get_converter("tflite", "onnx2tf")
    reason = theirs_conv.unavailable_reason()
    if reason:
        print(f"\nruntime comparison skipped: {reason}")
        return
    cache = ArtifactCache(work / "artifacts")
    print(
        f"\nruntime: LiteRT, 1 thread, core {args.core}, {args.rounds} rounds x "
        f"{args.iterations} inferences (after {args.warmup} warm-up) per file"
    )
    print(
        f"{'model':<13}{'ours p50 ms':>12}{'onnx2tf p50':>13}{'ratio':>8}"
        f"{'ours max|d|':>13}{'onnx2tf max|d|':>16}{'onnx2tf conv s':>16}"
    )
    for name in models:
        path = _model_file(name, work)
        sha = file_sha256(path)
        ours = cache.convert(ours_conv, path, sha, ConversionOptions())
        started = time.perf_counter()
        try:
            theirs = cache.convert(theirs_conv, path, sha, ConversionOptions())
        except ConversionError as exc:
            print(f"{name:<13} onnx2tf: {exc.kind}: {exc.message}")
            continue
        their_seconds = theirs.manifest.get("time_s", time.perf_counter() - started)
        feed = np.random.default_rng(0).standard_normal(BUILTIN_MODELS[name].input_shape)
        feed = feed.astype(np.float32)
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        reference = session.run(None, {session.get_inputs()[0].name: feed})[0]
        a, b = Timed(ours.path, feed), Timed(theirs.path, feed)
        errors = [float(np.abs(t.output() - reference).max()) for t in (a, b)]
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {args.core})
        try:
            for round_index in range(args.rounds):
                for timed in (a, b) if round_index % 2 == 0 else (b, a):
                    timed.time(args.iterations, args.warmup)
        finally:
            os.sched_setaffinity(0, allowed)
        p50a, p50b = (statistics.median(t.samples) * 1e3 for t in (a, b))
        print(
            f"{name:<13}{p50a:>12.2f}{p50b:>13.2f}{p50a / p50b:>8.3f}"
            f"{errors[0]:>13.2e}{errors[1]:>16.2e}{their_seconds:>16.1f}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(BUILTIN_MODELS))
    parser.add_argument("--formats", default=",".join(CONVERTERS))
    parser.add_argument("--no-onnx2tf", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    formats = [f for f in args.formats.split(",") if f]
    print(f"cold conversion of {', '.join(models)} to {', '.join(formats)} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory(prefix="edgebench-convert-cold-") as tmp:
        work = Path(tmp)
        seconds = convert_all(models, formats, work)
        print_conversions(seconds, models)
        if not args.no_onnx2tf:
            compare_runtime(models, work, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
