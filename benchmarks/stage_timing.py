#!/usr/bin/env python3
"""Does timing the stages change the latency it measures? samples_ns must stay comparable with
results from before stages were timed.

For each Python framework, loads one model in this process (through the runner's own backends
and timed loop) and alternates blocks of plain and staged timing: the plain loop calls the
stream as one callable, the staged one reads the clock between copy-in, compute and copy-out.
Prints per framework the p50 of each, their ratio, and the p50 of every stage.

Usage: python benchmarks/stage_timing.py [--model mobilenetv2|PATH.onnx]
           [--frameworks onnxruntime,openvino,mnn,ncnn,tflite] [--blocks 6] [--iterations 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from edgebench.converters import ConversionOptions, get_converter  # noqa: E402
from edgebench.frameworks import find_framework  # noqa: E402
from edgebench.models.registry import BUILTIN_MODELS, build_model  # noqa: E402
from edgebench.runners.backend_loader import load_backend  # noqa: E402
from edgebench.runners.protocol.tensors import make_inputs  # noqa: E402
from edgebench.runners.timing import measure_sequential  # noqa: E402


def artifact_for(model: Path, framework: str, work: Path) -> Path:
    entry = find_framework(framework)
    if entry is None or entry.artifact_format is None:
        return model
    out = work / framework
    out.mkdir()
    files = get_converter(entry.artifact_format).convert(model, out, ConversionOptions())
    return out / files[0]


def measure(framework: str, path: Path, blocks: int, iterations: int) -> dict[str, float]:
    backend = load_backend(framework)
    backend.load(str(path), 1, "fp32", {"streams": 1})
    feeds = make_inputs(backend.model_inputs(), 0)
    stream = backend.make_stream(feeds)
    for _ in range(5):
        stream()
    plain: list[int] = []
    staged: list[int] = []
    stages: dict[str, list[int]] = {}
    for _ in range(blocks):  # alternating blocks: drift on the host hits both alike
        plain += measure_sequential(stream, iterations, 0, iterations, 10**12)["samples_ns"]
        staged += measure_sequential(
            stream, iterations, 0, iterations, 10**12, stage_samples=stages
        )["samples_ns"]
    backend.close()
    figures = {"plain": statistics.median(plain) / 1e6, "staged": statistics.median(staged) / 1e6}
    figures.update({k: statistics.median(v) / 1e6 for k, v in stages.items()})
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--frameworks", default="onnxruntime,openvino,mnn,ncnn,tflite")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = Path(args.model)
        if args.model in BUILTIN_MODELS:
            import onnx

            model = work / f"{args.model}.onnx"
            onnx.save(build_model(args.model), str(model))
        header = f"{'framework':12} {'plain p50':>10} {'staged p50':>11} {'ratio':>6}"
        print(header + "   stages p50 (ms)")
        for framework in args.frameworks.split(","):
            path = artifact_for(model, framework, work)
            f = measure(framework, path, args.blocks, args.iterations)
            stages = ("copy_in", "compute", "copy_out")
            parts = "  ".join(f"{k} {f[k]:.3f}" for k in stages if k in f)
            print(
                f"{framework:12} {f['plain']:10.3f} {f['staged']:11.3f} "
                f"{f['staged'] / f['plain']:6.3f}   {parts}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
