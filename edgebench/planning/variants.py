"""The cells a breakdown adds to the matrix: N instances (--instances) and input-shape sweeps
(--shapes), one factor at a time.

Each base cell (one instance, the model's own shape) stays. An instance cell is the base cell
with N instances, in each requested mode. A shape cell is the base cell at one swept shape,
either ``fixed`` (an artifact converted for that shape) or ``dynamic`` (one artifact for all
shapes, resized at run time from the previous shape of the sweep; the first from the next, and
a one-shape sweep from the plain cell's shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import onnx

from edgebench.compute_backends import captures_cuda_graphs
from edgebench.converters import ConversionError, get_converter
from edgebench.converters.artifact_cache import file_sha256
from edgebench.errors import UserError
from edgebench.models import BUILTIN_MODELS, summarize_model
from edgebench.models.dynamic import relax_inputs
from edgebench.planning.cells import Cell, Verdict
from edgebench.planning.config import RunConfig
from edgebench.planning.modelref import ModelRef
from edgebench.quantization import QUANTIZED_PRECISIONS
from edgebench.statuses import ErrorKind, Status

#: A model's shape sweep: the model it runs, one inputs list per shape, why not (or None).
Swept = tuple[ModelRef, list[list[dict[str, Any]]], str | None]


@dataclass(frozen=True)
class Breakdown:
    """What the breakdown settings ask of every cell."""

    instances: Sequence[int] = (1,)
    instance_modes: Sequence[str] = ("separate", "shared")
    shapes: Sequence[str] = ()
    shape_modes: Sequence[str] = ("fixed", "dynamic")
    profile_ops: int = 0
    stages: bool = True
    cuda_graphs: bool = False


def expand(cells: Sequence[Cell], breakdown: Breakdown, cache: Path) -> list[Cell]:
    """The base cells with the breakdown settings, followed by their instance and shape
    variants (in the base cells' order)."""
    out: list[Cell] = []
    swept: dict[str, Swept] = {}
    for planned in cells:
        if planned.generation is not None:  # a generative cell has no tensor breakdowns
            out.append(planned)
            continue
        base = replace(planned, stages=breakdown.stages, profile_ops=breakdown.profile_ops)
        out.append(base)
        if breakdown.cuda_graphs and captures_cuda_graphs(base.framework, base.backend):
            out.append(replace(base, cuda_graph=True, profile_ops=0))
        for count in breakdown.instances:
            if count == 1:
                continue
            for mode in breakdown.instance_modes:
                out.append(
                    replace(
                        base,
                        instances=count,
                        instance_mode=mode,
                        concurrency=count,
                        # Stages are timed with one stream; operators once, in the plain cell.
                        stages=False,
                        profile_ops=0,
                    )
                )
        if not breakdown.shapes:
            continue
        key = base.model.name
        if key not in swept:
            swept[key] = _sweep_model(base.model, base.inputs, breakdown.shapes, cache)
        model, points, refusal = swept[key]
        for mode in breakdown.shape_modes:
            verdict = base.verdict or (_refused(refusal) if refusal else None)
            if mode == "dynamic":
                verdict = verdict or _dynamic_verdict(base)
            for index, inputs in enumerate(points):
                previous = points[index - 1] if index else (points[1:] or [base.inputs])[0]
                out.append(
                    replace(
                        base,
                        model=model,
                        inputs=inputs,
                        shape_mode=mode,
                        shape_from=previous if mode == "dynamic" and previous != inputs else None,
                        shape_base=points[0] if mode == "dynamic" else None,
                        shape_range=shape_range(points) if mode == "dynamic" else None,
                        profile_ops=0,
                        verdict=verdict,
                    )
                )
    return out


def shape_range(points: Sequence[list[dict[str, Any]]]) -> dict[str, tuple[list[int], list[int]]]:
    """Per input, the elementwise smallest and largest shape over a sweep's points."""
    ranges: dict[str, tuple[list[int], list[int]]] = {}
    for inputs in points:
        for spec in inputs:
            shape = [int(d) for d in spec["shape"]]
            low, high = ranges.get(spec["name"], (shape, shape))
            ranges[spec["name"]] = (
                [min(a, b) for a, b in zip(low, shape, strict=True)],
                [max(a, b) for a, b in zip(high, shape, strict=True)],
            )
    return ranges


def _refused(reason: str) -> Verdict:
    return (Status.UNSUPPORTED, ErrorKind.UNSUPPORTED, reason)


def _dynamic_verdict(cell: Cell) -> Verdict | None:
    """Why this framework cannot run one artifact at every shape, if it cannot."""
    if cell.precision in QUANTIZED_PRECISIONS:
        return _refused(f"{cell.precision} artifacts are calibrated at one shape; use fixed")
    if cell.convert_to is None:
        return None  # the framework runs the ONNX model itself (ONNX Runtime)
    try:
        # Every converter choice of a format agrees on this (TFLite's two both refuse).
        converter = get_converter(cell.convert_to)
    except ConversionError:
        return None  # the conversion itself will say why
    if converter.dynamic_shapes:
        return None
    note = converter.dynamic_note or "its converter fixes the input shape"
    return _refused(f"{cell.framework} has no dynamic-shape artifact: {note}")


def shape_points(
    model: ModelRef, base_inputs: list[dict[str, Any]], entries: Sequence[str]
) -> list[list[dict[str, Any]]] | str:
    """One inputs list per swept shape (the other inputs keep their shapes), or why not."""
    if not base_inputs:
        return f"model {model.name} has no ONNX inputs to sweep"
    points = []
    for entry in entries:
        name, _, dims = entry.rpartition("=")
        target = name or base_inputs[0]["name"]
        shape = [int(d) for d in dims.split("x")]
        match = [i for i in base_inputs if i["name"] == target]
        if not match:
            return f"model {model.name} has no input {target!r} (--shapes {entry})"
        if len(match[0]["shape"]) != len(shape):
            return (
                f"model {model.name}: input {target!r} has {len(match[0]['shape'])} dimensions, "
                f"--shapes {entry} gives {len(shape)}"
            )
        points.append(
            [dict(i, shape=shape) if i["name"] == target else dict(i) for i in base_inputs]
        )
    return points


def check_sweep_shapes(models: Sequence[ModelRef], entries: Sequence[str]) -> None:
    """Refuse, before any device is contacted, a --shapes entry that no model can take: a
    rank other than its input's (``1x3x32`` for a 1x3x32x32 input would otherwise be swept
    as a shape it is not), or an input name no model has."""
    usable = [m for m in models if m.error is None and m.format == "onnx" and m.inputs]
    for entry in entries:
        name, _, dims = entry.rpartition("=")
        rank = len(dims.split("x"))
        if name and usable and not any(s.name == name for m in usable for s in m.inputs):
            known = "; ".join(f"{m.name}: {', '.join(s.name for s in m.inputs)}" for m in usable)
            raise UserError(f"--shapes {entry}: no model has an input named {name!r} ({known})")
        for model in usable:
            target = name or model.inputs[0].name
            match = [s for s in model.inputs if s.name == target]
            if match and len(match[0].shape) != rank:
                have = "x".join(
                    str(d) if isinstance(d, int) and d > 0 else "N" for d in match[0].shape
                )
                raise UserError(
                    f"--shapes {entry}: model {model.name}'s input {target!r} has "
                    f"{len(match[0].shape)} dimensions ({have}), the shape gives {rank}; "
                    "give one number per dimension"
                )


def _sweep_model(
    model: ModelRef, base_inputs: list[dict[str, Any]], entries: Sequence[str], cache: Path
) -> Swept:
    """The model the sweep runs, its points, and why the model cannot be swept (None: it can).

    A dimension the ONNX file fixes can only change in a built-in model whose architecture
    leaves it free (a CNN's height and width): the sweep then runs a copy with those axes
    made symbolic. A refused sweep keeps its points, so each refused cell names its shape.
    """
    if model.error or model.format != "onnx" or model.path is None:
        return (
            model,
            [base_inputs],
            f"model {model.name}: only ONNX models can be swept over shapes",
        )
    points = shape_points(model, base_inputs, entries)
    if isinstance(points, str):
        return model, [base_inputs], points
    fixed = {
        spec.name: axes
        for spec in model.inputs
        if (axes := _changed_axes(spec.name, spec.shape, points))
    }
    if not fixed:
        return model, points, None
    builtin = BUILTIN_MODELS.get(model.source)
    free = set(getattr(builtin, "free_axes", ()) or ())
    blocked = {name: axes for name, axes in fixed.items() if not set(axes) <= free}
    if builtin is None or blocked:
        name, axes = next(iter((blocked or fixed).items()))
        declared = next(s.shape for s in model.inputs if s.name == name)
        reason = (
            f"model {model.name}: input {name!r} is fixed at {list(declared)} (axes "
            f"{', '.join(map(str, axes))}); sweeping it needs a model with dynamic dimensions there"
        )
        return model, points, reason
    return _relaxed(model, fixed, cache), points, None


def _changed_axes(
    name: str, declared: Sequence[Any], points: list[list[dict[str, Any]]]
) -> list[int]:
    """The axes of input ``name`` that the ONNX file fixes and some point changes."""
    axes = set()
    for point in points:
        for item in point:
            if item["name"] != name:
                continue
            for axis, (have, wanted) in enumerate(zip(declared, item["shape"], strict=True)):
                if isinstance(have, int) and have > 0 and have != wanted:
                    axes.add(axis)
    return sorted(axes)


def _relaxed(model: ModelRef, axes: dict[str, list[int]], cache: Path) -> ModelRef:
    """A copy of the built-in model with ``axes`` symbolic, written once into the cache."""
    assert model.path is not None and model.sha256 is not None
    tag = "-".join(f"{name}{''.join(map(str, a))}" for name, a in sorted(axes.items()))
    path = cache / "models" / f"{model.name}-{model.sha256[:12]}-free-{tag}.onnx"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        relaxed = relax_inputs(onnx.load(str(model.path)), axes)
        partial = path.with_suffix(".partial")
        onnx.save(relaxed, str(partial))
        partial.replace(path)
    inputs = list(summarize_model(onnx.load(str(path), load_external_data=False)).inputs)
    return replace(model, path=path, sha256=file_sha256(path), reference=path, inputs=inputs)


def breakdown_of(config: RunConfig) -> Breakdown:
    b, sweep = config.breakdown, config.sweep
    return Breakdown(
        instances=sweep.instances,
        instance_modes=sweep.instance_mode,
        shapes=sweep.shapes,
        shape_modes=sweep.shape_mode,
        profile_ops=b.profile_iterations if "ops" in b.profile else 0,
        stages=not b.no_stages,
        cuda_graphs=b.cuda_graphs,
    )


def base_shapes(config: RunConfig, models: Sequence[ModelRef]) -> list[str]:
    """--shape as given; with only --shapes, its first entry gives models whose inputs are
    dynamic their base shape (the one the instance and plain cells run)."""
    sweep = config.sweep
    if sweep.shape or not sweep.shapes:
        return list(sweep.shape)
    dynamic = any(
        not all(isinstance(d, int) and d > 0 for d in spec.shape)
        for model in models
        if model.error is None
        for spec in model.inputs
    )
    return [sweep.shapes[0].replace("x", ",")] if dynamic else []
