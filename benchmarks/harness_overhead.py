#!/usr/bin/env python3
"""How much does edgebench's measurement harness add to what it measures?

Prints two figures:
  1. the runner's per-iteration timing overhead: a no-op timed by the runner's own loop
     (goal: under 1 µs), and
  2. the ratio of edgebench's p50 to a bare ONNX Runtime loop on the same session, inputs and
     threads, interleaved in one process (goal: at most 1.02).

Usage: python benchmarks/harness_overhead.py [--model mobilenetv2] [--rounds 10] [--iters 150]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The on-device runner's modules, imported in-process.
from edgebench.models import builtin_model_path  # noqa: E402
from edgebench.paths import cache_dir  # noqa: E402
from edgebench.runners.backend_loader import load_backend  # noqa: E402
from edgebench.runners.protocol.tensors import make_inputs  # noqa: E402
from edgebench.runners.timing import measure_sequential  # noqa: E402


def noop() -> None:
    return None


def timer_overhead(n: int) -> tuple[float, float]:
    """(median timed no-op ns, loop cost per iteration ns) with the runner's own loop."""
    timing = measure_sequential(noop, n, 0, n, 10**12)
    samples = timing["samples_ns"]
    return statistics.median(samples), timing["measure_wall_ns"] / len(samples)


def bare_loop(session_run, feeds, n: int) -> list[int]:
    clock = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = clock()
        session_run(None, feeds)
        samples.append(clock() - t0)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--iters", type=int, default=150)
    parser.add_argument("--core", type=int, default=0, help="pin this process to one core")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})

    median_noop, per_iter = timer_overhead(200_000)
    print(
        f"runner timing overhead: timed no-op p50 {median_noop:.0f} ns, "
        f"loop cost {per_iter:.0f} ns/iteration (goal < 1000 ns) -> "
        f"{'OK' if max(median_noop, per_iter) < 1000 else 'OVER'}"
    )

    model = builtin_model_path(args.model, cache_dir() / "models")
    backend = load_backend("onnxruntime")
    backend.load(str(model), args.threads, "fp32", {})
    feeds = make_inputs(backend.model_inputs(), seed=0)
    stream = backend.make_stream(feeds)
    session_run = backend._session.run  # type: ignore[attr-defined]  # ONNX Runtime's own session, timed bare
    for _ in range(50):  # past first-run allocations and cache warm-up
        stream()

    harness: list[int] = []
    bare: list[int] = []
    for round_index in range(args.rounds):
        # Alternate which goes first so drift within a round favours neither.
        order = ("harness", "bare") if round_index % 2 == 0 else ("bare", "harness")
        for which in order:
            if which == "harness":
                result = measure_sequential(stream, args.iters, 0, args.iters, 10**12)
                harness.extend(result["samples_ns"])
            else:
                bare.extend(bare_loop(session_run, feeds, args.iters))
    p50_h = statistics.median(harness) / 1e6
    p50_b = statistics.median(bare) / 1e6
    ratio = p50_h / p50_b
    print(
        f"{args.model}, onnxruntime {backend.version()}, {args.threads} thread(s), core "
        f"{args.core}, {len(harness)} samples each"
    )
    print(
        f"p50 edgebench {p50_h:.3f} ms, bare loop {p50_b:.3f} ms, ratio {ratio:.4f} "
        f"(goal <= 1.02) -> {'OK' if ratio <= 1.02 else 'OVER'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
