"""Across stored runs: an index of runs and one cell's metric over time.

A run whose files cannot be read, or whose run.json holds a field of the wrong type, is left
out with one warning naming the file, so one damaged run never hides the others.
The text table and the SVG chart of these are drawn in reporting.text and reporting.charts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from edgebench.analysis.index_schema import RunRow
from edgebench.analysis.metrics import get_metric
from edgebench.analysis.night_summary import CellSummary, best_cell
from edgebench.analysis.results_index import ResultsIndex
from edgebench.results.store import ResultsStore
from edgebench.statuses import Status

log = logging.getLogger(__name__)


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
    #: "emulated CPU" or "software device" when the value was measured there: for correctness
    #: only, not a trend point; "" on a real chip.
    correctness_only: str = ""
    #: Which trend the point belongs to: the precision, and the streams, instances or input
    #: shape when those differ between the cells (points of different series never compare).
    series: str = ""


def build_index(store: ResultsStore) -> list[RunSummary]:
    """One summary per stored run, oldest first, from the results index; a run without
    run.json has the status ``no run.json``."""
    with ResultsIndex.open(store) as index:
        runs = index.readable_runs()
    return [
        RunSummary(
            run_id=run.run_id,
            created_at=run.meta_created_at,
            git_sha=run.git_sha,
            lab_path=run.lab,
            plan=run.plan,
            devices=run.devices,
            models=run.models,
            n_records=run.n_records,
            status=run.status if run.has_metadata else "no run.json",
        )
        for run in runs
    ]


def _series_labels(keys: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """A label per series: its precision, plus the other parts only where series differ in
    them (the input shape of a model that was always fed the same one says nothing)."""
    shapes = {k[-1] for k in keys}
    return {k: " ".join(p for p in (k if len(shapes) > 1 else k[:-1]) if p) for k in keys}


def history(
    store: ResultsStore,
    device: str,
    model: str,
    framework: str,
    metric: str = "p50",
    cells_seen: set[tuple[str, str, str]] | None = None,
) -> list[HistoryPoint]:
    """The metric for device/model/framework in every run that has such a cell, oldest first,
    one trend (``series``) per precision and per other setting that changes what is measured.

    When a run swept several cells of one series (threads, cores) the best ok one is used; a
    run with cells but none ok gives a point with ``value=None`` and the first cell's status. A
    value measured on an emulated CPU or a software device is kept but flagged
    (``correctness_only``): it is no trend point.
    ``cells_seen``, when given, receives every (device, model, framework) of the runs read.
    """
    get_metric(metric)  # an unknown metric is refused here, by name
    with ResultsIndex.open(store) as index:
        rows = index.cell_rows(device, model, framework)
        if cells_seen is not None:
            cells_seen.update(index.cells_seen())
    series: dict[tuple[str, tuple[str, ...]], tuple[RunRow, list[CellSummary]]] = {}
    for run, cell in rows:
        series.setdefault((run.run_id, cell.variant), (run, []))[1].append(cell)
    points: list[tuple[tuple[str, ...], HistoryPoint]] = []
    for (_, key), (run, cells) in series.items():
        best = best_cell(cells, metric)
        if best is not None:
            point = HistoryPoint(
                run.run_id,
                run.meta_created_at,
                best.values[metric],
                Status.OK,
                best.cell_id,
                best.correctness_only,
            )
        else:
            point = HistoryPoint(
                run.run_id, run.meta_created_at, None, cells[0].status, cells[0].cell_id
            )
        points.append((key, point))
    labels = _series_labels(list(dict.fromkeys(key for key, _ in points)))
    for key, point in points:
        point.series = labels[key]
    return [point for _, point in points]
