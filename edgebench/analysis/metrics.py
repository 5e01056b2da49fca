"""The metrics registry: every figure edgebench can show, compare or rank frameworks by.

One entry per metric: its name on the command line and in plan files, its label and unit,
whether lower is better, the quantile it takes from raw samples (latency metrics), and how it
is read from a stored record. The matrix, the reports, compare, recommend, history, the command
line and plan files all look metrics up here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from edgebench.analysis.statistics import sample_statistic
from edgebench.frameworks import workload_of
from edgebench.results.generation_part import Generation
from edgebench.results.records import Record
from edgebench.statuses import Status


def finite_or_none(value: object) -> float | None:
    """A stored figure as a float, or None for null, NaN, ±inf or a non-number: a damaged or
    hand-edited record's NaN is no figure, never a value to rank or compare."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _finite_only(read: Callable[[Record], float | None]) -> Callable[[Record], float | None]:
    return lambda record: finite_or_none(read(record))


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    #: The unit next to the label in a heading: "energy per inference (mJ)".
    unit: str
    lower_is_better: bool
    #: Reads the stored value from a record (None when the record has none, or a NaN or an
    #: infinity). Tables and reports show this; compare, recommend and history use ``value``.
    stored: Callable[[Record], float | None]
    #: Latency metrics: the quantile of the raw samples (None: the mean). Others: not sampled.
    quantile: float | None = None
    #: Computed from raw per-iteration samples (so compare can test significance on them).
    sampled: bool = False
    #: The unit after a number shown without the label (energy: "mJ/inf"); default ``unit``.
    bare_unit: str = ""
    #: How to get the figure when measured cells lack it (said when a ranking needs it).
    how_to_get: str = ""

    def __post_init__(self) -> None:
        if not self.bare_unit:
            object.__setattr__(self, "bare_unit", self.unit)
        object.__setattr__(self, "stored", _finite_only(self.stored))

    def value(self, record: Record) -> float | None:
        """The stored figure, recomputed from the raw samples when the record lacks it."""
        stored = self.stored(record)
        if stored is not None:
            return float(stored)
        if self.sampled and record.samples_ns:
            return float(sample_statistic(self.samples_ms(record), self.quantile))
        return None

    def ok_values(self, records: Iterable[Record]) -> list[tuple[float, Record]]:
        """``(value, record)`` for each ok record that has a value for this metric."""
        return [
            (v, r) for r in records if r.status == Status.OK and (v := self.value(r)) is not None
        ]

    def best(self, candidates: Iterable[tuple[float, Record]]) -> tuple[float, Record]:
        """The best of ``ok_values`` pairs: the lowest value, or the highest (throughput)."""
        return (min if self.lower_is_better else max)(candidates, key=lambda vr: vr[0])

    @staticmethod
    def samples_ms(record: Record) -> np.ndarray:
        """The raw per-iteration samples in milliseconds."""
        return np.asarray(record.samples_ns, dtype=np.float64) / 1e6


def _latency(key: str) -> Callable[[Record], float | None]:
    return lambda r: (r.latency_ms or {}).get(key)


def _latency_metric(key: str, quantile: float | None, label: str) -> Metric:
    return Metric(key, label, "ms", True, _latency(key), quantile, sampled=True)


def _generative_metric(
    name: str,
    label: str,
    unit: str,
    lower_is_better: bool,
    read: Callable[[Generation], float | None],
) -> Metric:
    """A figure of a generative record's ``generation`` part (None for other records)."""
    return Metric(
        name,
        label,
        unit,
        lower_is_better,
        stored=lambda r: read(r.generation) if r.generation else None,
        how_to_get="measure a generative model (--models llm-tiny or a .gguf file)",
    )


METRICS: dict[str, Metric] = {
    "p50": _latency_metric("p50", 0.50, "p50 latency"),
    "p90": _latency_metric("p90", 0.90, "p90 latency"),
    "p95": _latency_metric("p95", 0.95, "p95 latency"),
    "p99": _latency_metric("p99", 0.99, "p99 latency"),
    "mean": _latency_metric("mean", None, "mean latency"),
    "throughput": Metric("throughput", "throughput", "inf/s", False, lambda r: r.throughput_ips),
    "memory": Metric("memory", "peak RSS", "MB", True, lambda r: r.peak_rss_mb),
    "energy": Metric(
        "energy",
        "energy per inference",
        "mJ",
        True,
        lambda r: r.energy_mj_per_inf,
        bare_unit="mJ/inf",
        how_to_get="measure on a device with a readable energy source (its profile's "
        "[energy] source or --energy-source; see docs/energy.md)",
    ),
    # Generative cells (records with a ``generation`` part; docs/generative.md). Their
    # latency metrics above are per generated token, from the decode test's raw samples.
    "decode": _generative_metric(
        "decode", "decode speed", "tok/s", False, lambda g: g.decode_tokens_per_s
    ),
    "prefill": _generative_metric(
        "prefill",
        "prefill speed (longest prompt)",
        "tok/s",
        False,
        lambda g: g.prefill_tokens_per_s(),
    ),
    "ttft": _generative_metric(
        "ttft", "time to first token (longest prompt)", "ms", True, lambda g: g.ttft_p50_ms()
    ),
}

#: A generative record's energy per inference is its energy per decoded token
#: (docs/generative.md): so its tables, heatmaps and progress line name it.
ENERGY_PER_TOKEN = replace(METRICS["energy"], label="energy per decoded token", bare_unit="mJ/tok")

#: What a generative model's matrix shows when the run asked for no metric.
GENERATIVE_DEFAULT_METRIC = "decode"

#: Metrics a regression can be judged on (all of them: latency ones on the raw samples).
REGRESSION_METRICS = tuple(METRICS)
#: Metrics recommend ranks by; its latency budget is checked on the latency ones.
RECOMMEND_METRICS = ("p50", "p99", "throughput", "energy", "memory", "decode", "prefill", "ttft")


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; one of {', '.join(METRICS)}") from None


def judged_metric(name: str, frameworks: Iterable[str]) -> Metric:
    """The metric ``name`` means for cells of ``frameworks``: a generative cell's throughput is
    its decode speed (the same figure, counted in generated tokens), so ``--metric throughput``
    on generative records is judged, ranked and labelled as ``decode`` (tok/s, higher is
    better) by compare, recommend, history and the nightly gate alike; its energy is per
    decoded token (``ENERGY_PER_TOKEN``: the same name and figure, labelled mJ/tok)."""
    generative = any(workload_of(f) == "generative" for f in frameworks)
    if name == "throughput" and generative:
        return METRICS[GENERATIVE_DEFAULT_METRIC]
    if name == "energy" and generative:
        return ENERGY_PER_TOKEN
    return get_metric(name)


def energy_metric(framework: str) -> Metric:
    """The energy metric as a cell of ``framework`` means it: per decoded token for a
    generative runtime (``ENERGY_PER_TOKEN``), per inference for the others."""
    return ENERGY_PER_TOKEN if workload_of(framework) == "generative" else METRICS["energy"]


def metric_value(record: Record, name: str) -> float | None:
    """One number for a record: latency metrics in ms, others in their own unit."""
    return get_metric(name).value(record)
