"""One self-contained HTML report for a run: heatmap tables and per-cell inline SVG charts.

The page works offline: no scripts, fonts, images or stylesheets are fetched (a Content
Security Policy forbids it), the CSS is inline and every chart is SVG (reporting.charts).
All text from records and metadata is escaped: model and device names are untrusted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from edgebench import __version__
from edgebench.analysis.metrics import METRICS, Metric
from edgebench.analysis.ranking import (
    EMULATED_RULE,
    RULE_SUMMARY,
    emulated_devices,
    emulation_note,
    rank,
    rankable,
    software_devices,
    software_note,
)
from edgebench.reporting.breakdowns import BREAKDOWN_CSS, breakdown_sections
from edgebench.reporting.charts import esc, latency_cdf_svg, telemetry_svgs
from edgebench.reporting.matrix import (
    REPORT_MARKS,
    framework_order,
    group_records,
    group_title,
    group_warnings,
    quiet_machine_advice,
    status_word,
)
from edgebench.reporting.precisions import precision_table
from edgebench.reporting.tables import fmt_number
from edgebench.results.quant_parts import Quant
from edgebench.results.records import Record
from edgebench.statuses import MEASURED, Status

#: Metrics shown as heatmaps, in order (keys of the metrics registry).
HEATMAP_METRICS = ("p50", "p99", "throughput", "memory", "energy")
#: Small runs show every cell's details expanded; larger ones only the cells that went wrong.
EXPAND_UP_TO = 12

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;
background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th{background:#f2f2f2}td.dev,th.dev{text-align:left}
table.meta td,table.meta th{text-align:left}
td.cell a{color:inherit;text-decoration:none}
td.st{color:#333;font-weight:600;text-align:center;
background:repeating-linear-gradient(45deg,#ddd 0 6px,#f4f4f4 6px 12px)}
td.st-failed,td.st-mismatch{color:#a00;
background:repeating-linear-gradient(45deg,#f3c6c6 0 6px,#fbeaea 6px 12px)}
td.empty{background:#fafafa}
td.emu{color:#1d3f6e;background:repeating-linear-gradient(135deg,#c9d8ef 0 6px,#eef3fa 6px 12px)}
.emu-label{display:inline-block;margin-left:4px;padding:0 3px;border-radius:3px;font-size:10px;
font-weight:600;color:#1d3f6e;background:#fff;border:1px solid #9fb4d6}
.heat{display:flex;flex-wrap:wrap;gap:18px}.heat>div{flex:0 0 auto}
.cap{font-weight:600;font-size:13px}
details{border:1px solid #ccc;border-radius:4px;margin:8px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.status{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;background:#ddd}
.status.ok{background:#cdeccd}.status.failed,.status.mismatch{background:#f3c6c6}
.status.emu{background:repeating-linear-gradient(135deg,#c9d8ef 0 4px,#eef3fa 4px 8px)}
.err{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;background:#f8f8f8;
padding:6px}
svg text{font:11px sans-serif;fill:#333}
.muted{color:#777}
"""

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
            if r.emulated:
                how = f" ({r.emulation})" if r.emulation else ""
                where = "a software device" if r.software_device else "an emulated CPU"
                label = "software" if r.software_device else "emulated"
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
                tip += f", behind {ranking.order[0]} by {ranking.versus[framework].describe()}"
            out.append(
                f'<td class="cell" style="background:{_heat_colour(t)}" title="{esc(tip)}">'
                f'<a href="#{link}">{esc(fmt_number(value))}{mark}</a></td>'
            )
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Per-cell details


