"""The nightly gate of a plan: each of tonight's cells against its own recent nights.

A plan's run used to be compared with its last good run alone, on the within-run samples.
Between nights a real device moves more than inside one run (thermal state, background
services), so that test cries wolf, and a drift of 1% a night is never significant between two
neighbours. The history gate weighs tonight against the cell's recent good nights of the same
plan, in the same clock regime, since the last accepted run (``edgebench accept``):

- **outside the recent nights**: tonight is further from their median than both the plan's
  ``min_effect`` and ``OUTLIER_SIGMAS`` robust standard deviations of those nights;
- **a change point up to tonight**: E-Divisive means finds a step in the recent nights plus
  tonight, of at least ``min_effect`` (so a drift shows once it has added up).

Either, in the worse direction, is a regression; in the better one, an improvement. A cell
with fewer than ``MIN_NIGHTS`` such nights is compared with the last good run as before, and a
cell whose clock regime changed since its last night is not comparable, saying what changed.
The verdicts are ``analysis.compare.CellVerdict``s, so the text table and JUnit XML are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from edgebench.analysis.change_points import MIN_SEGMENT
from edgebench.analysis.compare import CellVerdict
from edgebench.analysis.metrics import Metric, judged_metric
from edgebench.analysis.night_summary import CellSummary
from edgebench.analysis.nightly import (
    Night,
    RunInfo,
    Step,
    night_of,
    regime_change,
    same_regime,
    steps_in,
)

#: Fewer recent nights than this and the gate falls back to the last good run.
MIN_NIGHTS = MIN_SEGMENT
#: How many robust standard deviations of the recent nights tonight may stray.
OUTLIER_SIGMAS = 4.0
#: How a not-comparable reason starts when the cell's clock regime changed since its last night.
REGIME_CHANGED = "clock regime changed"


@dataclass(frozen=True)
class GateSettings:
    metric: str = "p50"
    min_effect: float = 0.05
    history_nights: int = 30


def recent_rows(
    rows: Iterable[tuple[RunInfo, CellSummary]], plan: str | None, tonight_run: str, limit: int
) -> dict[str, list[tuple[RunInfo, CellSummary]]]:
    """Per cell id, its rows in the good runs of ``plan`` before tonight since the plan's last
    accepted run, oldest first, at most ``limit`` of them (a cell's own nights, not the best
    of a series)."""
    runs: dict[str, RunInfo] = {}
    cells: dict[str, list[tuple[RunInfo, CellSummary]]] = {}
    for info, row in rows:
        if info.plan != plan or info.run_id == tonight_run or not info.good:
            continue
        runs[info.run_id] = info
        cells.setdefault(row.cell_id, []).append((info, row))
    accepted = [info for info in runs.values() if info.accepted]
    since = max((i.created_at, i.run_id) for i in accepted) if accepted else ("", "")
    out = {}
    for cell_id, found in cells.items():
        found = sorted(
            (pair for pair in found if (pair[0].created_at, pair[0].run_id) >= since),
            key=lambda pair: (pair[0].created_at, pair[0].run_id),
        )
        out[cell_id] = found[-limit:]
    return out


def gate_cells(
    tonight: list[tuple[RunInfo, CellSummary]],
    history: dict[str, list[tuple[RunInfo, CellSummary]]],
    settings: GateSettings,
) -> tuple[list[CellVerdict], list[str]]:
    """Verdicts for tonight's cells that have enough history, and the cell ids that have not
    (the caller compares those with the last good run)."""
    verdicts, too_short = [], []
    for info, row in tonight:
        # A generative cell's engine is its framework (it runs on the CPU only).
        tracked = judged_metric(settings.metric, [row.engine])
        # Another variant of the cell id (a generative cell's other tests) is another series.
        past = [
            night_of(i, r, tracked.name)
            for i, r in history.get(row.cell_id, [])
            if r.variant == row.variant
        ]
        now = night_of(info, row, tracked.name)
        verdict = _judge(now, past, settings, tracked)
        if verdict is None:
            too_short.append(row.cell_id)
        else:
            verdicts.append(verdict)
    return verdicts, too_short


def _judge(
    now: Night, past: list[Night], settings: GateSettings, tracked: Metric
) -> CellVerdict | None:
    metric, lower_is_better = tracked, tracked.lower_is_better
    points = [n for n in past if n.trend_point]
    last = points[-1] if points else None
    if now.correctness_only:
        why = f"measured on the {now.correctness_only}: correctness only"
        return _verdict(now, None, "not_comparable", why, metric)
    if now.value is None:
        if not points:
            return None
        return _verdict(now, last, "regressed", f"tonight's cell is {now.status}", metric)
    same = [n for n in points if same_regime(n.regime, now.regime)]
    if len(same) < MIN_NIGHTS and last is not None and not same_regime(last.regime, now.regime):
        reason = f"{REGIME_CHANGED}: {regime_change(last.regime, now.regime)}"
        return _verdict(now, last, "not_comparable", reason, metric)
    points = same  # nights in another clock regime never weigh on tonight
    if len(points) < MIN_NIGHTS:
        return None
    values = np.array([n.value for n in points], dtype=np.float64)
    median = float(np.median(values))
    sigma = 1.4826 * float(np.median(np.abs(values - median)))
    band = max(settings.min_effect * abs(median), OUTLIER_SIGMAS * sigma)
    ratio = now.value / median if median else None
    step = _latest_step(points, now, lower_is_better)
    worse = now.value > median + band if lower_is_better else now.value < median - band
    better = now.value < median - band if lower_is_better else now.value > median + band
    base = f"median {median:.4g} of {len(points)} nights"
    if step is not None and abs(step.change_point.change) >= settings.min_effect:
        word = "regressed" if step.regression else "improved"
        reason = f"change point: {step.describe()}"
        return _verdict(now, None, word, reason, metric, base=median, ratio=ratio, step=step)
    if worse or better:
        reason = (
            f"outside the recent nights: {now.value:.4g} vs {base} "
            f"(band +-{band:.3g}: {OUTLIER_SIGMAS:g} sigma or {settings.min_effect:.0%})"
        )
        word = "regressed" if worse else "improved"
        return _verdict(now, None, word, reason, metric, base=median, ratio=ratio)
    reason = f"within the recent nights ({base}, band +-{band:.3g})"
    return _verdict(now, None, "unchanged", reason, metric, base=median, ratio=ratio)


def _latest_step(points: list[Night], now: Night, lower_is_better: bool) -> Step | None:
    """The latest change point of the recent nights plus tonight: the level tonight is on.

    Failed nights never join the history, so a regression found here keeps failing the gate,
    night after night, until it is fixed or accepted (``edgebench accept``)."""
    steps = steps_in([*points, now], lower_is_better)
    return steps[-1] if steps else None


def _verdict(
    now: Night,
    last: Night | None,
    word: str,
    reason: str,
    metric: Metric,
    *,
    base: float | None = None,
    ratio: float | None = None,
    step: Step | None = None,
) -> CellVerdict:
    base = base if base is not None else (last.value if last is not None else None)
    latency = metric.unit == "ms" and metric.name == "p50"
    cp = step.change_point if step is not None else None
    return CellVerdict(
        cell_id=now.cell_id,
        verdict=word,
        base_p50_ms=base if latency else None,
        new_p50_ms=now.value if latency else None,
        ratio=ratio,
        ci_low=1 + cp.change_low if cp is not None else None,
        ci_high=1 + cp.change_high if cp is not None else None,
        p_value=cp.p_value if cp is not None else None,
        reason=reason,
        metric=metric.name,
        # A generative cell's energy is per decoded token: the verdict says mJ/tok.
        unit=metric.bare_unit,
        base_value=base,
        new_value=now.value,
    )
