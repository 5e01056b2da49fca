"""One stored record boiled down to what the nightly views need: a row of the results index.

History, the nightly gate, change points and the dashboard never need a record's raw samples,
only each metric's value, how noisy the night was, the clock regime it ran in and the facts
that can explain a step (versions, model hash, OS build, power mode). ``summarize`` computes
them once, when a record is indexed; ``SUMMARY_VERSION`` is part of the index's schema, so a
change here rebuilds every index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgebench.analysis.compare import generation_settings
from edgebench.analysis.metrics import METRICS
from edgebench.analysis.ranking import correctness_only
from edgebench.results.clock_regime import ClockRegime, clock_regime
from edgebench.results.records import Record
from edgebench.statuses import Status

#: Bump when a field's meaning or computation changes: stored indexes are then rebuilt.
SUMMARY_VERSION = 3

#: 1.2533 sigma / sqrt(n) is the standard error of a normal sample's median; IQR / 1.349 is
#: a sigma that a few outliers do not move.
_MEDIAN_SE = 1.2533 / 1.349


@dataclass
class CellSummary:
    """A record's row in the results index."""

    run_id: str
    cell_id: str
    device: str
    model: str
    #: The matrix column: framework, backend, CUDA Graphs mark (``Record.engine``).
    engine: str
    #: What the cell measures beyond device/model/engine (precision, streams or instances,
    #: input shape); each variant is a trend of its own. A tuple of strings.
    variant: tuple[str, ...]
    status: str
    #: Why the cell is for correctness only (``ranking.correctness_only``: "emulated CPU",
    #: "software device"); "" for a real chip. Such a cell is no trend point.
    correctness_only: str
    #: Every metric of ``analysis.metrics.METRICS`` that the record has.
    values: dict[str, float] = field(default_factory=dict)
    #: The relative standard error of the night's median latency (0.01 = 1%), from its raw
    #: samples; None without samples. Nights that were noisier weigh less in a trend.
    spread: float | None = None
    #: The clock regime the cell ran in (``results.clock_regime``; empty where nothing was known).
    regime: ClockRegime = field(default_factory=ClockRegime)
    #: Facts that can explain a step between two nights, by name (``framework_version``,
    #: ``model_sha256``, ``os_version``, ...): only the ones the record knows.
    facts: dict[str, str] = field(default_factory=dict)


def _shape_label(record: Record) -> str:
    shapes = [i.get("shape") for i in record.inputs or [] if isinstance(i, dict)]
    return "+".join("x".join(str(d) for d in s) for s in shapes if isinstance(s, list))


def variant_of(record: Record) -> tuple[str, ...]:
    """What a cell measures beyond device, model and framework. Threads and cores are tuning
    (the best of them is the run's figure); precision, streams, instances, input shape and a
    generative cell's tests (prompt lengths, generated tokens, context depth) change what is
    measured, so each gets a trend of its own."""
    parts = [record.precision]
    instances = record.instances
    if instances is not None and instances.count is not None and instances.count > 1:
        parts.append(f"i{instances.count}-{instances.mode}")
    elif record.concurrency > 1:
        parts.append(f"s{record.concurrency}")
    shape_mode = record.shape.mode if record.shape is not None else None
    if record.generation is not None:
        parts.append(generation_settings(record))
    parts.append(_shape_label(record) + (f"-{shape_mode}" if shape_mode else ""))
    return tuple(parts)


def summarize(record: Record, run_meta: dict[str, Any] | None = None) -> CellSummary:
    """The index row of ``record`` (``run_meta``: its run's run.json, for run-wide facts)."""
    values = {}
    for name, metric in METRICS.items():
        value = metric.value(record)
        if value is not None and math.isfinite(value):
            values[name] = float(value)
    return CellSummary(
        run_id=record.run_id,
        cell_id=record.cell_id,
        device=record.device,
        model=record.model,
        engine=record.engine,
        variant=variant_of(record),
        status=record.status,
        correctness_only=correctness_only(record),
        values=values,
        spread=median_spread(record.samples_ns),
        regime=regime_of(record),
        facts=night_facts(record, run_meta or {}),
    )


def best_cell(rows: list[CellSummary], metric: str) -> CellSummary | None:
    """The best ok row of ``rows`` by ``metric`` (lowest, or highest where higher is better),
    None when no ok row has it: a run's figure for a series whose threads or cores it swept."""
    ok = [r for r in rows if r.status == Status.OK and metric in r.values]
    if not ok:
        return None
    pick = min if METRICS[metric].lower_is_better else max
    return pick(ok, key=lambda r: r.values[metric])


def median_spread(samples_ns: list[int]) -> float | None:
    """The relative standard error of the median of ``samples_ns``, or None for fewer than 5."""
    if len(samples_ns) < 5:
        return None
    samples = np.asarray(samples_ns, dtype=np.float64)
    median = float(np.median(samples))
    if median <= 0:
        return None
    q1, q3 = np.percentile(samples, [25, 75])
    return float(_MEDIAN_SE * (q3 - q1) / math.sqrt(samples.size) / median)


def regime_of(record: Record) -> ClockRegime:
    """The record's clock regime (empty when the record says nothing about its clocks)."""
    return clock_regime(record)


def _text(value: Any) -> str | None:
    if value is None or value == "" or value == [] or value == {}:
        return None
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def night_facts(record: Record, run_meta: dict[str, Any]) -> dict[str, str]:
    """What the record knows of its software, model and device state, as strings by name.

    Two nights whose facts differ name a cause for a step between them ("what changed").
    """
    info = record.device_info or {}
    nvidia = record.nvidia
    artifact = record.artifact
    facts = {
        "edgebench_version": record.edgebench_version or run_meta.get("edgebench_version"),
        "git_sha": run_meta.get("git_sha"),
        "framework_version": record.framework_version,
        "model_sha256": record.model_sha256,
        "artifact_converter": (
            f"{artifact.converter} {artifact.converter_version or ''}".strip()
            if artifact is not None and artifact.converter
            else None
        ),
        "os_version": info.get("os_version"),
        "os_build": info.get("build_fingerprint") or info.get("os_build"),
        "kernel": info.get("kernel"),
        "device_model": info.get("model"),
        "soc": info.get("soc"),
        "runner": info.get("runner"),
        "governors": info.get("governors"),
        "power_mode": nvidia.power_mode if nvidia is not None else None,
        "clocks_locked": nvidia.clocks_locked if nvidia is not None else None,
        "gpu_driver": (
            (nvidia.driver if nvidia is not None else None)
            or (record.accelerator.driver if record.accelerator is not None else None)
        ),
        "threads": record.threads,
        "cores": record.cores,
    }
    out = {}
    for name, value in facts.items():
        text = _text(value)
        if text is not None:
            out[name] = text[:200]
    return out


def changed_facts(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The facts that differ between two nights: name -> (before, after); a fact one side does
    not know is "?" there."""
    names = sorted(set(before) | set(after))
    return {
        name: (before.get(name, "?"), after.get(name, "?"))
        for name in names
        if before.get(name) != after.get(name)
    }
