"""The settings of what `edgebench run` measures: the matrix of cells (devices, models,
frameworks and the sweeps over threads, cores, precisions, instances and shapes). Part of
``planning.config``'s ``RunConfig``; in a plan, the top level and ``[sweep]``."""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.compute_backends import BACKEND_NAMES
from edgebench.planning import limits
from edgebench.planning.checks import choices, device_names, entries, names, shapes, whole, wholes
from edgebench.planning.setting import setting

PRECISIONS = ("fp32", "fp16", "int8", "int8-weights")
#: A generative cell's precision is its weight type (GGUF's names).
LLM_WEIGHT_TYPES = ("f16", "q8_0", "q4_0")


@dataclass
class Sweep:
    """What is measured: the matrix of cells. In a plan: top level and ``[sweep]``."""

    devices: list[str] = setting(
        ["local"], device_names, "Devices to measure on.", repeat=True, plan="devices"
    )
    models: list[str] = setting(
        [],
        names,
        "Built-in names, .onnx or .gguf paths [default: the built-in tensor models].",
        repeat=True,
    )
    frameworks: list[str] = setting(
        [], names, "Frameworks [default: every one with a Python runtime].", repeat=True
    )
    threads: list[int] = setting(
        [1], wholes(1, limits.MAX_THREADS), "Thread counts to sweep, e.g. 1,4.", repeat=True
    )
    cores: list[str] = setting(
        ["all"],
        entries,
        "Cores: all, 0, 0-3, 0,2 or a cluster name; repeat to sweep.",
        repeat=True,
    )
    precision: list[str] = setting(
        ["fp32"],
        choices(*PRECISIONS),
        "Precisions to sweep: fp32, fp16, int8 (weights and activations, calibrated), "
        "int8-weights (weight-only; MNN).",
        repeat=True,
    )
    backends: list[str] = setting(
        [],
        choices(*BACKEND_NAMES),
        "Compute backends to sweep: cpu, or accelerators such as vulkan, opencl, gpu, nnapi "
        "[default: each device's lab `backends`, else cpu].",
        repeat=True,
    )
    concurrency: int = setting(
        1, whole(1, limits.MAX_CONCURRENCY), "Concurrent inference streams (throughput mode)."
    )
    shape: list[str] = setting(
        [],
        entries,
        "Input shape for dynamic models: 1,3,640,640 or name=1,3,640,640.",
        repeat=True,
    )
    instances: list[int] = setting(
        [1],
        wholes(1, limits.MAX_INSTANCES),
        "Instances of each model in one process, e.g. 1,2,4,8: memory per instance, and "
        "latency and throughput with all of them running.",
        repeat=True,
    )
    instance_mode: list[str] = setting(
        ["separate", "shared"],
        choices("separate", "shared"),
        "With --instances above 1: separate loads, and/or one load whose weights the "
        "instances share (where the framework can).",
        repeat=True,
    )
    shapes: list[str] = setting(
        [],
        shapes,
        "Input sizes to sweep, e.g. 1x3x160x160,1x3x224x224,1x3x320x320 (models with "
        "dynamic or, for built-in CNNs, free spatial dimensions).",
        repeat=True,
    )
    shape_mode: list[str] = setting(
        ["fixed", "dynamic"],
        choices("fixed", "dynamic"),
        "With --shapes: an artifact converted per shape, and/or one dynamic artifact resized "
        "at run time (where the framework can).",
        repeat=True,
    )
    # Generative models (docs/generative.md): the workload of their cells.
    prompt_tokens: list[int] = setting(
        [128, 512],
        wholes(1, limits.MAX_CONTEXT_TOKENS),
        "Generative models: prompt lengths, one prefill test each (time to first token).",
        repeat=True,
    )
    gen_tokens: int = setting(
        128,
        whole(1, limits.MAX_CONTEXT_TOKENS),
        "Generative models: tokens the decode test generates (greedy, end of text ignored).",
    )
    context_depth: int = setting(
        0,
        whole(0, limits.MAX_CONTEXT_TOKENS),
        "Generative models: prompt tokens in the cache before the decode test starts.",
    )
    weights: list[str] = setting(
        ["f16"],
        choices(*LLM_WEIGHT_TYPES),
        "Generative built-in models: weight types to sweep (f16, q8_0, q4_0); a .gguf file "
        "runs at its own.",
        repeat=True,
    )
