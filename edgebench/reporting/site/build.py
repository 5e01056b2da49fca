"""Build the dashboard site from the results store: ``publish_site``.

The nightly series of every cell come from ``analysis.nightly.cell_histories`` (values, p99,
change points and what changed); the pages are drawn by ``cell_pages`` and ``run_pages``; the
``writer`` holds the folder's lock and writes only what changed. Each night's full HTML report
(``reporting.report.write_report``) is written once per run, again only when the run's records
file changed.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from edgebench.analysis.metrics import Metric, get_metric
from edgebench.errors import UserError
from edgebench.reporting.report import write_report
from edgebench.reporting.site.cell_pages import cell_page, index_page
from edgebench.reporting.site.layout import SiteCell, report_page, run_page
from edgebench.reporting.site.run_pages import (
    SiteRun,
    regressions_page,
    run_page_html,
    runs_page,
)
from edgebench.reporting.site.writer import Progress, SiteWriter
from edgebench.results.store import ResultsStore, RunDir

if TYPE_CHECKING:
    from edgebench.analysis.nightly import CellHistory

log = logging.getLogger(__name__)

#: The regressions page's default window: the newest this many nights.
REGRESSION_NIGHTS = 14


@dataclass
class PublishSummary:
    out: Path
    written: int
    unchanged: int
    removed: int
    size: int
    cells: int
    runs: int
    seconds: float
    #: Of ``seconds``, the time spent reading the nights and finding their change points.
    read_seconds: float

    def line(self) -> str:
        removed = f", {self.removed} removed" if self.removed else ""
        return (
            f"{self.written} pages written, {self.unchanged} unchanged{removed}; "
            f"{self.cells} cell series over {self.runs} nights; site {self.size / 1e6:.1f} MB "
            f"in {self.out} ({self.seconds:.1f} s, {self.read_seconds:.1f} s of it reading the "
            "nights)"
        )


def default_since(runs: Sequence[SiteRun], nights: int = REGRESSION_NIGHTS) -> str:
    """The start of the newest ``nights`` nights (their runs' creation times)."""
    times = sorted({r.created_at for r in runs})
    return times[-nights] if len(times) >= nights else (times[0] if times else "")


def site_runs(cells: Sequence[SiteCell]) -> dict[str, SiteRun]:
    """Every night of every cell, by run id."""
    runs: dict[str, SiteRun] = {}
    for cell in cells:
        for night in cell.history.nights:
            run = runs.setdefault(night.run_id, SiteRun(night.run_id, night.created_at or ""))
            run.cells.append((cell, night))
        for step in cell.history.steps:
            run = runs.setdefault(
                step.night.run_id, SiteRun(step.night.run_id, step.night.created_at or "")
            )
            run.steps.append((cell, step))
    return runs


def _write_reports(
    store: ResultsStore, runs: dict[str, SiteRun], writer: SiteWriter, stream: TextIO
) -> None:
    """Each run's full HTML report, written once and again only when its records changed."""
    folders = {r.run_id: r for r in store.runs()}
    progress = Progress(len(runs), stream)
    for run_id, run in sorted(runs.items(), key=lambda kv: (kv[1].created_at, kv[0])):
        progress.tick("run reports")
        folder = folders.get(run_id)
        if folder is None:
            continue
        relative = report_page(run_id)
        stamp = _stamp(folder)
        if writer.report_current(run_id, relative, stamp):
            run.has_report = True
            continue
        try:
            (made,) = write_report(folder, ["html"], writer.scratch())
        except UserError as exc:
            log.warning("warning: no report for run %s: %s", run_id, exc)
            continue
        writer.report(run_id, relative, stamp, made)
        run.has_report = True


def _stamp(folder: RunDir) -> str:
    """What a run's report was made from: its files' sizes and modification times."""
    parts = []
    for path in (folder.records_path, folder.metadata_path):
        try:
            info = path.stat()
        except OSError:
            parts.append("-")
            continue
        parts.append(f"{info.st_size}:{info.st_mtime_ns}")
    return "/".join(parts)


def build_pages(
    writer: SiteWriter,
    histories: Sequence[CellHistory],
    metric: Metric,
    since: str | None,
    store: ResultsStore | None = None,
    stream: TextIO = sys.stderr,
) -> tuple[list[SiteCell], dict[str, SiteRun]]:
    """Write every page of the site for ``histories`` (and the run reports, given the store)."""
    cells = [SiteCell(h) for h in histories]
    runs = site_runs(cells)
    if store is not None:
        _write_reports(store, runs, writer, stream)
    newest = max((r.created_at for r in runs.values()), default="")
    writer.page("index.html", index_page(cells, metric, newest[:10] or "none"))
    start = since or default_since(list(runs.values()))
    window = (
        f"the nights since {since}"
        if since
        else f"the newest {REGRESSION_NIGHTS} nights (from {start[:10] or 'none'})"
    )
    writer.page("regressions.html", regressions_page(cells, metric, start, window))
    writer.page("runs.html", runs_page(list(runs.values()), metric))
    progress = Progress(len(cells) + len(runs), stream)
    for cell in cells:
        writer.page(cell.page, cell_page(cell, metric))
        progress.tick("pages")
    for run in runs.values():
        writer.page(run_page(run.run_id), run_page_html(run, metric))
        progress.tick("pages")
    return cells, runs


def publish_site(
    store: ResultsStore,
    out: Path,
    metric_name: str = "p50",
    since: str | None = None,
    stream: TextIO = sys.stderr,
) -> PublishSummary:
    """Build or update the site in ``out`` from every stored night; what was done, summed up."""
    from edgebench.analysis.nightly import cell_histories

    metric = get_metric(metric_name)
    start = time.monotonic()
    with SiteWriter(out) as writer:
        print(f"publish: reading the nights under {store.root}", file=stream, flush=True)
        histories = cell_histories(store, metric.name)
        read_seconds = time.monotonic() - start
        cells, runs = build_pages(writer, histories, metric, since, store, stream)
        writer.finish()
        return PublishSummary(
            out=out,
            written=writer.written,
            unchanged=writer.unchanged,
            removed=writer.removed,
            size=writer.size(),
            cells=len(cells),
            runs=len(runs),
            seconds=time.monotonic() - start,
            read_seconds=read_seconds,
        )
