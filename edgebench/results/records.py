"""The one result record that flows from a finished cell to the store, matrix and reports.

Field names listed in docs/results.md are stable; add fields, never rename them.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from edgebench.statuses import Status

RECORD_SCHEMA = "edgebench.record/1"
STATUSES = tuple(Status)


@dataclass
class Record:
    run_id: str
    cell_id: str
    device: str
    model: str
    framework: str
    precision: str
    threads: int
    cores: str
    status: str
    error: str | None = None
    error_kind: str | None = None
    latency_ms: dict[str, float] | None = None
    samples_ns: list[int] = field(default_factory=list)
    throughput_ips: float | None = None
    peak_rss_mb: float | None = None
    schema: str = RECORD_SCHEMA
    concurrency: int = 1
    model_path: str | None = None
    model_sha256: str | None = None
    framework_version: str | None = None
    cores_effective: list[int] | None = None
    inputs: list[dict[str, Any]] | None = None
    n_samples: int = 0
    warmup_samples_ns: list[int] = field(default_factory=list)
    stop_reason: str | None = None
    #: --target-ci: relative half-width of the 95% CI of the median when sampling stopped.
    median_ci: float | None = None
    measure_wall_s: float | None = None
    rss_before_load_mb: float | None = None
    load_ms: float | None = None
    first_inference_ms: float | None = None
    outputs: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    device_info: dict[str, Any] = field(default_factory=dict)
    edgebench_version: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    stderr_tail: str | None = None
    #: The converted file the cell ran: format, converter and version, cache hit, time, sha256.
    artifact: dict[str, Any] | None = None
    #: Outputs vs ONNX Runtime on the same input (outputcheck.OutputCheck.as_dict()).
    output_check: dict[str, Any] | None = None
    #: Energy per inference (mJ) after subtracting idle power; None when unavailable.
    energy_mj_per_inf: float | None = None
    #: Mean power over the timed window (W), idle included.
    avg_power_w: float | None = None
    #: Why the energy figure may mislead (charging, throttled, coarse sampling, ...).
    energy_flags: list[str] = field(default_factory=list)
    #: energy.EnergyResult.as_dict(): baseline, temperatures, frequencies, unavailable reason.
    energy: dict[str, Any] | None = None
    #: --sustained: first 10% vs last 10% of the window (latency, power, temperature).
    sustained: dict[str, Any] | None = None
    #: The raw telemetry trace sampled on the device (edgebench.telemetry/1).
    telemetry: dict[str, Any] | None = None
    #: --rounds: how many interleaved rounds the samples were pooled from, and each round's p50.
    rounds: int = 1
    round_p50_ms: list[float] | None = None
    #: For cells run by a native benchmark binary: tool, version, which statistics it printed.
    native: dict[str, Any] | None = None
    #: Measured on an emulated CPU (qemu user mode, ...): the latency says nothing about the
    #: chip, so the cell is never ranked or recommended; ``emulation`` says how it was known.
    emulated: bool = False
    emulation: str | None = None
    #: Quantized precisions: how the artifact was quantized
    #: ``{method, granularity, calibration: {n, sha256, synthetic}, fp32_fallback_ops}``.
    quant: dict[str, Any] | None = None
    #: Quantized precisions: outputs on the evaluation set vs fp32 ONNX Runtime
    #: ``{n, top1_agreement, cosine_min, rel_l2_mean, sqnr_db, worst_output, passed, problem}``.
    accuracy: dict[str, Any] | None = None
    #: Per-stage times of each timed iteration, where the framework's API separates them:
    #: ``{samples_ns: {copy_in, compute, copy_out: [ns]}, p50_ms: {...}, p99_ms: {...},
    #: boundaries: {stage: what it covers on this framework}}``, or ``{unavailable: why}``.
    stages: dict[str, Any] | None = None
    #: --profile ops: ``{iterations, source, ops: [{name, type, impl, time_ms, count}],
    #: total_ms, inference_ms}`` (time_ms: mean per profiled iteration), or ``{unavailable}``.
    #: Profiled iterations are separate from the timed ones.
    op_profile: dict[str, Any] | None = None
    #: --instances: ``{count, mode: separate|shared, rss_before_load_mb, rss_after_load_mb: [one
    #: per instance, loaded and its stream made], rss_one_running_mb, rss_running_mb,
    #: per_instance_mb, load_mb_per_instance}`` (measure/breakdowns.py defines the last two);
    #: latency and throughput are the record's own, measured with all instances running.
    instances: dict[str, Any] | None = None
    #: --shapes: ``{mode: fixed|dynamic, pixels, change: {from: [inputs], resize_ms, first_ms}}``
    #: (change: dynamic cells only, the first inference after resizing from another shape).
    shape: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"record status {self.status!r} is not one of {STATUSES}")

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values: a NaN or infinite float (an output check of NaN outputs,
        a summary of them) becomes None, so the store can always write the record."""
        return _finite(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """Tolerant of fields added by newer versions (they are dropped); a field of the wrong
        type is a ValueError, so readers never meet ``"latency_ms": "fast"`` downstream."""
        if not isinstance(data, dict):
            raise ValueError(f"a record is a JSON object, not a JSON {json_kind(data)}")
        hints, defaulted = _field_types(), _defaulted_fields()
        values = {}
        for name, value in data.items():
            if name not in hints:
                continue
            if not _matches(value, hints[name]):
                if value is None and name in defaulted:
                    continue  # null where an older writer left a field out: its default
                raise ValueError(f"field {name} holds a JSON {json_kind(value)}")
            values[name] = value
        return cls(**values)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


@functools.cache
def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(Record)


@functools.cache
def _defaulted_fields() -> frozenset[str]:
    return frozenset(
        f.name
        for f in fields(Record)
        if f.default is not MISSING or f.default_factory is not MISSING
    )


def _matches(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON fits a field's annotation (containers one level deep:
    a list of numbers holds numbers, a dict of numbers holds numbers or null)."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        item = typing.get_args(hint)[1]
        return isinstance(value, dict) and all(
            v is None or _matches(v, item) for v in value.values()
        )
    return isinstance(value, hint)
