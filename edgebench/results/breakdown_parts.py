"""The breakdown parts of a record: stage times (``stages``), the operator profile
(``op_profile``), N instances (``instances``) and the shape sweep (``shape``).

docs/breakdowns.md says what each measures; docs/results.md lists their fields. Each reads
and writes the JSON object earlier versions stored under its field, key for key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgebench.results.json_values import JsonObject, RecordPart, without_none


@dataclass
class Stages(RecordPart):
    """Per-stage times of each timed iteration (copy-in, compute, copy-out), where the
    framework's API separates them, or only ``unavailable``: why not. A stage the framework
    merges into another has no samples; ``boundaries`` says what each stage covers."""

    samples_ns: dict[str, list[int]] | None = None
    p50_ms: dict[str, float] | None = None
    p99_ms: dict[str, float] | None = None
    boundaries: dict[str, str] | None = None
    unavailable: str | None = None

    @classmethod
    def from_samples(cls, samples_ns: dict[str, list[int]], boundaries: dict[str, str]) -> Stages:
        """The stages with their p50 and p99 (ms), computed like the record's latency
        (numpy's linear interpolation, analysis/statistics.py ``latency_stats``)."""
        samples = {stage: [int(v) for v in values] for stage, values in samples_ns.items()}
        p50: dict[str, float] = {}
        p99: dict[str, float] = {}
        for stage, values in samples.items():
            if values:
                ms = np.asarray(values, dtype=np.float64) / 1e6
                low, high = np.percentile(ms, [50, 99])
                p50[stage], p99[stage] = float(low), float(high)
        return cls(samples, p50, p99, dict(boundaries))

    @classmethod
    def merge(cls, rounds: Sequence[Stages | None]) -> Stages | None:
        """The rounds' samples pooled, like the latency samples, when every round timed its
        stages; else the first round's part."""
        if not rounds or any(r is None or r.samples_ns is None for r in rounds):
            return rounds[0] if rounds else None
        pooled: dict[str, list[int]] = {}
        for part in rounds:
            for stage, values in (part.samples_ns or {}).items():  # type: ignore[union-attr]  # rounds that hold samples
                pooled.setdefault(stage, []).extend(values)
        return cls.from_samples(pooled, rounds[0].boundaries or {})  # type: ignore[union-attr]  # rounds that hold samples

    @classmethod
    def from_dict(cls, data: Any, name: str = "stages") -> Stages:
        obj = JsonObject(data, name)
        return cls(
            samples_ns=obj.get("samples_ns", dict[str, list[int]]),
            p50_ms=obj.get("p50_ms", dict[str, float]),
            p99_ms=obj.get("p99_ms", dict[str, float]),
            boundaries=obj.get("boundaries", dict[str, str]),
            unavailable=obj.get("unavailable", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return without_none(
            {
                "samples_ns": self.samples_ns,
                "p50_ms": self.p50_ms,
                "p99_ms": self.p99_ms,
                "boundaries": self.boundaries,
                "unavailable": self.unavailable,
            }
        )


@dataclass
class ProfiledOp:
    """One graph node of an op profile: ``time_ms`` is its mean per profiled iteration,
    ``count`` its calls per iteration, ``impl`` the kernel or backend that ran it."""

    name: str | None
    type: str | None
    impl: str | None
    time_ms: float | None
    count: int | None

    @classmethod
    def from_json(cls, obj: JsonObject) -> ProfiledOp:
        return cls(
            obj.get("name", str),
            obj.get("type", str),
            obj.get("impl", str),
            obj.get("time_ms", float),
            obj.get("count", int),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "impl": self.impl,
            "time_ms": self.time_ms,
            "count": self.count,
        }


@dataclass
class OpProfile(RecordPart):
    """``--profile ops``: the ops of ``iterations`` profiled inferences, slowest first, their
    sum (``total_ms``) and the profiled inference's own time; or only ``unavailable``: why
    not. Profiled iterations are separate from the timed ones."""

    iterations: int | None = None
    source: str | None = None
    ops: list[ProfiledOp] | None = None
    total_ms: float | None = None
    inference_ms: float | None = None
    unavailable: str | None = None

    @classmethod
    def missing(cls, why: str) -> OpProfile:
        return cls(unavailable=why)

    @classmethod
    def from_dict(cls, data: Any, name: str = "op_profile") -> OpProfile:
        obj = JsonObject(data, name)
        return cls(
            iterations=obj.get("iterations", int),
            source=obj.get("source", str),
            ops=[ProfiledOp.from_json(op) for op in obj.objects("ops")] if obj.has("ops") else None,
            total_ms=obj.get("total_ms", float),
            inference_ms=obj.get("inference_ms", float),
            unavailable=obj.get("unavailable", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return without_none(
            {
                "iterations": self.iterations,
                "source": self.source,
                "ops": None if self.ops is None else [op.to_dict() for op in self.ops],
                "total_ms": self.total_ms,
                "inference_ms": self.inference_ms,
                "unavailable": self.unavailable,
            }
        )


#: The keys the runner's report of N instances adds to the cell's own count and mode.
_MEASURED_INSTANCE_KEYS = (
    "rss_before_load_mb",
    "rss_after_load_mb",
    "rss_one_running_mb",
    "rss_running_mb",
    "per_instance_mb",
    "load_mb_per_instance",
    "ran",
    "at_once",
    "device_memory_after_load_mb",
    "device_load_mb_per_instance",
)

_DEVICE_MEMORY_KEYS = ("device_memory_after_load_mb", "device_load_mb_per_instance")


@dataclass
class Instances(RecordPart):
    """``--instances``: N instances of the model run at once, ``separate`` (N loads) or
    ``shared`` (one load, N streams). Memory in MB: before loading, after each instance was
    ready, with one running and with all running. ``load_mb_per_instance`` and
    ``per_instance_mb`` (measure/breakdowns.py defines them) are what each instance after
    the first adds, loaded and running; ``ran`` and ``at_once`` say how many finished an
    inference in the timed window and how many were ever inferring at the same moment.

    ``measured`` is False when the runner stopped before loading the instances: the part
    then holds only the cell's own count and mode."""

    count: int | None
    mode: str | None
    measured: bool = False
    rss_before_load_mb: float | None = None
    rss_after_load_mb: list[float | None] = field(default_factory=list)
    rss_one_running_mb: float | None = None
    rss_running_mb: float | None = None
    per_instance_mb: float | None = None
    load_mb_per_instance: float | None = None
    ran: int | None = None
    at_once: int | None = None
    #: On an accelerator whose runner reads it (TensorRT): the device memory in use after
    #: each instance was ready, and what each instance after the first added to it.
    device_memory_after_load_mb: list[float | None] | None = None
    device_load_mb_per_instance: float | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = "instances") -> Instances:
        obj = JsonObject(data, name)
        return cls(
            count=obj.get("count", int),
            mode=obj.get("mode", str),
            measured=any(key in obj.data for key in _MEASURED_INSTANCE_KEYS),
            rss_before_load_mb=obj.get("rss_before_load_mb", float),
            rss_after_load_mb=obj.get("rss_after_load_mb", list[float | None]) or [],
            rss_one_running_mb=obj.get("rss_one_running_mb", float),
            rss_running_mb=obj.get("rss_running_mb", float),
            per_instance_mb=obj.get("per_instance_mb", float),
            load_mb_per_instance=obj.get("load_mb_per_instance", float),
            ran=obj.get("ran", int),
            at_once=obj.get("at_once", int),
            device_memory_after_load_mb=obj.get("device_memory_after_load_mb", list[float | None]),
            device_load_mb_per_instance=obj.get("device_load_mb_per_instance", float),
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"count": self.count, "mode": self.mode}
        if self.measured:
            data.update({key: getattr(self, key) for key in _MEASURED_INSTANCE_KEYS})
            for key in _DEVICE_MEMORY_KEYS:  # only where measured: CPU records keep their keys
                if data[key] is None:
                    del data[key]
        return data


@dataclass
class ShapeChange:
    """A dynamic cell's first inference after resizing from another shape (``from``: that
    shape's inputs): the resize and the inference, in ms."""

    from_inputs: list[dict[str, Any]] | None
    resize_ms: float | None
    first_ms: float | None

    @classmethod
    def from_json(cls, obj: JsonObject) -> ShapeChange:
        return cls(
            obj.get("from", list[dict[str, Any]]),
            obj.get("resize_ms", float),
            obj.get("first_ms", float),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.from_inputs, "resize_ms": self.resize_ms, "first_ms": self.first_ms}


@dataclass
class ShapeVariant(RecordPart):
    """``--shapes``: the cell's place in a shape sweep: ``fixed`` (an artifact per shape) or
    ``dynamic`` (one artifact, resized), the first input's pixel count, and for dynamic cells
    the resize it timed."""

    mode: str | None
    pixels: int | None = None
    change: ShapeChange | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = "shape") -> ShapeVariant:
        obj = JsonObject(data, name)
        change = obj.child("change")
        return cls(
            mode=obj.get("mode", str),
            pixels=obj.get("pixels", int),
            change=None if change is None else ShapeChange.from_json(change),
        )

    def to_dict(self) -> dict[str, Any]:
        change = None if self.change is None else self.change.to_dict()
        return {"mode": self.mode, "pixels": self.pixels, "change": change}
