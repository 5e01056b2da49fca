"""The HTML breakdown sections: where the time goes (stages), top operators, memory vs
instances and latency vs input size. Each appears only when some record has its data.

The tables come from reporting.breakdown_tables (the Markdown report prints the same ones),
the charts from reporting.breakdown_charts; every text is escaped (names are untrusted) and
nothing needs a script.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgebench.analysis.breakdown_series import (
    SeriesKey,
    cliffs,
    memory_series,
    shape_series,
)
from edgebench.analysis.breakdowns import StageSummary
from edgebench.reporting.breakdown_charts import (
    colours_for,
    lines_chart,
    stage_bar_svg,
    stage_legend,
)
from edgebench.reporting.breakdown_tables import (
    MEMORY_TITLE,
    OPS_TITLE,
    SHAPES_TITLE,
    STAGES_TITLE,
    TOP_OP_HEADER,
    Table,
    key_settings,
    memory_tables,
    op_tables,
    shape_tables,
    stage_tables,
    top_op_rows,
    unavailable_reasons,
)
from edgebench.reporting.line_chart import Mark, Series
from edgebench.reporting.report_notes import Notes
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number
from edgebench.results.records import Record

#: Added to the page's style sheet by reporting.html.
BREAKDOWN_CSS = """
.bd .side{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.bd td.txt,.bd th.txt{text-align:left}
.bd td.mark{background:#fde2c8;font-weight:600}
.bd p.key{font-weight:600}
.bd ul.notes{font-size:12px;color:#555;margin:2px 0 10px}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
"""
#: A stage split where compute takes at least this share in every cell says nothing: folded.
COMPUTE_ONLY = 0.95
#: Columns whose cells are words, left-aligned.
_TEXT_COLUMNS = {
    "device", "framework", "setting", "mode", "shape", "op type", "op", "type", "impl",
    "step", "from",
}  # fmt: skip


def table_html(table: Table, *, extra_head: str = "", extra: Sequence[str] = ()) -> str:
    """A table; ``extra`` holds one more cell per row as HTML (a chart), under
    ``extra_head``."""
    text = [h in _TEXT_COLUMNS for h in table.header]
    head = "".join(
        f'<th class="txt">{esc(h)}</th>' if t else f"<th>{esc(h)}</th>"
        for h, t in zip(table.header, text, strict=True)
    )
    if extra_head:
        head += f"<th>{esc(extra_head)}</th>"
    out = [f"<table><thead><tr>{head}</tr></thead><tbody>"]
    for i, row in enumerate(table.rows):
        cells = []
        for j, cell in enumerate(row):
            words = ["txt"] * (j < len(text) and text[j]) + ["mark"] * ((i, j) in table.marked)
            attr = f' class="{" ".join(words)}"' if words else ""
            cells.append(f"<td{attr}>{esc(cell)}</td>")
        if extra:
            cells.append(f"<td>{extra[i]}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _caption(table: Table) -> str:
    return f'<p class="muted">{esc(table.caption)}</p>' if table.caption else ""


def _notes(notes: Sequence[str], lead: str = "") -> str:
    if not notes:
        return ""
    head = f'<p class="muted">{esc(lead)}</p>' if lead else ""
    return head + '<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"


def _unavailable_html(reasons: Sequence[str]) -> str:
    return _notes(reasons, "Not measured:")


def _section(cls: str, title: str, body: Sequence[str]) -> str:
    return f'<section class="bd {cls}"><h2>{esc(title)}</h2>' + "".join(body) + "</section>"


def _compute_range(summaries: Sequence[StageSummary]) -> tuple[float, float] | None:
    """(lowest, highest) share of compute over the rows, when every row is at least
    ``COMPUTE_ONLY`` compute; None when some split matters."""
    shares = [s.shares.get("compute", 0.0) for s in summaries]
    if not shares or min(shares) < COMPUTE_ONLY:
        return None
    return min(shares), max(shares)


def _boundary_refs(table: Table, notes: Notes) -> str:
    """``Stage boundaries: onnxruntime[1] ncnn[2]``: each framework's note, given once."""
    refs = [f"{esc(n.split(': ', 1)[0])}{notes.ref(n)}" for n in table.notes]
    return f'<p class="muted">Stage boundaries: {" ".join(refs)}</p>' if refs else ""


def _share_range(lo: float, hi: float) -> str:
    low, high = f"{lo:.0%}", f"{hi:.0%}"
    return low if low == high else f"{low[:-1]}–{high}"


def stages_section(records: Sequence[Record], notes: Notes | None = None) -> str:
    """Per model: stage times and shares per record, with a stacked bar per row. The models
    whose every row is at least ``COMPUTE_ONLY`` compute are folded into one closed block; a
    caption and each framework's stage boundaries are given once (``notes``)."""
    notes = notes or Notes()
    tables = stage_tables(records)
    reasons = unavailable_reasons(records, "stages")
    if not tables and not reasons:
        return ""
    legend = f'<p class="muted">Each bar is one iteration (100%):{stage_legend()}</p>'
    body = []
    shown: list[tuple[Table, list[StageSummary]]] = []
    folded: list[tuple[Table, list[StageSummary]]] = []
    ranges: list[tuple[float, float]] = []
    for table, summaries in tables:
        compute = _compute_range(summaries)
        (shown if compute is None else folded).append((table, summaries))
        if compute is not None:
            ranges.append(compute)
    captions: set[str] = set()

    def part(table: Table, summaries: list[StageSummary]) -> list[str]:
        caption = "" if table.caption in captions else _caption(table)
        captions.add(table.caption)
        bars = [stage_bar_svg(s) for s in summaries]
        return [
            f"<h3>{esc(table.title)}</h3>",
            caption,
            table_html(table, extra_head="iteration", extra=bars),
            _boundary_refs(table, notes),
        ]

    if shown:
        body.append(legend)
    for table, summaries in shown:
        body += part(table, summaries)
    if folded:
        share = _share_range(min(lo for lo, _ in ranges), max(hi for _, hi in ranges))
        which = "" if not shown else f" of {', '.join(t.title for t, _ in folded)}"
        inner = [] if shown else [legend]
        inner += [p for table, summaries in folded for p in part(table, summaries)]
        if not shown:  # nothing open: the boundaries belong inside the fold
            inner.append(notes.listing("Stage boundaries per framework:"))
        body.append(
            f'<details class="fold"><summary>stages{esc(which)}: compute {esc(share)} in '
            f"every cell</summary>{''.join(inner)}</details>"
        )
    body.append(notes.listing("Stage boundaries per framework:"))
    body.append(_unavailable_html(reasons))
    return _section("stages", STAGES_TITLE, body)


def operators_section(records: Sequence[Record], notes: Notes | None = None) -> str:
    """Per model and device: op types side by side, the framework with the most time in each
    highlighted, then each framework's slowest single ops. Where the profiles came from is a
    note, given once (``notes``)."""
    notes = notes or Notes()
    tables = op_tables(records)
    reasons = unavailable_reasons(records, "op_profile")
    if not tables and not reasons:
        return ""
    body = []
    for types, _, comparison in tables:
        labels = types.header[1:]
        # With an excess, the first note says which op types make the slowest one slow.
        key_notes = types.notes[:1] if comparison.excess else []
        body += [f"<h3>{esc(types.title)}</h3>", _caption(types)]
        body += [f'<p class="key">{esc(note)}</p>' for note in key_notes]
        sources = types.notes[len(key_notes) :]
        body.append(table_html(types))
        if sources:
            body.append(f'<p class="muted">Profiles: {notes.refs(sources)}</p>')
        singles = []
        for label, b in zip(labels, comparison.columns, strict=True):
            table = Table(label, list(TOP_OP_HEADER), top_op_rows(b))
            singles.append(f'<div><div class="cap">{esc(label)}</div>{table_html(table)}</div>')
        body.append(
            '<p class="muted">Slowest single ops per framework:</p>'
            f'<div class="side">{"".join(singles)}</div>'
        )
    body.append(notes.listing("Profiles:"))
    body.append(_unavailable_html(reasons))
    return _section("ops", OPS_TITLE, body)


def _series_lines(
    keys: Sequence[SeriesKey], dashed_mode: str, colours: dict[object, str]
) -> list[tuple[SeriesKey, str, str, bool]]:
    """(key, label, colour, dashed) per series: one colour per framework and setting, the
    mode ``dashed_mode`` dashed."""
    settings = key_settings(keys)
    return [
        (
            k,
            " ".join(p for p in (k.framework, s, k.mode) if p),
            colours[(k.framework, k.precision, k.setting)],
            k.mode == dashed_mode,
        )
        for k, s in zip(keys, settings, strict=True)
    ]


def _by_device(keys: Sequence[SeriesKey]) -> dict[str, list[SeriesKey]]:
    out: dict[str, list[SeriesKey]] = {}
    for k in keys:
        out.setdefault(k.device, []).append(k)
    return out


def instances_section(records: Sequence[Record]) -> str:
    """Per model: resident memory against the number of instances (a chart per device), and
    the table of per-instance memory, p50 and throughput at each count."""
    series = memory_series(records)
    if not series:
        return ""
    colours = colours_for((k.framework, k.precision, k.setting) for k in series)
    tables = memory_tables(records)
    body = [
        '<p class="muted">Solid lines: separate instances (N loads); dashed: shared (one load '
        "serving N streams).</p>"
    ]
    for model, table in tables.items():
        body.append(f"<h3>{esc(model)}</h3>")
        charts = []
        for device, keys in _by_device([k for k in series if k.model == model]).items():
            lines = []
            for key, label, colour, dashed in _series_lines(keys, "shared", colours):
                points = series[key]
                tips = [
                    f"{label}: N={p.n}"
                    + (f" (at most {p.at_once} at once)" if p.fewer_at_once else "")
                    + f", {fmt_number(p.rss_running_mb, 'MB')} running, "
                    f"{fmt_number(p.per_instance_mb, 'MB')} per instance, p50 "
                    f"{fmt_number(p.p50_ms, 'ms')}, {fmt_number(p.throughput_ips, 'inf/s')}"
                    for p in points
                ]
                xs = [float(p.n) for p in points]
                ys = [p.rss_running_mb for p in points]
                lines.append(Series(label, xs, ys, tips=tips, colour=colour, dashed=dashed))
            ns = sorted({p.n for k in keys for p in series[k]})
            charts.append(
                lines_chart(
                    f"{model} · {device}: RSS while running",
                    lines,
                    "instances (N)",
                    "RSS running (MB)",
                    x_ticks=[(float(n), str(n)) for n in ns],
                )
            )
        body += [f'<div class="side">{"".join(charts)}</div>', _caption(table), table_html(table)]
    return _section("instances", MEMORY_TITLE, body)


def shapes_section(records: Sequence[Record]) -> str:
    """Per model: p50 against the input's pixels (a chart per device, cliffs ringed in red),
    the table of sizes with each step's scaling, and the first inference after a change."""
    series = shape_series(records)
    if not series:
        return ""
    colours = colours_for((k.framework, k.precision, k.setting) for k in series)
    body = [
        '<p class="muted">Solid lines: fixed shapes (an artifact per shape); dashed: dynamic '
        "(one artifact resized at run time). A red ring marks a cliff: a step whose latency "
        "grows more than 1.5x faster than its pixels.</p>"
    ]
    for model, tables in shape_tables(records).items():
        body.append(f"<h3>{esc(model)}</h3>")
        charts = []
        for device, keys in _by_device([k for k in series if k.model == model]).items():
            lines: list[Series] = []
            marks: list[Mark] = []
            ticks: dict[int, dict[str, None]] = {}
            for key, label, colour, dashed in _series_lines(keys, "dynamic", colours):
                points = series[key]
                for p in points:
                    ticks.setdefault(p.pixels, {})[p.label] = None
                tips = [f"{label}: {p.label}, p50 {fmt_number(p.p50_ms, 'ms')}" for p in points]
                xs = [float(p.pixels) for p in points]
                ys = [p.p50_ms for p in points]
                lines.append(Series(label, xs, ys, tips=tips, colour=colour, dashed=dashed))
                for c in cliffs(points):
                    marks.append(
                        Mark(
                            c.before.pixels,
                            c.before.p50_ms or 0.0,
                            c.after.pixels,
                            c.after.p50_ms or 0.0,
                            f"{label}: {c.describe()}",
                        )
                    )
            charts.append(
                lines_chart(
                    f"{model} · {device}: p50 by input size",
                    lines,
                    "input pixels (log scale)",
                    "p50 (ms)",
                    x_ticks=[(float(px), "/".join(labels)) for px, labels in sorted(ticks.items())],
                    log_x=True,
                    marks=marks,
                )
            )
        body.append(f'<div class="side">{"".join(charts)}</div>')
        for table in tables:
            if table is not tables[0]:
                body.append(f"<h3>{esc(table.title)}</h3>")
            body += [_caption(table), table_html(table)]
    return _section("shapes", SHAPES_TITLE, body)


def breakdown_sections(records: Sequence[Record], notes: Notes | None = None) -> str:
    """Every breakdown section that has data, as HTML ("" when none has); ``notes``: the
    page's, so a note given elsewhere on the page is only pointed to."""
    notes = notes or Notes()
    return "".join(
        (
            stages_section(records, notes),
            operators_section(records, notes),
            instances_section(records),
            shapes_section(records),
        )
    )
