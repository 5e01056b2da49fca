"""The dashboard's pages by night: the runs list, one page per run (its cells that night and its
full HTML report), and the regressions since a date."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from edgebench.analysis.metrics import Metric
from edgebench.reporting.site.charts import is_regression
from edgebench.reporting.site.layout import (
    SiteCell,
    changed_list,
    level_text,
    night_date,
    report_page,
    run_page,
    shell,
    step_text,
)
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number
from edgebench.statuses import Status

if TYPE_CHECKING:
    from edgebench.analysis.nightly import Night, Step


@dataclass
class SiteRun:
    """One night's run as the dashboard shows it."""

    run_id: str
    created_at: str
    cells: list[tuple[SiteCell, Night]] = field(default_factory=list)
    #: Change points whose first night at the new level is this run.
    steps: list[tuple[SiteCell, Step]] = field(default_factory=list)
    #: Whether its full report is in the site (a run whose folder is gone has none).
    has_report: bool = False


def runs_page(runs: Sequence[SiteRun], metric: Metric) -> str:
    rows = []
    for run in sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True):
        ok = sum(1 for _, n in run.cells if n.status == Status.OK)
        worse = sum(
            1 for _, s in run.steps if is_regression(s.change_point.change, metric.lower_is_better)
        )
        report = (
            f'<a href="{esc(report_page(run.run_id))}">full report</a>'
            if run.has_report
            else '<span class="muted">run folder gone</span>'
        )
        flagged = f'<span class="worse-text">{worse}</span>' if worse else "0"
        rows.append(
            f"<tr><td>{esc(run.created_at[:16].replace('T', ' '))}</td>"
            f'<td><a href="{esc(run_page(run.run_id))}">{esc(run.run_id)}</a></td>'
            f'<td class="num">{len(run.cells)}</td><td class="num">{ok}</td>'
            f'<td class="num">{flagged}</td><td>{report}</td></tr>'
        )
    body = (
        "<table><thead><tr><th>started</th><th>run</th><th>cell series</th><th>ok</th>"
        "<th>regressions began</th><th>report</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return shell("Runs", body, subtitle=f"{len(runs)} nights, newest first.")


def run_page_html(run: SiteRun, metric: Metric) -> str:
    began = {id(cell): step for cell, step in run.steps}
    rows = []
    for cell, night in sorted(run.cells, key=lambda cn: cn[0].history.key.label()):
        step = began.get(id(cell))
        step_cell = step_text(step, metric) if step is not None else ""
        kind = f" ({esc(night.correctness_only)})" if night.correctness_only else ""
        rows.append(
            f'<tr><td><a href="../{esc(cell.page)}">{esc(cell.history.key.label())}</a></td>'
            f'<td class="num">{esc(fmt_number(night.value, metric.bare_unit))}</td>'
            f"<td>{esc(night.status)}{kind}</td>"
            f"<td>{step_cell}</td></tr>"
        )
    report = (
        f'<p><a href="../{esc(report_page(run.run_id))}">The full report of this run</a> '
        "(every cell's statistics, charts and notes).</p>"
        if run.has_report
        else '<p class="muted">The run folder is no longer in the results store.</p>'
    )
    body = (
        f"{report}<table><thead><tr><th>cell</th><th>{esc(metric.name)}</th><th>status</th>"
        "<th>change point began</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return shell(f"Run {run.run_id}", body, depth=1, subtitle=esc(f"started {run.created_at}"))


#: How many regressions from before the window the regressions page still lists.
EARLIER = 20


def _regressions_table(found: Sequence[tuple[SiteCell, Step]], metric: Metric) -> str:
    rows = [
        f"<tr><td>{esc(night_date(step.night))}</td>"
        f'<td><a href="{esc(cell.page)}">{esc(cell.history.key.label())}</a></td>'
        f'<td class="num">{esc(level_text(step, metric))}</td>'
        f"<td>{step_text(step, metric)}</td><td>{changed_list(step)}</td></tr>"
        for cell, step in found
    ]
    return (
        "<table><thead><tr><th>first night</th><th>cell</th><th>level</th>"
        "<th>change (95% CI)</th><th>what changed that night</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def regressions_page(cells: Sequence[SiteCell], metric: Metric, since: str, window: str) -> str:
    """Change points to a worse level whose first night is on or after ``since`` (``window``
    says which nights those are), newest first; then the latest ones from before, so that a
    quiet fortnight still shows them."""
    found = [
        (cell, step)
        for cell in cells
        for step in cell.history.steps
        if is_regression(step.change_point.change, metric.lower_is_better)
    ]
    found.sort(
        key=lambda cs: (cs[1].night.created_at or "", cs[0].history.key.label()), reverse=True
    )
    recent = [cs for cs in found if (cs[1].night.created_at or "") >= since]
    before = len(found) - len(recent)
    earlier = found[len(recent) : len(recent) + EARLIER]
    body = (
        _regressions_table(recent, metric)
        if recent
        else '<p class="muted">No regression began in these nights.</p>'
    )
    if earlier:
        shown = f"The latest {len(earlier)} of {before}" if before > EARLIER else f"All {before}"
        body += (
            f"<h2>Earlier</h2><p class='muted'>{shown}, newest first.</p>"
            f"{_regressions_table(earlier, metric)}"
        )
    subtitle = (
        f"{len(recent)} change points to a worse {esc(metric.label)} in {esc(window)}, "
        "newest first."
    )
    return shell("Regressions", body, subtitle=subtitle)
