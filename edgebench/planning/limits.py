"""The upper bound of every size and count a user can type for a run.

Each bound is checked where its setting is checked (``planning/checks.py``, shared by the
command line and plan files), so a value over it is one line naming the option, the value and
the limit, before anything starts. A value a bound lets through can still be too big for one
device: N instances of a model, or an input tensor, that need more than the device's memory.
Those are checked per cell once the device's memory is known (``memory_verdicts``).

The bounds are generous: each is far above any real measurement and low enough that nothing
edgebench allocates or loops over because of it can hang the host or exhaust its memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from edgebench.runners.protocol import MAX_CPU_ID
from edgebench.statuses import ErrorKind, Status

if TYPE_CHECKING:
    from edgebench.planning.cells import Cell

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_CPU_ID",
    "MAX_DIMENSION",
    "MAX_INSTANCES",
    "MAX_ITERATIONS",
    "MAX_PERIOD_S",
    "MAX_PROFILE_ITERATIONS",
    "MAX_ROUNDS",
    "MAX_SAMPLES",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_SQNR_DB",
    "MAX_TEMPERATURE_C",
    "MAX_TENSOR_ELEMENTS",
    "MAX_THREADS",
    "MAX_TOLERANCE",
    "MAX_WARMUP",
    "check_memory",
    "memory_problem",
    "over_limit",
    "tensor_problem",
]

#: --threads: a thread pool per instance; no device has more cores than this.
MAX_THREADS = 1024
#: Prompt, generated and context tokens of a generative cell.
MAX_CONTEXT_TOKENS = 1 << 20
#: --concurrency: one runner thread (and one stream) each.
MAX_CONCURRENCY = 1024
#: --instances: one loaded model or stream each, in one runner process.
MAX_INSTANCES = 1024
#: --iterations: every raw sample is kept (runner memory, records.jsonl); the same cap as a
#: --sustained window's samples.
MAX_ITERATIONS = 2_000_000
#: --warmup: untimed inferences per stream.
MAX_WARMUP = 1_000_000
#: --rounds: visits per cell.
MAX_ROUNDS = 100
#: --profile-iterations: profiled inferences, each with its own per-operator events.
MAX_PROFILE_ITERATIONS = 100_000
#: --calibration-samples, --eval-samples: samples stacked in one array.
MAX_SAMPLES = 100_000
#: Every duration in seconds (--min-time, --max-time, --timeout, --sustained, --baseline-s,
#: --cooldown-max-wait): one day.
MAX_SECONDS = 86_400.0
#: --telemetry-period: seconds between two telemetry samples.
MAX_PERIOD_S = 60.0
#: --seed: the seeded-input generator mixes it as a 64-bit integer (edgebench.ctr/1).
MAX_SEED = 2**63 - 1
#: --cooldown-temp, --temp-limit, in degrees C: no thermal zone reads hotter.
MAX_TEMPERATURE_C = 200.0
#: --tolerance, --tolerance-fp16: a relative error of 1 (100%) already lets any output pass.
MAX_TOLERANCE = 1.0
#: --int8-min-sqnr, dB: float32 itself holds about 150 dB.
MAX_SQNR_DB = 200.0
#: One dimension of an input tensor (--shape, --shapes, a preprocessing size).
MAX_DIMENSION = 1 << 24
#: Elements of one input tensor: frameworks index tensors with 32-bit integers.
MAX_TENSOR_ELEMENTS = 2**31 - 1


def over_limit(value: object, limit: float, unit: str = "") -> str:
    """The one wording of a value over its bound (the caller prefixes the option)."""
    typed = str(value)
    if len(typed) > 24:
        typed = f"{typed[:20]}... ({len(typed)} digits)" if typed.isdigit() else typed[:20] + "..."
    shown = f"{limit:g}" if isinstance(limit, float) else str(limit)
    return f"{typed} is over the limit of {shown}{unit}"


def tensor_problem(dims: Sequence[int]) -> str | None:
    """Why a tensor of shape ``dims`` is too big to feed, or None when it is not."""
    too_long = [d for d in dims if d > MAX_DIMENSION]
    if too_long:
        return f"dimension {over_limit(too_long[0], MAX_DIMENSION)}"
    elements = math.prod(dims)
    if elements > MAX_TENSOR_ELEMENTS:
        shown = "x".join(map(str, dims))
        return f"{shown} has {elements} elements, over the limit of {MAX_TENSOR_ELEMENTS}"
    return None


def _bytes(size: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 1024:.1f} kB"


def _input_bytes(inputs: Sequence[dict[str, Any]]) -> int:
    total = 0
    for spec in inputs:
        try:
            itemsize = np.dtype(spec.get("dtype") or "float32").itemsize
        except TypeError:
            itemsize = 4
        total += math.prod(int(d) for d in spec.get("shape") or []) * itemsize
    return total


def memory_problem(cell: Cell) -> str | None:
    """Why ``cell`` cannot fit its device's memory, or None (also when the memory is unknown).

    What it needs at least: the model file once per load (N loads for separate instances)
    and the input tensors once per stream. Weights unpack and activations come on top, so a
    cell refused here would certainly not fit; one let through still may not.
    """
    device = cell.device
    total_kb = device.facts.mem_total_kb if device.facts is not None else None
    if not total_kb:
        return None
    model = cell.model.path
    model_bytes = sum(
        p.stat().st_size for p in [model, *cell.model.companions] if p and p.is_file()
    )
    loads = cell.instances if cell.instances > 1 and cell.instance_mode == "separate" else 1
    streams = max(cell.concurrency, cell.instances)
    inputs = _input_bytes(cell.inputs)
    need = model_bytes * loads + inputs * streams
    if need <= total_kb * 1024:
        return None
    parts = []
    if model_bytes:
        parts.append(f"{loads} x {_bytes(model_bytes)} of model" if loads > 1 else "the model")
    if inputs:
        parts.append(f"{streams} x {_bytes(inputs)} of inputs" if streams > 1 else "the inputs")
    fix = "use fewer --instances or a smaller shape"
    if cell.generation is not None:
        fix = "use a smaller model or weight type (--weights q4_0)"
    return (
        f"needs at least {_bytes(need)} ({' + '.join(parts)}), more than device {device.name}'s "
        f"memory ({_bytes(total_kb * 1024)} MemTotal); {fix}"
    )


def check_memory(cells: Sequence[Cell]) -> list[Cell]:
    """The cells, each its device cannot hold failed before anything is converted or
    measured."""
    out = []
    for cell in cells:
        problem = memory_problem(cell) if cell.verdict is None else None
        if problem:
            cell = replace(cell, verdict=(Status.FAILED, ErrorKind.OUT_OF_MEMORY, problem))
        out.append(cell)
    return out
