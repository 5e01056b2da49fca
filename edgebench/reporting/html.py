"""One self-contained HTML report for a run: the answer first, then the details.

The page opens with the summary (reporting.summary: the fastest framework per device, ties
said as ties, a p50/p99 chart), then the heatmaps, precisions, breakdown sections and every
cell's details (reporting.cell_details). A note is given once and pointed to by number
(reporting.report_notes). The page works offline: no scripts, fonts, images or stylesheets
are fetched (a Content Security Policy forbids it), the CSS is inline (reporting.report_css)
and every chart is SVG. All text from records and metadata is escaped: model and device
names are untrusted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from edgebench import __version__
from edgebench.analysis.metrics import ENERGY_PER_TOKEN, METRICS, Metric
from edgebench.analysis.ranking import (
    EMULATED_CPU,
    EMULATED_RULE,
    RULE_SUMMARY,
    SOFTWARE_DEVICE,
    correctness_only,
    correctness_only_evidence,
    emulated_devices,
    rank,
    rankable,
)
from edgebench.reporting.breakdowns import BREAKDOWN_CSS, breakdown_sections
from edgebench.reporting.cell_details import cell_details, kv_table
from edgebench.reporting.matrix import (
    REPORT_MARKS,
    framework_order,
    group_records,
    group_title,
    is_generative,
    quiet_machine_advice,
    status_word,
)
from edgebench.reporting.precisions import precision_table
from edgebench.reporting.report_css import PAGE_CSS, SUMMARY_CSS
from edgebench.reporting.report_notes import Notes
from edgebench.reporting.summary import excluded_note, summary_section
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number
from edgebench.results.records import Record
from edgebench.statuses import Status

#: Metrics shown as heatmaps, in order (keys of the metrics registry).
HEATMAP_METRICS = ("p50", "p99", "throughput", "memory", "energy")
#: A generative model's heatmaps: its speeds and time to first token first, then its per-token
#: latencies (its throughput is its decode speed, shown once, in tokens).
GENERATIVE_HEATMAP_METRICS = ("decode", "prefill", "ttft", "p50", "p99", "memory", "energy")
#: Small runs show every cell's details expanded; larger ones only the cells that went wrong.
EXPAND_UP_TO = 12
EMULATED_LEGEND_NOTE = (
    "Cells hatched blue and labelled emulated ran on an emulated CPU (qemu user mode on "
    "another architecture): their figures are shown but never coloured, starred or tied."
)
SOFTWARE_LEGEND_NOTE = (
    "Cells hatched blue and labelled software ran on a software GPU (Mesa lavapipe, pocl): "
    "their outputs are checked, their figures never coloured, starred or tied."
)


# Nothing may be loaded from anywhere: inline styles only, images as data: at most, no scripts.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


# ---------------------------------------------------------------------------------------------
# Heatmaps


def _heat_colour(t: float) -> str:
    """t = 0 best (green) .. 1 worst (red)."""
    hue = 120 * (1 - max(0.0, min(1.0, t)))
    return f"hsl({hue:.0f},65%,78%)"


def _heatmap(
    metric: Metric,
    devices: list[str],
    frameworks: list[str],
    cells: dict[tuple[str, str], Record],
    anchors: dict[int, str],
) -> str:
    # The colour scale spans the cells that rank: an emulated cell's figure is no chip's.
    ok_values = [
        v
        for r in cells.values()
        if rankable(r) and (v := metric.stored(r)) is not None and math.isfinite(v)
    ]
    lo, hi = (min(ok_values), max(ok_values)) if ok_values else (0.0, 0.0)
    arrow = "lower is better" if metric.lower_is_better else "higher is better"
    out = [
        '<div><div class="cap">'
        f"{esc(metric.label)} ({esc(metric.unit)}) <span class='muted'>{arrow}</span></div>",
        '<table class="heatmap"><thead><tr><th class="dev">device</th>',
        *(f"<th>{esc(f)}</th>" for f in frameworks),
        "</tr></thead><tbody>",
    ]
    for device in devices:
        row = {f: r for f in frameworks if (r := cells.get((device, f))) is not None}
        ranking = rank(row, metric)
        row_vals = {
            f: v
            for f, r in row.items()
            if r.status == Status.OK and (v := metric.stored(r)) is not None and math.isfinite(v)
        }
        out.append(f'<tr><td class="dev">{esc(device)}</td>')
        for framework in frameworks:
            r = cells.get((device, framework))
            if r is None:
                out.append('<td class="empty"></td>')
                continue
            link = anchors[id(r)]
            if r.status != Status.OK:
                tip = r.error or r.status
                out.append(
                    f'<td class="cell st st-{esc(r.status)}" title="{esc(tip)}">'
                    f'<a href="#{link}">{esc(status_word(r))}</a></td>'
                )
                continue
            value = row_vals.get(framework)
            if kind := correctness_only(r):
                evidence = correctness_only_evidence(r)
                how = f" ({evidence})" if evidence else ""
                where, label = kind.article, kind.tag
                tip = (
                    f"{device} / {framework}: {fmt_number(value, metric.unit)} on {where}"
                    f"{how}: {EMULATED_RULE}"
                )
                out.append(
                    f'<td class="cell emu" title="{esc(tip)}"><a href="#{link}">'
                    f'{esc(fmt_number(value))}<span class="emu-label">{label}</span></a></td>'
                )
                continue
            if value is None:
                out.append(f'<td class="cell"><a href="#{link}">-</a></td>')
                continue
            t = 0.0 if hi == lo else (value - lo) / (hi - lo)
            if not metric.lower_is_better and hi != lo:
                t = 1 - t
            mark = REPORT_MARKS.get(ranking.standing(framework), "")
            tip = f"{device} / {framework}: {fmt_number(value, metric.unit)}"
            if framework in ranking.versus:
                tip += f", {ranking.verdict(framework)}"
            out.append(
                f'<td class="cell" style="background:{_heat_colour(t)}" title="{esc(tip)}">'
                f'<a href="#{link}">{esc(fmt_number(value))}{mark}</a></td>'
            )
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Page


def _header(records: Sequence[Record], meta: Mapping[str, Any]) -> str:
    run_id = meta.get("run_id") or (records[0].run_id if records else "")
    date = meta.get("created_at") or (records[0].started_at if records else None) or ""
    version = meta.get("edgebench_version") or next(
        (r.edgebench_version for r in records if r.edgebench_version), __version__
    )
    devices: dict[str, Mapping[str, Any]] = {}
    for name, info in (meta.get("devices") or {}).items():
        devices[str(name)] = info if isinstance(info, Mapping) else {}
    for r in records:
        if r.device not in devices or not devices[r.device]:
            devices[r.device] = r.device_info or {}
    emulated = emulated_devices(records)
    for name, info in devices.items():
        if name not in emulated and info.get("emulated") is True:
            emulated[name] = str(info.get("emulation") or "")
    # An "emulated" column only when a device is: most runs have none.
    emu_head = "<th>emulated CPU</th>" if emulated else ""

    def emu_cell(name: str) -> str:
        if not emulated:
            return ""
        if name not in emulated:
            return "<td>-</td>"
        return f'<td class="emu">{esc(emulated[name] or "yes")}</td>'

    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(info.get('cpu_model') or '-')}</td>"
        f"<td>{esc(info.get('machine') or '-')}</td>"
        f"<td>{esc(' '.join(str(x) for x in (info.get('os'), info.get('kernel')) if x) or '-')}"
        f"</td>{emu_cell(name)}</tr>"
        for name, info in devices.items()
    )
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no cells"
    return (
        f"<h1>edgebench run {esc(run_id)}</h1>"
        + kv_table(
            [
                ("run id", run_id),
                ("date", date),
                ("edgebench", version),
                ("cells", summary),
            ]
        )
        + '<h3>devices</h3><table class="meta"><thead><tr><th>device</th><th>CPU model</th>'
        f"<th>arch</th><th>OS</th>{emu_head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _precision_section(records: Sequence[Record]) -> str:
    """fp32 / fp16 / int8 side by side, when the run measured more than one precision."""
    header, body = precision_table(records)
    if not body:
        return ""
    lines = [
        '<section class="precisions"><h2>precisions</h2><p class="muted">p50 latency (ms); '
        "(Nx) = speed-up over fp32; top-1 and dB = agreement with fp32 ONNX Runtime and SQNR "
        "on the evaluation set.</p><table><tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in header)
        + "</tr>"
    ]
    lines += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in body]
    return "".join(lines) + "</table></section>"


def _matrices(
    records: Sequence[Record], anchors: dict[int, str], notes: Notes, emulated: dict[str, str]
) -> str:
    """Per group, a heatmap per metric; the colour and mark legend once, above them."""
    groups = group_records(records)
    if not groups:
        return ""
    frameworks = framework_order(records)
    metrics = {key: heatmap_metrics(group) for key, group in groups.items()}
    # An empty table says nothing: a metric no cell has is named, not drawn (a group's first
    # always is: its table says why each cell has no figure); what no cell of the run has is
    # named once.
    optional = list(dict.fromkeys(m for shown in metrics.values() for m in shown[1:]))
    nowhere = _unmeasured(optional, records)
    body = [
        '<section class="matrices"><h2>Matrices</h2>',
        "<p class='muted'>Colour is scaled per table from best (green) to worst (red) over the "
        "cells that ran; ★ = best on the device, ≈ = tied for best"
        f"{notes.ref(RULE_SUMMARY)}. Cells hatched grey or red did not produce a valid result "
        "(hover for the reason, click for details)."
        + (
            f" Not measured in this run: {esc(', '.join(m.label for m in nowhere))}."
            if nowhere
            else ""
        )
        + "</p>",
    ]
    for key, group in groups.items():
        devices = list(dict.fromkeys(r.device for r in group))
        group_fw = [f for f in frameworks if any(r.engine == f for r in group)]
        cells = {(r.device, r.engine): r for r in group}
        body.append(f"<h3>{esc(group_title(key))}</h3>")
        empty = _unmeasured(metrics[key][1:], group)
        body.append(
            '<div class="heat">'
            + "".join(
                _heatmap(m, devices, group_fw, cells, anchors)
                for m in metrics[key]
                if m not in empty
            )
            + "</div>"
        )
        if here := [m for m in empty if m not in nowhere]:
            names = ", ".join(m.label for m in here)
            body.append(f"<p class='muted'>Not measured in these cells: {esc(names)}.</p>")
        body.append(_emulated_legend(group, notes, emulated))
    body.append(notes.listing("Notes:"))
    body.append("</section>")
    return "".join(body)


def heatmap_metrics(group: Sequence[Record]) -> list[Metric]:
    """The heatmaps a group of records gets, in order: a generative model's own metrics, its
    energy per decoded token."""
    if is_generative(group):
        return [
            ENERGY_PER_TOKEN if m == "energy" else METRICS[m] for m in GENERATIVE_HEATMAP_METRICS
        ]
    return [METRICS[m] for m in HEATMAP_METRICS]


def _unmeasured(metrics: Sequence[Metric], records: Sequence[Record]) -> list[Metric]:
    """The metrics no ok record among ``records`` has a figure for."""
    ok = [r for r in records if r.status == Status.OK]
    return [m for m in metrics if all(m.stored(r) is None for r in ok)]


def _emulated_legend(group: Sequence[Record], notes: Notes, emulated: dict[str, str]) -> str:
    """What the hatched cells of a group are, as references to the notes that say it."""
    out = []
    for software, legend in ((False, EMULATED_LEGEND_NOTE), (True, SOFTWARE_LEGEND_NOTE)):
        wanted = SOFTWARE_DEVICE if software else EMULATED_CPU
        hatched = [r for r in group if correctness_only(r) is wanted]
        if hatched:
            label = "software" if software else "emulated"
            device_notes = [n for r in hatched if (n := excluded_note(r, emulated))]
            out.append(
                f'Hatched blue, <span class="emu-label">{label}</span>: '
                f"{notes.ref(legend)}{notes.refs(device_notes)}"
            )
    return f"<p class='muted emu-legend'>{'; '.join(out)}</p>" if out else ""


def _cells(records: Sequence[Record], anchors: dict[int, str]) -> str:
    """Every cell's details, per group; all open in a small run, else the ones that failed."""
    if not records:
        return ""
    expand = len(records) <= EXPAND_UP_TO
    body = ['<section class="cells"><h2>Cells</h2>']
    for key, group in group_records(records).items():
        body.append(f"<h3>{esc(group_title(key))}</h3>")
        body.extend(cell_details(r, anchors[id(r)], expand) for r in group)
    body.append("</section>")
    return "".join(body)


def render_html(records: Sequence[Record], meta: Mapping[str, Any] | None = None) -> str:
    """The whole report as one HTML document (str) that needs nothing else to display: the
    answer first (reporting.summary), then the matrices, precisions, breakdowns and cells."""
    meta = meta or {}
    run_id = meta.get("run_id") or (records[0].run_id if records else "")
    anchors = {id(r): f"cell-{i}" for i, r in enumerate(records)}
    notes = Notes()
    emulated = emulated_devices(records)

    body = [_header(records, meta)]
    advice = quiet_machine_advice(records)
    if advice:
        body.append(f"<p><b>Noise.</b> {esc(' '.join(advice))}</p>")
    if not records:
        body.append("<p>This run has no records.</p>")
    body.append(summary_section(records, anchors, notes))
    body.append(_matrices(records, anchors, notes, emulated))
    body.append(_precision_section(records))
    body.append(breakdown_sections(records, notes))
    body.append(_cells(records, anchors))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>edgebench report {esc(run_id)}</title>"
        f"<style>{PAGE_CSS}{BREAKDOWN_CSS}{SUMMARY_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
