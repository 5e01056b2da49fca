"""Each cell's nights across stored runs, the steps in them and what changed on those nights.

A cell's trend is one series of (device, model, engine, variant): the best ok cell of that
series in each run (the threads or cores a run swept are tuning), read from the results
index's rows (``night_summary.CellSummary``), never from the raw samples. Change points are
found by E-Divisive means (``analysis.change_points``) on the nights' values, each night
weighted by how noisy it was inside its run. Nights on an emulated CPU or a software
accelerator are kept on the chart but never enter the detection. A night in another clock
regime than the one before it is a step of its own kind: its ``changed`` says so.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from edgebench.analysis.change_points import ChangePoint, change_points, night_weights
from edgebench.analysis.history import _series_labels
from edgebench.analysis.index_schema import RunRow
from edgebench.analysis.metrics import get_metric
from edgebench.analysis.night_summary import CellSummary, best_cell, changed_facts
from edgebench.results.clock_regime import ClockRegime
from edgebench.results.store import ResultsStore
from edgebench.statuses import Status

#: The fact name under which a change of clock regime is reported.
CLOCK_REGIME = "clock_regime"
#: What changed is looked for this many nights either side of a change point's night too: a
#: step found one night early or late (noise moves the best split) still names its cause.
NEARBY_NIGHTS = 2


@dataclass(frozen=True)
class RunInfo:
    """What the nightly views need of a run's run.json."""

    run_id: str
    created_at: str
    plan: str | None = None
    #: Finished with no failed cell and no regression (what a plan's gate compares with).
    good: bool = False
    #: `edgebench accept` declared its level the new normal: the gate's history starts here.
    accepted: bool = False


@dataclass(frozen=True)
class CellKey:
    device: str
    model: str
    engine: str
    #: The variant's label (precision, streams, shape) where a cell has several; "" if not.
    series: str = ""

    def label(self) -> str:
        base = f"{self.device}/{self.model}/{self.engine}"
        return f"{base} {self.series}" if self.series else base


@dataclass
class Night:
    run_id: str
    created_at: str
    #: The metric of the series' best ok cell that night; None when none was ok.
    value: float | None
    #: The p99 latency of that cell (the band on the chart); None when not measured.
    p99: float | None
    spread: float | None
    status: str
    #: "emulated CPU" or "software device" for a night measured there; "" on a real chip.
    correctness_only: str
    regime: ClockRegime
    facts: dict[str, str] = field(default_factory=dict)
    cell_id: str = ""

    @property
    def trend_point(self) -> bool:
        """Whether the night enters the change-point detection."""
        return self.value is not None and not self.correctness_only


@dataclass
class Step:
    """A change point: ``night`` is the first at the new level, ``previous`` the last before."""

    night: Night
    previous: Night
    change_point: ChangePoint
    #: What differed between two neighbouring nights' facts at the step or within
    #: ``NEARBY_NIGHTS`` of it: name -> (before, after).
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The metric got worse (slower, more memory, less throughput).
    regression: bool = False
    #: Where a fact of ``changed`` changed, in nights from ``night`` (0: that night, -1: the
    #: night before); a fact missing here changed on ``night``.
    changed_offset: dict[str, int] = field(default_factory=dict)

    def when(self, name: str) -> str:
        """ "" for a fact that changed on the step's night, else "(1 night before)" and so on."""
        offset = self.changed_offset.get(name, 0)
        if offset == 0:
            return ""
        nights = f"{abs(offset)} night" + ("" if abs(offset) == 1 else "s")
        return f"({nights} {'before' if offset < 0 else 'after'})"

    def what_changed(self) -> str:
        if not self.changed:
            return "nothing edgebench records changed that night"
        return "; ".join(
            f"{name} {a} -> {b}" + (f" {self.when(name)}" if self.when(name) else "")
            for name, (a, b) in self.changed.items()
        )

    def describe(self) -> str:
        cp = self.change_point
        return (
            f"{'worse' if self.regression else 'better'} since {self.night.created_at[:10]} "
            f"(run {self.night.run_id}): {cp.before:.4g} -> {cp.after:.4g} ({cp.change:+.1%}, "
            f"95% CI {cp.change_low:+.1%} to {cp.change_high:+.1%}); {self.what_changed()}"
        )


@dataclass
class CellHistory:
    key: CellKey
    nights: list[Night]
    steps: list[Step] = field(default_factory=list)

    @property
    def latest(self) -> Night | None:
        return self.nights[-1] if self.nights else None


def run_rows(
    store: ResultsStore,
    device: str | None = None,
    model: str | None = None,
    engine: str | None = None,
) -> Iterator[tuple[RunInfo, CellSummary]]:
    """Every readable run's current records as index rows, oldest run first; only the given
    device, model and engine when named (an indexed query)."""
    from edgebench.analysis.results_index import ResultsIndex

    with ResultsIndex.open(store) as index:
        rows = index.cell_rows(device, model, engine)
    yield from with_run_info(rows)


def with_run_info(
    rows: Iterable[tuple[RunRow, CellSummary]],
) -> Iterator[tuple[RunInfo, CellSummary]]:
    """``ResultsIndex.cell_rows`` as (RunInfo, summary): one RunInfo per run."""
    infos: dict[str, RunInfo] = {}
    for run, summary in rows:
        info = infos.get(run.run_id)
        if info is None:
            info = infos[run.run_id] = RunInfo(
                run.run_id, run.created_at, run.plan, run.good, run.accepted
            )
        yield info, summary


