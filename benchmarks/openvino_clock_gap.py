#!/usr/bin/env python3
"""How much of fidelity.py's openvino row is the clock, not the work.

benchmark_app (the openvino wheel's Python tool) reports the median of ``request.latency``:
OpenVINO's binding reads its clock just before and just after the C++ inference, with the GIL
released. edgebench's compute stage reads ``time.perf_counter_ns`` around the Python call
``request.infer()``, so it also holds what the Python side of that call costs: the wrapper
(``_data_dispatch``, the ``OVDict`` it builds, the copy of every output into a new array), the
GIL taken back and the return. Those are real costs of a Python program, and a model whose
inference flushes the caches makes them slower than on a small one.

Here edgebench's own OpenVINO backend (the runner's, with the cell's compile settings) loads the
model in ONE process pinned to one core, and every call is read by both clocks: the compute
stage as the runner times it, and ``request.latency`` of the same call. Blocks of calls give
the ratio latency/wall (the median of the blocks' own ratios, with a 95% bootstrap interval,
edgebench/analysis/block_ratio.py). That is why fidelity.py's openvino row compares
benchmark_app's own wall clock per call (its Duration over its Count), not its median. Beside
it, each block also times the binding alone (``_pyopenvino.InferRequest.infer`` with shared
outputs, no wrapper), which splits the gap into the wrapper's part and the binding's.

MODEL is an OpenVINO IR (.xml), or anything ``edgebench convert`` takes (a built-in model's
name, an ONNX file), converted to OpenVINO first.

Usage: python benchmarks/openvino_clock_gap.py MODEL [--core N] [--blocks 30]
           [--block-iterations 50] [--warmup 10] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from gap_script import gap_arguments, model_file, timed_block

from edgebench.analysis.block_ratio import bootstrap_ratio
from edgebench.runners.backend_loader import load_backend
from edgebench.runners.protocol.tensors import make_inputs


def both_clocks(stream, request, iterations: int) -> tuple[list[float], list[float]]:
    """One block of whole inferences as the runner's staged loop runs them: copy in, compute
    (timed), copy out; per call the compute stage's wall ms and OpenVINO's latency ms."""
    wall, latency = [], []
    for _ in range(iterations):
        stream.copy_in()
        start = time.perf_counter_ns()
        stream.compute()
        wall.append((time.perf_counter_ns() - start) / 1e6)
        latency.append(float(request.latency))
        stream.copy_out()
    return wall, latency


def binding_alone(request) -> Callable[[], object]:
    """The C++ binding's infer without the Python wrapper: no dispatch, no OVDict, outputs as
    views (the diagnostic column)."""
    from openvino import _pyopenvino

    return lambda: _pyopenvino.InferRequest.infer(request, {}, True, False)


def main() -> int:
    args = gap_arguments(
        __doc__.splitlines()[0], "an OpenVINO .xml, a built-in model's name or an ONNX file"
    )
    model = model_file(args.model, ".xml", "openvino", "openvino_clock_gap")
    if model is None:
        return 2
    os.sched_setaffinity(0, {args.core})
    backend = load_backend("openvino")
    backend.load(str(model), 1, "fp32", {"streams": 1})
    # OpenVINO's backend gives a staged Stream whose compute is the request's bound infer.
    stream: Any = backend.make_stream(make_inputs(backend.model_inputs(), 0))
    request = stream.compute.__self__
    binding = binding_alone(request)
    both_clocks(stream, request, args.warmup)
    timed_block(binding, args.warmup)
    wall_blocks, latency_blocks, binding_blocks = [], [], []
    for _ in range(args.blocks):
        wall, latency = both_clocks(stream, request, args.block_iterations)
        wall_blocks.append(wall)
        latency_blocks.append(latency)
        binding_blocks.append(timed_block(binding, args.block_iterations))
    backend.close()
    gap = bootstrap_ratio(latency_blocks, wall_blocks, estimator="paired", draws=2000, seed=0)
    figures = {
        "wall_ms": statistics.median(x for block in wall_blocks for x in block),
        "latency_ms": statistics.median(x for block in latency_blocks for x in block),
        "binding_ms": statistics.median(x for block in binding_blocks for x in block),
        "ratio": gap.ratio,
        "low": gap.low,
        "high": gap.high,
        "blocks": gap.blocks,
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    per_call = (figures["wall_ms"] - figures["latency_ms"]) * 1e3
    wrapper = (figures["wall_ms"] - figures["binding_ms"]) * 1e3
    print(
        f"{'model':<32} {'compute ms':>10} {'latency ms':>10} {'binding ms':>10} "
        f"{'latency/compute':>15} 95%"
    )
    print(
        f"{str(args.model)[-32:]:<32} {figures['wall_ms']:>10.3f} {figures['latency_ms']:>10.3f} "
        f"{figures['binding_ms']:>10.3f} {gap.ratio:>15.4f} [{gap.low:.4f}, {gap.high:.4f}] "
        f"({gap.blocks} blocks, core {args.core})"
    )
    print(
        f"the Python side of a call: {per_call:.1f} us (the wrapper's part, against the "
        f"binding alone: {wrapper:.1f} us)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
