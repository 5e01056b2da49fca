"""The runner's stage, instance, shape and operator results, as record fields.

The runner reports raw figures (nanoseconds, kilobytes); the record keeps the raw stage
samples beside their p50/p99 in milliseconds, and memory in MB, like the rest of the record.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from edgebench.analysis.breakdowns import op_sum_warning
from edgebench.planning.cells import Cell
from edgebench.results.breakdown_parts import (
    Instances,
    OpProfile,
    ShapeChange,
    ShapeVariant,
    Stages,
)
from edgebench.results.record_warnings import INSTANCES_APART, INSTANCES_CUT_SHORT, RecordWarning
from edgebench.results.records import Record
from edgebench.runners.protocol.result_parts import InstancesPart, ShapeChangePart, StagesPart
from edgebench.runners.protocol.run_result import RunResult
from edgebench.runners.protocol.typed_json import write_object


def _mb(kb: Any) -> float | None:
    return None if kb is None else round(float(kb) / 1024.0, 3)


def _ms(ns: Any) -> float | None:
    return None if ns is None else float(ns) / 1e6


def stages_field(part: StagesPart | None) -> Stages | None:
    """The record's stages from the runner's stage samples (or its reason for none)."""
    if part is None:
        return None
    if part.unavailable is not None:
        return Stages(unavailable=part.unavailable)
    if part.samples_ns is None:
        return None
    return Stages.from_samples(part.samples_ns, part.boundaries or {})


def instances_field(part: InstancesPart | None, rss_before_kb: int | None) -> Instances | None:
    """Memory after each instance was ready, with one of them run, and with all running.

    ``load_mb_per_instance``: the growth per instance after the first, right after loading
    (weights and per-instance state). ``per_instance_mb``: what each instance after the first
    adds while all run: the memory with all running, less what one instance alone would hold
    (the memory with one run, less the other instances' load growth), over N - 1.
    """
    if part is None:
        return None
    count = part.count
    after = [_mb(kb) for kb in part.rss_after_load_kb or []]
    one = _mb(part.rss_one_running_kb)
    running = _mb(part.rss_running_kb)
    per_instance = load_growth = None
    if count > 1 and after and all(v is not None for v in after):
        load_growth = round((after[-1] - after[0]) / (count - 1), 3)  # type: ignore[operator]  # after holds numbers here
    if load_growth is not None and one is not None and running is not None:
        alone = one - load_growth * (count - 1)
        per_instance = round((running - alone) / (count - 1), 3)
    on_device = part.device_memory_after_load_mb
    device_growth = None
    if count > 1 and on_device and on_device[0] is not None and on_device[-1] is not None:
        device_growth = round((on_device[-1] - on_device[0]) / (count - 1), 3)
    return Instances(
        count=count,
        mode=part.mode,
        measured=True,
        rss_before_load_mb=_mb(rss_before_kb),
        rss_after_load_mb=after,
        rss_one_running_mb=one,
        rss_running_mb=running,
        per_instance_mb=per_instance,
        load_mb_per_instance=load_growth,
        ran=part.ran,
        at_once=part.at_once,
        device_memory_after_load_mb=on_device or None,
        device_load_mb_per_instance=device_growth,
    )


def instances_warning(instances: Instances | None, stop_reason: Any) -> RecordWarning | None:
    """The record's warning when fewer than the cell's N instances ran in its timed window, or
    were ever inferring at the same moment: its figures are then not "all N running"."""
    if not instances:
        return None
    count, ran, at_once = instances.count, instances.ran, instances.at_once
    if not isinstance(count, int) or count < 2:
        return None
    if isinstance(ran, int) and ran < count:
        return INSTANCES_CUT_SHORT.make(ran=ran, count=count, stop_reason=stop_reason)
    if isinstance(at_once, int) and at_once < count:
        return INSTANCES_APART.make(at_once=at_once, count=count)
    return None


def shape_field(cell: Cell, part: ShapeChangePart | None) -> ShapeVariant | None:
    """The cell's place in a shape sweep: mode, pixel count, and the resize it timed."""
    if cell.shape_mode is None:
        return None
    first = (cell.inputs or [{}])[0].get("shape") or []
    change = None
    if part is not None and part != ShapeChangePart():
        change = ShapeChange(part.from_, _ms(part.resize_ns), _ms(part.first_ns))
    return ShapeVariant(
        cell.shape_mode, math.prod(int(d) for d in first) if first else None, change
    )


def with_op_profile(record: Record, profile: dict[str, Any] | None) -> Record:
    """``record`` with the op profile, and a warning when its ops outweigh its inference."""
    op_profile = None if profile is None else OpProfile.from_dict(profile)
    warning = op_sum_warning(op_profile)
    warnings = [*record.warnings, warning] if warning is not None else record.warnings
    return replace(record, op_profile=op_profile, warnings=warnings)


def with_breakdowns(record: Record, cell: Cell, result: RunResult) -> Record:
    """``record`` with the runner's stages, op profile, instances and shape change."""
    profile = result.op_profile
    record = with_op_profile(record, None if profile is None else write_object(profile))
    # A runner that stopped before loading the instances leaves the cell's own count and mode.
    instances = instances_field(result.instances, result.rss_before_load_kb) or record.instances
    fewer = instances_warning(instances, record.stop_reason)
    return replace(
        record,
        stages=stages_field(result.stages),
        instances=instances,
        shape=shape_field(cell, result.shape_change),
        warnings=[*record.warnings, fewer] if fewer is not None else record.warnings,
    )