def _kv_table(rows: Iterable[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta">{body}</table>' if body else ""


def _emulated_label(r: Record) -> str:
    return "software device" if r.software_device else "emulated CPU"


def _details(r: Record, anchor: str, expand: bool = False) -> str:
    lat = r.latency_ms or {}
    open_attr = " open" if expand or r.status != Status.OK else ""
    out = [
        f'<details id="{anchor}"{open_attr}><summary>{esc(r.device)} / {esc(r.engine)} '
        f'<span class="status {esc(r.status)}">{esc(status_word(r))}</span>'
        + (f'<span class="status emu">{_emulated_label(r)}</span>' if r.emulated else ""),
        f" <span class='muted'>p50 {esc(fmt_number(lat.get('p50'), 'ms'))}</span></summary>",
    ]
    if r.error:
        out.append(f'<div class="err">{esc(r.error)}</div>')
    stats = [
        (key, fmt_number(lat.get(key), "ms"))
        for key in ("min", "p50", "p90", "p95", "p99", "mean", "std")
        if lat.get(key) is not None
    ]
    if lat.get("cv") is not None:
        stats.append(("cv", f"{lat['cv']:.1%}"))
    stats += [
        ("samples", r.n_samples or len(r.samples_ns) or "-"),
        ("throughput", fmt_number(r.throughput_ips, "inf/s")),
        ("peak RSS", fmt_number(r.peak_rss_mb if r.status in MEASURED else None, "MB")),
        ("energy / inference", fmt_number(r.energy_mj_per_inf, "mJ")),
        ("average power", fmt_number(r.avg_power_w, "W")),
        ("CPU time / inference", fmt_number(r.cpu_ms_per_inf, "ms")),
        ("first inference", fmt_number(r.first_inference_ms, "ms")),
        ("framework version", r.framework_version or "-"),
    ]
    if r.nvidia is not None:
        stats.insert(0, ("NVIDIA", r.nvidia.describe()))
    if r.accelerator is not None:
        stats.insert(0, ("accelerator", r.accelerator.describe()))
    if r.emulated:
        stats.insert(0, (_emulated_label(r), f"{r.emulation or 'yes'}: {EMULATED_RULE}"))
    hatch = f"{anchor}-emulated" if r.emulated else ""
    charts = [
        latency_cdf_svg(r.samples_ns, lat, hatch=hatch),
        *telemetry_svgs(r.telemetry, hatch=hatch),
    ]
    charts = [c for c in charts if c]
    if charts:
        out.append('<div class="charts">' + "".join(charts) + "</div>")
    else:
        out.append('<p class="muted">no latency samples or telemetry for this cell</p>')
    out.append("<h3>statistics</h3>" + _kv_table(stats))
    if r.output_check is not None:
        check = r.output_check.to_dict()
        rows = [
            (k, check[k])
            for k in (
                "passed",
                "reference",
                "tolerance",
                "max_abs_diff",
                "rel_error",
                "cosine",
                "top1_agreement",
            )
            if k in check
        ]
        out.append("<h3>output check</h3>" + _kv_table(rows))
    if r.accuracy or r.quant:
        quant = r.quant or Quant(method=None)
        calibration = quant.calibration
        accuracy = dataclasses.asdict(r.accuracy) if r.accuracy is not None else {}
        rows = [(k, v) for k, v in accuracy.items() if k != "passed"]
        rows += [
            ("quantization", quant.method),
            ("granularity", quant.granularity),
            ("fp32 fallback ops", ", ".join(quant.fp32_fallback_ops) or "none"),
            (
                "calibration set",
                f"{calibration.n} samples, sha256 {str(calibration.sha256)[:12]}"
                + (" (synthetic)" if calibration.synthetic else "")
                if calibration
                else "-",
            ),
        ]
        out.append("<h3>accuracy vs fp32 ONNX Runtime</h3>" + _kv_table(rows))
    if r.warnings:
        out.append(
            "<h3>warnings</h3><ul>"
            + "".join(f"<li>{esc(w)}</li>" for w in group_warnings(r.warnings))
            + "</ul>"
        )
    if r.energy_flags:
        out.append(
            "<h3>energy flags</h3><ul>"
            + "".join(f"<li>{esc(f)}</li>" for f in r.energy_flags)
            + "</ul>"
        )
    if r.stderr_tail and r.status != Status.OK:
        out.append(f'<h3>stderr (tail)</h3><div class="err">{esc(r.stderr_tail)}</div>')
    out.append("</details>")
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
        + _kv_table(
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


def render_html(records: Sequence[Record], meta: Mapping[str, Any] | None = None) -> str:
    """The whole report as one HTML document (str) that needs nothing else to display."""
    meta = meta or {}
    run_id = meta.get("run_id") or (records[0].run_id if records else "")
    frameworks = framework_order(records)
    anchors = {id(r): f"cell-{i}" for i, r in enumerate(records)}

    body = [_header(records, meta)]
    advice = quiet_machine_advice(records)
    if advice:
        body.append(f"<p><b>Noise.</b> {esc(' '.join(advice))}</p>")
    if not records:
        body.append("<p>This run has no records.</p>")
    body.append(_precision_section(records))
    body.append(breakdown_sections(records))
    for key, group in group_records(records).items():
        devices = list(dict.fromkeys(r.device for r in group))
        group_fw = [f for f in frameworks if any(r.engine == f for r in group)]
        cells = {(r.device, r.engine): r for r in group}
        body.append(f'<section class="model"><h2>{esc(group_title(key))}</h2>')
        body.append(
            '<div class="heat">'
            + "".join(
                _heatmap(METRICS[m], devices, group_fw, cells, anchors) for m in HEATMAP_METRICS
            )
            + "</div>"
        )
        body.append(
            "<p class='muted'>Colour is scaled per table from best (green) to worst (red) over "
            "the cells that ran; ★ = best on the device, ≈ = tied for best: "
            f"{esc(RULE_SUMMARY)}. Cells hatched grey or red did not produce a valid result "
            "(hover for the reason, click for details).</p>"
        )
        emulated = emulated_devices(group)
        if emulated:
            notes = "".join(
                f"<li>{esc(emulation_note(d, how))}</li>" for d, how in emulated.items()
            )
            body.append(
                "<div class='muted emu-legend'>Cells hatched blue and labelled "
                '<span class="emu-label">emulated</span> ran on an emulated CPU (qemu user mode '
                "on another architecture): their figures are shown but never coloured, starred "
                f"or tied.<ul>{notes}</ul></div>"
            )
        software = software_devices(group)
        if software:
            notes = "".join(f"<li>{esc(software_note(d, n))}</li>" for d, n in software.items())
            body.append(
                "<div class='muted emu-legend'>Cells hatched blue and labelled "
                '<span class="emu-label">software</span> ran on a software GPU (Mesa lavapipe, '
                "pocl): their outputs are checked, their figures never coloured, starred or "
                f"tied.<ul>{notes}</ul></div>"
            )
        body.append("<h3>cells</h3>")
        expand = len(records) <= EXPAND_UP_TO
        body.extend(_details(r, anchors[id(r)], expand) for r in group)
        body.append("</section>")

    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>edgebench report {esc(run_id)}</title>"
        f"<style>{_CSS}{BREAKDOWN_CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )
