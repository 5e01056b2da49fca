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

from edgebench.runners.protocol import MAX_CPU_ID

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
    "MAX_TEMPERATURE_C",
    "MAX_TENSOR_ELEMENTS",
    "MAX_THREADS",
    "MAX_WARMUP",
    "over_limit",
    "tensor_problem",
]

#: --threads: a thread pool per instance; no device has more cores than this.
MAX_THREADS = 1024
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
#: One dimension of an input tensor (--shape, --shapes, a preprocessing size).
MAX_DIMENSION = 1 << 24
#: Elements of one input tensor: frameworks index tensors with 32-bit integers.
MAX_TENSOR_ELEMENTS = 2**31 - 1


def over_limit(value: object, limit: float, unit: str = "") -> str:
    """The one wording of a value over its bound (the caller prefixes the option)."""
    shown = f"{limit:g}" if isinstance(limit, float) else str(limit)
    return f"{value} is over the limit of {shown}{unit}"


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
