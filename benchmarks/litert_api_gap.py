#!/usr/bin/env python3
"""How much of fidelity.py's tflite row is the API, not the timer.

edgebench's Python runner runs a .tflite through LiteRT's ``Interpreter`` (``invoke``, with the
XNNPACK delegate LiteRT applies by default); the LiteRT benchmark tool (``litert-benchmark``)
runs it through ``CompiledModel`` on its CPU accelerator (``run_by_name``). Both are LiteRT, but
not the same code path. Here both run in ONE process, pinned to one core, one thread, in
alternating blocks, each timed per call with the same clock. The CompiledModel is made by the
tool's own functions (``create_environment``, ``create_model_options``), so it is configured as
the tool configures it. The figure is CompiledModel/Interpreter, the median of the block pairs'
ratios with a 95% bootstrap interval (edgebench/analysis/block_ratio.py). fidelity.py
multiplies its tflite row's ratio (edgebench over the tool) by it, so the corrected row compares
two timers of the same work.

MODEL is a .tflite file, or anything ``edgebench convert`` takes (a built-in model's name, an
ONNX file), converted to tflite first.

Usage: python benchmarks/litert_api_gap.py MODEL [--core N] [--blocks 30]
           [--block-iterations 50] [--warmup 10] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from gap_script import gap_arguments, model_file, timed_block

from edgebench.analysis.block_ratio import bootstrap_ratio


def interpreter_call(model: Path):
    """Interpreter.invoke as edgebench's tflite backend runs it (inputs set once)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        from tflite_runtime.interpreter import Interpreter
    interpreter = Interpreter(model_path=str(model), num_threads=1)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], rng.random(detail["shape"], np.float32))
    return interpreter.invoke


def compiled_model_call(model: Path):
    """CompiledModel.run_by_name as litert-benchmark makes and runs it (its own functions)."""
    from ai_edge_litert.tools import benchmark_litert_model as tool

    cls, accel, env_cls, env_options, options_cls, cpu_options = tool._import_litert()
    args = SimpleNamespace(
        runtime_path="",
        compiler_plugin_path="",
        dispatch_library_path="",
        num_threads=1,
        use_npu=False,
        use_gpu=False,
        no_cpu=False,
        require_full_delegation=False,
    )
    env = tool.create_environment(args, env_cls, env_options)
    hardware = tool.build_hardware_accelerators(args, accel)
    options = tool.create_model_options(args, options_cls, cpu_options, hardware)
    compiled = cls.from_file(str(model), environment=env, options=options)
    signature = compiled.get_signature_by_index(0)
    key = next(iter(compiled.get_signature_list()))
    inputs = {n: compiled.create_input_buffer_by_name(key, n) for n in signature["inputs"]}
    outputs = {n: compiled.create_output_buffer_by_name(key, n) for n in signature["outputs"]}
    for name, buffer in inputs.items():
        tool.fill_random_input(buffer, compiled.get_input_tensor_details(key)[name])
    return lambda: compiled.run_by_name(key, inputs, outputs)


def main() -> int:
    args = gap_arguments(
        __doc__.splitlines()[0], "a .tflite file, a built-in model's name or an ONNX file"
    )
    model = model_file(args.model, ".tflite", "tflite", "litert_api_gap")
    if model is None:
        return 2
    os.sched_setaffinity(0, {args.core})
    interpreter, compiled = interpreter_call(model), compiled_model_call(model)
    timed_block(interpreter, args.warmup)
    timed_block(compiled, args.warmup)
    a_blocks, b_blocks = [], []
    for _ in range(args.blocks):
        a_blocks.append(timed_block(interpreter, args.block_iterations))
        b_blocks.append(timed_block(compiled, args.block_iterations))
    gap = bootstrap_ratio(b_blocks, a_blocks, estimator="paired", draws=2000, seed=0)
    interpreter_ms = statistics.median(x for block in a_blocks for x in block)
    compiled_ms = statistics.median(x for block in b_blocks for x in block)
    if args.json:
        print(
            json.dumps(
                {
                    "interpreter_ms": interpreter_ms,
                    "compiled_ms": compiled_ms,
                    "ratio": gap.ratio,
                    "low": gap.low,
                    "high": gap.high,
                    "blocks": gap.blocks,
                }
            )
        )
        return 0
    print(f"{'model':<40} {'Interpreter ms':>14} {'CompiledModel ms':>16} {'CM/Interp':>9} 95%")
    print(
        f"{str(args.model)[-40:]:<40} {interpreter_ms:>14.3f} {compiled_ms:>16.3f} "
        f"{gap.ratio:>9.4f} [{gap.low:.4f}, {gap.high:.4f}] ({gap.blocks} block pairs, core "
        f"{args.core})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
