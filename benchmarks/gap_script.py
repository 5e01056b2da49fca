"""What the in-process gap scripts share (litert_api_gap.py, openvino_clock_gap.py): their
command line, the model file they take, and a block of calls timed one by one."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from fidelity import convert
from fidelity_sides import MissingTool


def gap_arguments(description: str, model_help: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model", help=model_help)
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--block-iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="one JSON line, for fidelity.py")
    args = parser.parse_args()
    if args.blocks < 2 or args.block_iterations < 1:
        parser.error("--blocks must be >= 2 and --block-iterations >= 1")
    return args


def model_file(given: str, suffix: str, framework: str, script: str) -> Path | None:
    """``given`` itself when it is a ``suffix`` file, else it converted to ``framework`` (a
    built-in model's name, an ONNX file); None after one line on stderr when neither works."""
    model = Path(given)
    if model.suffix != suffix:
        try:
            return convert(given, framework)
        except MissingTool as exc:
            print(f"{script}: {exc}", file=sys.stderr)
            return None
    if not model.is_file():
        print(f"{script}: {model}: no such file", file=sys.stderr)
        return None
    return model


def timed_block(call: Callable[[], object], iterations: int) -> list[float]:
    """``iterations`` calls, each timed alone (ms)."""
    out = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - start) / 1e6)
    return out
