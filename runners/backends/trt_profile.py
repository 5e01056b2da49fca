"""The optimization profile a TensorRT engine is built for: every input's min, opt and max shape.

A fixed-shape engine (min = opt = max) from the model's own static shapes or the cell's input
shapes, unless the options' ``shape_profile`` (runners/protocol/backend_options.py) gives
``{input: {"min", "opt", "max"}}`` (a dynamic-shape cell); and which profile each execution
context uses. Nothing here needs TensorRT.

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..protocol.errors import BackendError

Profile = Dict[str, Dict[str, List[int]]]
#: (name, shape with -1 for a dynamic dimension)
ModelInput = Tuple[str, Sequence[int]]
BOUNDS = ("min", "opt", "max")


def engine_profile(
    inputs: Sequence[ModelInput],
    shape_profile: Optional[Mapping[str, Any]] = None,
    feed_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> Optional[Profile]:
    """The profile for ``inputs``: ``shape_profile``'s ranges where it gives them, else the
    model's static shape or the feed's shape as min = opt = max. None while a dynamic input
    has neither (the shape is known once the feeds are)."""
    known = {name for name, _ in inputs}
    unknown = sorted(set(shape_profile or {}) - known)
    if unknown:
        raise BackendError(
            "bad_spec",
            "shape_profile names %s, which the model does not have (its inputs: %s)"
            % (", ".join(unknown), ", ".join(sorted(known))),
        )
    profile: Profile = {}
    for name, shape in inputs:
        if shape_profile and name in shape_profile:
            profile[name] = _ranges(name, shape, shape_profile[name])
            continue
        fixed = list(shape)
        if any(d < 0 for d in fixed):
            if not feed_shapes or name not in feed_shapes:
                return None
            fixed = _fitting(name, shape, feed_shapes[name])
        profile[name] = {bound: list(fixed) for bound in BOUNDS}
    return profile


def context_profiles(inputs: Sequence[ModelInput], streams: int) -> List[int]:
    """The optimization profile index each of ``streams`` concurrent execution contexts uses.

    On an engine whose network has a dynamic input dimension, even one built for a single
    shape, TensorRT wants every execution context in concurrent use on its own profile
    (NvInferRuntime.h, IExecutionContext), so such an engine is built with one profile per
    stream, all of the same ranges, and context k takes profile k. A static network's contexts
    all use its one profile. The engine has ``max(plan) + 1`` profiles; a context made after
    ``len(plan)`` others (evaluation runs them one at a time) takes ``plan[k % len(plan)]``.
    """
    count = max(int(streams), 1)
    dynamic = any(int(d) < 0 for _, shape in inputs for d in shape)
    return list(range(count)) if dynamic else [0] * count


def covers(profile: Profile, feed_shapes: Mapping[str, Sequence[int]]) -> bool:
    """Whether an engine built for ``profile`` accepts inputs of ``feed_shapes``."""
    for name, ranges in profile.items():
        shape = list(feed_shapes.get(name, ranges["opt"]))
        if len(shape) != len(ranges["min"]):
            return False
        low, high = ranges["min"], ranges["max"]
        if any(not lo <= d <= hi for d, lo, hi in zip(shape, low, high)):
            return False
    return True


def is_fixed(profile: Profile) -> bool:
    return all(r["min"] == r["max"] for r in profile.values())


def _ranges(name: str, shape: Sequence[int], given: Any) -> Dict[str, List[int]]:
    if not isinstance(given, Mapping) or any(b not in given for b in BOUNDS):
        raise BackendError("bad_spec", "shape_profile[%r] must give min, opt and max shapes" % name)
    ranges = {b: _fitting(name, shape, given[b]) for b in BOUNDS}
    for low, mid, high in zip(ranges["min"], ranges["opt"], ranges["max"]):
        if not low <= mid <= high:
            raise BackendError(
                "bad_spec",
                "shape_profile[%r]: min %s, opt %s, max %s are not in order"
                % (name, ranges["min"], ranges["opt"], ranges["max"]),
            )
    return ranges


def _fitting(name: str, shape: Sequence[int], given: Any) -> List[int]:
    """``given`` as a shape of ``name``: same rank, the model's static dims kept."""
    try:
        dims = [int(d) for d in given]
    except (TypeError, ValueError):
        message = "shape %r for input %r is not a list of ints" % (given, name)
        raise BackendError("bad_spec", message) from None
    model = list(shape)
    if len(dims) != len(model) or any(m >= 0 and m != d for m, d in zip(model, dims)):
        raise BackendError(
            "bad_spec",
            "shape %s does not fit input %r of shape %s (-1: any size)" % (dims, name, model),
        )
    if any(d < 1 for d in dims):
        message = "shape %s for input %r has a dimension below 1" % (dims, name)
        raise BackendError("bad_spec", message)
    return dims