def night_of(info: RunInfo, row: CellSummary, metric: str) -> Night:
    """``row`` as a night of ``metric`` (no value unless the cell was ok)."""
    return Night(
        run_id=info.run_id,
        created_at=info.created_at,
        value=row.values.get(metric) if row.status == Status.OK else None,
        p99=row.values.get("p99"),
        spread=row.spread,
        status=row.status,
        correctness_only=row.correctness_only,
        regime=row.regime,
        facts=row.facts,
        cell_id=row.cell_id,
    )


def nights_by_cell(
    rows: Iterable[tuple[RunInfo, CellSummary]], metric: str = "p50"
) -> dict[CellKey, list[Night]]:
    """Rows grouped into each series' nights, oldest first (a run gives a series one night)."""
    grouped: dict[tuple[str, str, str, tuple[str, ...]], dict[str, list[CellSummary]]] = {}
    runs: dict[str, RunInfo] = {}
    for info, row in rows:
        runs[info.run_id] = info
        key = (row.device, row.model, row.engine, row.variant)
        grouped.setdefault(key, {}).setdefault(info.run_id, []).append(row)
    out: dict[CellKey, list[Night]] = {}
    by_cell: dict[tuple[str, str, str], list[tuple[str, ...]]] = {}
    for device, model, engine, variant in grouped:
        by_cell.setdefault((device, model, engine), []).append(variant)
    for (device, model, engine), variants in by_cell.items():
        labels = _series_labels(variants)
        for variant in variants:
            nights = []
            per_run = grouped[(device, model, engine, variant)]
            for run_id, cells in per_run.items():
                info = runs[run_id]
                best = best_cell(cells, metric)
                nights.append(night_of(info, best or cells[0], metric))
            nights.sort(key=lambda n: (n.created_at, n.run_id))
            out[CellKey(device, model, engine, labels[variant])] = nights
    return out


@functools.lru_cache(maxsize=1024)
def same_regime(before: ClockRegime, after: ClockRegime) -> bool:
    """Whether two clock regimes are one: nothing differs that both know (an older record
    lacks the parts recorded since, and that is no change)."""
    return before == after or not before.differences(after)


def regime_change(before: ClockRegime, after: ClockRegime) -> str:
    """What differs between two clock regimes, in words (``governor schedutil ->
    performance``), or their labels where the words find nothing."""
    words = before.differences(after)
    return "; ".join(words) or f"{before.label() or '?'} -> {after.label() or '?'}"


def steps_in(nights: list[Night], lower_is_better: bool = True) -> list[Step]:
    """The change points of a series' trend nights, each with the nights around it and what
    changed between them (a change of clock regime included)."""
    points = [n for n in nights if n.trend_point]
    if len(points) < 2:
        return []
    values = [n.value for n in points]
    weights = night_weights([n.spread for n in points])
    steps = []
    for cp in change_points(values, weights=weights):  # type: ignore[arg-type]  # no None left in values
        changed, offsets = _changes_near(points, cp.index)
        worse = cp.change > 0 if lower_is_better else cp.change < 0
        steps.append(Step(points[cp.index], points[cp.index - 1], cp, changed, worse, offsets))
    return steps


def _changes_near(
    points: list[Night], index: int
) -> tuple[dict[str, tuple[str, str]], dict[str, int]]:
    """The facts that changed between neighbouring nights at ``index`` or within
    ``NEARBY_NIGHTS`` of it, the step's own night first, then the nearest; and the offset of
    each one that changed on another night."""
    nights = range(max(1, index - NEARBY_NIGHTS), min(len(points), index + NEARBY_NIGHTS + 1))
    changed: dict[str, tuple[str, str]] = {}
    offsets: dict[str, int] = {}
    for night in sorted(nights, key=lambda n: (abs(n - index), n)):
        before, after = points[night - 1], points[night]
        found = changed_facts(before.facts, after.facts)
        if not same_regime(before.regime, after.regime):
            found[CLOCK_REGIME] = (before.regime.label() or "?", after.regime.label() or "?")
        for name, pair in found.items():
            if name not in changed:
                changed[name] = pair
                if night != index:
                    offsets[name] = night - index
    return changed, offsets


def cell_histories(
    store: ResultsStore,
    metric: str = "p50",
    *,
    device: str | None = None,
    model: str | None = None,
    engine: str | None = None,
    rows: Iterable[tuple[RunInfo, CellSummary]] | None = None,
) -> list[CellHistory]:
    """Every series' history with its steps, in device, model, engine, series order. ``rows``
    (default: the store's) may be given by a caller that already read them."""
    wanted = (
        (info, row)
        for info, row in (run_rows(store, device, model, engine) if rows is None else rows)
        if (device is None or row.device == device)
        and (model is None or row.model == model)
        and (engine is None or row.engine == engine)
    )
    lower_is_better = get_metric(metric).lower_is_better
    histories = [
        CellHistory(key, nights, steps_in(nights, lower_is_better))
        for key, nights in nights_by_cell(wanted, metric).items()
    ]
    return sorted(histories, key=lambda h: (h.key.device, h.key.model, h.key.engine, h.key.series))
