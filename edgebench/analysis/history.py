"""Across stored runs: an index of runs and one cell's metric over time.

The text table and the SVG chart of these are drawn in reporting.text and reporting.charts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.analysis.metrics import get_metric
from edgebench.results.store import ResultsStore, RunDir
from edgebench.statuses import Status


@dataclass
class RunSummary:
    run_id: str
    created_at: str | None
    git_sha: str | None
    lab_path: str | None
    plan: str | None
    devices: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    n_records: int = 0
    status: str | None = None


@dataclass
class HistoryPoint:
    run_id: str
    created_at: str | None
    #: The metric of the best ok cell in that run; None when no cell was ok.
    value: float | None
    status: str
    cell_id: str | None = None
    #: The value was measured on an emulated CPU: for correctness only, not a trend point.
    emulated: bool = False


def _plan_name(plan: Any) -> str | None:
    if plan is None:
        return None
    if isinstance(plan, dict):
        name = plan.get("name") or plan.get("path")
        return None if name is None else str(name)
    return str(plan)


def _runs_in_time_order(store: ResultsStore) -> list[tuple[RunDir, dict[str, Any]]]:
    """Runs with their metadata, by ``created_at`` then run id (ids created in the same second
    sort by their random suffix, not by time)."""
    runs = [(run, run.metadata()) for run in store.runs()]
    return sorted(runs, key=lambda rm: (str(rm[1].get("created_at") or ""), rm[0].run_id))


def build_index(store: ResultsStore) -> list[RunSummary]:
    """One summary per stored run, oldest first."""
    out = []
    for run, meta in _runs_in_time_order(store):
        records = run.records()
        devices = sorted({r.device for r in records})
        if not devices and isinstance(meta.get("devices"), dict):
            devices = sorted(meta["devices"])
        models = sorted({r.model for r in records})
        if not models and isinstance(meta.get("models"), dict):
            models = sorted(meta["models"])
        lab = meta.get("lab_path") or meta.get("lab")
        out.append(
            RunSummary(
                run_id=run.run_id,
                created_at=meta.get("created_at"),
                git_sha=meta.get("git_sha"),
                lab_path=None if lab is None else str(lab),
                plan=_plan_name(meta.get("plan")),
                devices=devices,
                models=models,
                n_records=len(records),
                status=meta.get("status"),
            )
        )
    return out


def history(
    store: ResultsStore, device: str, model: str, framework: str, metric: str = "p50"
) -> list[HistoryPoint]:
    """The metric for device/model/framework in every run that has such a cell, oldest first.

    When a run swept several cells (threads, cores, ...) the best ok one is used; a run with
    cells but none ok gives a point with ``value=None`` and the first cell's status. A value
    measured on an emulated CPU is kept but flagged (``emulated``): it is no trend point.
    """
    tracked = get_metric(metric)
    points = []
    for run, meta in _runs_in_time_order(store):
        cells = [
            r
            for r in run.records()
            if r.device == device and r.model == model and r.framework == framework
        ]
        if not cells:
            continue
        created = meta.get("created_at")
        ok = tracked.ok_values(cells)
        if ok:
            value, best = tracked.best(ok)
            points.append(
                HistoryPoint(run.run_id, created, value, Status.OK, best.cell_id, best.emulated)
            )
        else:
            points.append(
                HistoryPoint(run.run_id, created, None, cells[0].status, cells[0].cell_id)
            )
    return points
