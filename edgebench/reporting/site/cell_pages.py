"""The overview grid and the page of each cell series.

The overview has one table per model: devices down, engines (framework and backend) across,
and in each cell a tile per series (precision, streams, input shape) with the latest value, a
sparkline of the nights and the latest change point, red when it was a regression. A tile links
to its cell page: the history chart, the steps with what changed on their night, the nights.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgebench.analysis.metrics import Metric, get_metric
from edgebench.reporting.site.charts import history_svg, is_regression, sparkline_svg, step_colour
from edgebench.reporting.site.layout import (
    SiteCell,
    changed_list,
    latest_value,
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

#: The nights table's band column: the p99 latency (per generated token for a generative cell).
_P99 = get_metric("p99")

#: How many tiles a row of the overview holds at most (a tile is about 160 px wide).
TILES_ACROSS = 4


def _tile(cell: SiteCell, metric: Metric) -> str:
    history = cell.history
    latest = latest_value(history)
    last_night = history.nights[-1] if history.nights else None
    classes = ["tile"]
    step_html = '<div class="step muted">no change point</div>'
    step_at = None
    colour = ""
    if history.steps:
        step = history.steps[-1]
        change = step.change_point.change
        worse = is_regression(change, metric.lower_is_better)
        classes.append("worse" if worse else "better")
        colour = step_colour(change, metric.lower_is_better)
        index = {n.run_id: i for i, n in enumerate(history.nights)}
        step_at = index.get(step.night.run_id)
        cls = "worse-text" if worse else "better-text"
        step_html = (
            f'<div class="step"><span class="{cls}">{change:+.1%}</span> '
            f"since {esc(night_date(step.night))}</div>"
        )
    status = ""
    if last_night is not None and last_night.status != Status.OK:
        classes.append("failed")
        status = f' <span class="worse-text small">{esc(last_night.status)}</span>'
    series = history.key.series
    spark = sparkline_svg([n.value for n in history.nights], step_at, colour or "#c0392b")
    value = fmt_number(latest.value if latest else None, metric.bare_unit)
    return (
        f'<a class="{" ".join(classes)}" href="{esc(cell.page)}" '
        f'title="{esc(history.key.label())}">'
        + (f'<div class="series">{esc(series)}</div>' if series else "")
        + f'<div><span class="val">{esc(value)}</span>{status}</div>{spark}{step_html}</a>'
    )


def _model_grid(cells: Sequence[SiteCell], metric: Metric) -> str:
    """One model's devices x engines table of tiles. A narrow grid (few engines and series)
    sets several devices side by side, so that sixty devices are not one long column."""
    devices = sorted({c.history.key.device for c in cells})
    engines = sorted({c.history.key.engine for c in cells})
    by_slot: dict[tuple[str, str], list[SiteCell]] = {}
    for c in cells:
        by_slot.setdefault((c.history.key.device, c.history.key.engine), []).append(c)
    tiles_per_device = sum(max(len(by_slot.get((d, e), [])) for d in devices) for e in engines)
    across = max(1, min(len(devices), TILES_ACROSS // max(tiles_per_device, 1)))
    head = '<th class="dev">device</th>' + "".join(f"<th>{esc(e)}</th>" for e in engines)
    rows = []
    for first in range(0, len(devices), across):
        tds = []
        for device in devices[first : first + across]:
            tds.append(f'<th class="dev">{esc(device)}</th>')
            for engine in engines:
                slot = sorted(by_slot.get((device, engine), []), key=lambda c: c.history.key.series)
                tiles = "".join(_tile(c, metric) for c in slot)
                tds.append(f'<td><div class="slot">{tiles}</div></td>')
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<table class="grid"><thead><tr>{head * across}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def index_page(cells: Sequence[SiteCell], metric: Metric, newest: str) -> str:
    """The overview: per model, a devices x engines grid of tiles."""
    models = sorted({c.history.key.model for c in cells})
    sections = [
        f"<h2>{esc(model)}</h2>"
        + _model_grid([c for c in cells if c.history.key.model == model], metric)
        for model in models
    ]
    regressions = sum(
        1 for c in cells if c.history.steps and _latest_is_regression(c, metric.lower_is_better)
    )
    subtitle = (
        f"{esc(metric.label)} ({esc(metric.unit)}) of {len(cells)} cell series, newest night "
        f"{esc(newest)}; {regressions} whose latest change point is a regression (red)."
    )
    body = "".join(sections) or '<p class="muted">No stored night has a cell yet.</p>'
    return shell("edgebench nightly", body, subtitle=subtitle)


def _latest_is_regression(cell: SiteCell, lower_is_better: bool) -> bool:
    return is_regression(cell.history.steps[-1].change_point.change, lower_is_better)


def _steps_table(cell: SiteCell, metric: Metric) -> str:
    steps = cell.history.steps
    if not steps:
        return '<p class="muted">No change point: the level held over these nights.</p>'
    rows = []
    for step in reversed(steps):
        night = step.night
        rows.append(
            "<tr>"
            f'<td><a href="../{esc(run_page(night.run_id))}">{esc(night_date(night))}</a></td>'
            f'<td class="num">{esc(level_text(step, metric))}</td>'
            f"<td>{step_text(step, metric)}</td>"
            f'<td class="num">{step.change_point.p_value:.3f}</td>'
            f"<td>{changed_list(step)}</td></tr>"
        )
    return (
        "<table><thead><tr><th>first night at the new level</th><th>level</th><th>change "
        "(95% CI)</th><th>p</th><th>what changed that night</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _nights_table(cell: SiteCell, metric: Metric) -> str:
    rows = []
    for night in reversed(cell.history.nights):
        spread = "-" if night.spread is None else f"±{night.spread:.1%}"
        status = esc(night.status) + (
            f" ({esc(night.correctness_only)})" if night.correctness_only else ""
        )
        rows.append(
            "<tr>"
            f"<td>{esc(night_date(night))}</td>"
            f'<td><a href="../{esc(run_page(night.run_id))}">{esc(night.run_id)}</a> '
            f'<a class="small" href="../{esc(report_page(night.run_id))}">report</a></td>'
            f'<td class="num">{esc(fmt_number(night.value))}</td>'
            f'<td class="num">{esc(fmt_number(night.p99))}</td>'
            f'<td class="num">{spread}</td><td>{status}</td>'
            f"<td>{esc(night.regime.label())}</td></tr>"
        )
    return (
        f"<table><thead><tr><th>night</th><th>run</th><th>{esc(metric.name)} "
        f"({esc(metric.bare_unit)})</th><th>p99 ({esc(_P99.bare_unit)})</th><th>spread</th>"
        "<th>status</th>"
        f"<th>clock regime</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def cell_page(cell: SiteCell, metric: Metric) -> str:
    """One cell series: its history chart, its steps and what changed, its nights."""
    history = cell.history
    latest = latest_value(history)
    latest_text = (
        f"latest {fmt_number(latest.value, metric.bare_unit)} on {night_date(latest)}"
        if latest
        else "no night with a value"
    )
    subtitle = (
        f"{esc(metric.label)}: {esc(latest_text)}; {len(history.nights)} nights, "
        f"{len(history.steps)} change point{'' if len(history.steps) == 1 else 's'} "
        "(dashed lines: the level between them)."
    )
    unit = f"{metric.name} ({metric.bare_unit})"
    charts = history_svg(
        history.nights, history.steps, unit=unit, lower_is_better=metric.lower_is_better
    )
    latency = metric.sampled and metric.name != "p99"  # the band is of latencies
    if latency and any(n.p99 is not None for n in history.nights):
        band = history_svg(
            history.nights,
            history.steps,
            unit=f"{metric.name} to p99 ({metric.bare_unit})",
            lower_is_better=metric.lower_is_better,
            with_band=True,
            height=220,
        )
        charts += f"<h2>Up to the p99</h2>{band}"
    body = (
        f"{charts}<h2>Change points</h2>{_steps_table(cell, metric)}"
        f"<h2>Nights</h2>{_nights_table(cell, metric)}"
    )
    return shell(history.key.label(), body, depth=1, subtitle=subtitle)
