"""One self-contained HTML report for a run: heatmap tables and per-cell inline SVG charts.

The page works offline: no scripts, fonts, images or stylesheets are fetched (a Content
Security Policy forbids it), the CSS is inline and every chart is SVG generated here.
All text from records and metadata is escaped: model and device names are untrusted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from edgebench import __version__
from edgebench.reporting.matrix import METRICS, SKIP_LABELS, Metric
from edgebench.results.records import Record

#: Metrics shown as heatmaps, in order (keys of matrix.METRICS).
HEATMAP_METRICS = ("p50", "p99", "throughput", "memory", "energy")
#: Small runs show every cell's details expanded; larger ones only the cells that went wrong.
EXPAND_UP_TO = 12

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")

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
.heat{display:flex;flex-wrap:wrap;gap:18px}.heat>div{flex:0 0 auto}
.cap{font-weight:600;font-size:13px}
details{border:1px solid #ccc;border-radius:4px;margin:8px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.status{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;background:#ddd}
.status.ok{background:#cdeccd}.status.failed,.status.mismatch{background:#f3c6c6}
.err{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;background:#f8f8f8;
padding:6px}
svg text{font:11px sans-serif;fill:#333}
.muted{color:#777}
"""

# Nothing may be loaded from anywhere: inline styles only, images as data: at most, no scripts.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    elif abs(value) >= 0.01 or value == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def _group_key(r: Record) -> tuple[str, str, int, str, int]:
    return (r.model, r.precision, r.threads, r.cores, r.concurrency)


def _group_title(key: tuple[str, str, int, str, int]) -> str:
    model, precision, threads, cores, concurrency = key
    parts = [model, precision, f"{threads} thread{'s' if threads != 1 else ''}", f"cores {cores}"]
    if concurrency != 1:
        parts.append(f"{concurrency} streams")
    return " · ".join(parts)


def _framework_order(records: Sequence[Record]) -> list[str]:
    try:
        from edgebench.runners.backends import KNOWN_FRAMEWORKS
    except ImportError:  # pragma: no cover - the runners package ships with edgebench
        KNOWN_FRAMEWORKS = ()
    present = list(dict.fromkeys(r.framework for r in records))
    known = [f for f in KNOWN_FRAMEWORKS if f in present]
    return known + [f for f in present if f not in known]


def _status_word(r: Record) -> str:
    if r.status == "skipped":
        return SKIP_LABELS.get(r.error_kind or "", "skipped")
    return r.status


# ---------------------------------------------------------------------------------------------
# SVG charts


@dataclass
class Series:
    label: str
    xs: list[float]
    ys: list[float | None]


def _nice(value: float) -> str:
    return _fmt(value)


def _line_chart(
    title: str,
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    *,
    width: int = 460,
    height: int = 220,
    step: bool = False,
    shade: tuple[float, float] | None = None,
    vlines: Sequence[tuple[float, str]] = (),
    y_range: tuple[float, float] | None = None,
) -> str:
    """A small line chart; None in ys breaks the line. ``shade`` marks an x range."""
    points = [(x, y) for s in series for x, y in zip(s.xs, s.ys, strict=False) if y is not None]
    if not points:
        return ""
    left, right, top, bottom = 56, 12, 22, 40
    pw, ph = width - left - right, height - top - bottom
    x0 = min(p[0] for p in points)
    x1 = max(p[0] for p in points)
    y0 = min(p[1] for p in points)
    y1 = max(p[1] for p in points)
    if shade:
        x0, x1 = min(x0, shade[0]), max(x1, shade[1])
    if y_range:
        y0, y1 = min(y0, y_range[0]), max(y1, y_range[1])
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 == y0:
        pad = abs(y0) * 0.05 or 0.5
        y0, y1 = y0 - pad, y1 + pad

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    out = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{_e(title)}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<text x="{left}" y="14" style="font-weight:600">{_e(title)}</text>',
    ]
    if shade:
        a, b = sx(shade[0]), sx(shade[1])
        out.append(
            f'<rect x="{a:.1f}" y="{top}" width="{max(b - a, 1):.1f}" height="{ph}" '
            'fill="#fff3c4"><title>timed window</title></rect>'
        )
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        yv = y0 + frac * (y1 - y0)
        yy = sy(yv)
        out.append(
            f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{left - 4}" y="{yy + 4:.1f}" text-anchor="end">{_e(_nice(yv))}</text>'
        )
    for frac in (0.0, 0.5, 1.0):
        xv = x0 + frac * (x1 - x0)
        anchor = ("start", "middle", "end")[int(frac * 2)]
        out.append(
            f'<text x="{sx(xv):.1f}" y="{top + ph + 14}" text-anchor="{anchor}">'
            f"{_e(_nice(xv))}</text>"
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>'
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle">{_e(x_label)}</text>'
        f'<text x="12" y="{top + ph / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + ph / 2:.1f})">{_e(y_label)}</text>'
    )
    for xv, label in vlines:
        xx = sx(xv)
        out.append(
            f'<line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" y2="{top + ph}" stroke="#888" '
            f'stroke-dasharray="3,3"/><text x="{xx + 2:.1f}" y="{top + 10}">{_e(label)}</text>'
        )
    for i, s in enumerate(series):
        colour = _PALETTE[i % len(_PALETTE)]
        segments: list[list[str]] = [[]]
        prev_y: float | None = None
        for x, y in zip(s.xs, s.ys, strict=False):
            if y is None:
                if segments[-1]:
                    segments.append([])
                prev_y = None
                continue
            if step and prev_y is not None:
                segments[-1].append(f"{sx(x):.1f},{sy(prev_y):.1f}")
            segments[-1].append(f"{sx(x):.1f},{sy(y):.1f}")
            prev_y = y
        for seg in segments:
            if len(seg) == 1:
                cx, cy = seg[0].split(",")
                out.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
            elif seg:
                out.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                    f'points="{" ".join(seg)}"><title>{_e(s.label)}</title></polyline>'
                )
        if len(series) > 1:
            ly = top + 12 + 13 * i
            out.append(
                f'<rect x="{left + pw - 110}" y="{ly - 8}" width="8" height="8" fill="{colour}"/>'
                f'<text x="{left + pw - 98}" y="{ly}">{_e(s.label[:16])}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def latency_cdf_svg(samples_ns: Sequence[int], latency_ms: Mapping[str, float] | None) -> str:
    """Empirical CDF of the per-iteration latencies (ms)."""
    if not samples_ns:
        return ""
    values = sorted(v / 1e6 for v in samples_ns)
    n = len(values)
    if n > 2000:  # keep the file small: ~2000 evenly spaced quantiles draw the same curve
        idx = [round(i * (n - 1) / 1999) for i in range(2000)]
        xs = [values[i] for i in idx]
        ys: list[float | None] = [(i + 1) / n for i in idx]
    else:
        xs = values
        ys = [(i + 1) / n for i in range(n)]
    marks = [
        (latency_ms[k], k) for k in ("p50", "p99") if latency_ms and latency_ms.get(k) is not None
    ]
    return _line_chart(
        f"latency CDF ({n} samples)",
        [Series("CDF", xs, ys)],
        "latency (ms)",
        "fraction",
        step=True,
        vlines=marks,
        y_range=(0.0, 1.0),
    )


def telemetry_svgs(telemetry: Mapping[str, Any] | None) -> list[str]:
    """Temperature, CPU frequency and power traces, x in seconds from the first sample."""
    if not telemetry:
        return []
    ts = telemetry.get("t_perf_ns") or []
    if len(ts) < 2:
        return []
    t0 = ts[0]
    xs = [(t - t0) / 1e9 for t in ts]
    marks = telemetry.get("marks") or {}
    shade = None
    if marks.get("window_start") is not None and marks.get("window_end") is not None:
        shade = ((marks["window_start"] - t0) / 1e9, (marks["window_end"] - t0) / 1e9)

    def series(data: Any, scale: float = 1.0) -> list[Series]:
        out = []
        for name, values in (data or {}).items():
            if not isinstance(values, list):
                continue
            ys = [None if v is None else float(v) * scale for v in values[: len(xs)]]
            if any(v is not None for v in ys):
                out.append(Series(str(name), xs[: len(ys)], ys))
        return out

    charts = []
    temps = series(telemetry.get("temp_c"))
    if temps:
        charts.append(_line_chart("temperature", temps, "time (s)", "°C", shade=shade))
    freqs = series(telemetry.get("freq_khz"), 1e-3)
    if freqs:
        charts.append(_line_chart("CPU frequency", freqs, "time (s)", "MHz", shade=shade))
    power = telemetry.get("power_w")
    if isinstance(power, list) and any(p is not None for p in power):
        ys = [None if p is None else float(p) for p in power[: len(xs)]]
        charts.append(
            _line_chart("power", [Series("power", xs[: len(ys)], ys)], "time (s)", "W", shade=shade)
        )
    return [c for c in charts if c]


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
    ok_values = [
        v
        for r in cells.values()
        if r.status == "ok" and (v := metric.value(r)) is not None and math.isfinite(v)
    ]
    lo, hi = (min(ok_values), max(ok_values)) if ok_values else (0.0, 0.0)
    arrow = "lower is better" if metric.lower_is_better else "higher is better"
    out = [
        '<div><div class="cap">'
        f"{_e(metric.title)} ({_e(metric.unit)}) <span class='muted'>{arrow}</span></div>",
        '<table class="heatmap"><thead><tr><th class="dev">device</th>',
        *(f"<th>{_e(f)}</th>" for f in frameworks),
        "</tr></thead><tbody>",
    ]
    for device in devices:
        row_vals = {
            f: v
            for f in frameworks
            if (r := cells.get((device, f))) is not None
            and r.status == "ok"
            and (v := metric.value(r)) is not None
            and math.isfinite(v)
        }
        best = None
        if len(row_vals) > 1:
            best = (min if metric.lower_is_better else max)(row_vals.values())
        out.append(f'<tr><td class="dev">{_e(device)}</td>')
        for framework in frameworks:
            r = cells.get((device, framework))
            if r is None:
                out.append('<td class="empty"></td>')
                continue
            link = anchors[id(r)]
            if r.status != "ok":
                tip = r.error or r.status
                out.append(
                    f'<td class="cell st st-{_e(r.status)}" title="{_e(tip)}">'
                    f'<a href="#{link}">{_e(_status_word(r))}</a></td>'
                )
                continue
            value = row_vals.get(framework)
            if value is None:
                out.append(f'<td class="cell"><a href="#{link}">-</a></td>')
                continue
            t = 0.0 if hi == lo else (value - lo) / (hi - lo)
            if not metric.lower_is_better:
                t = 1 - t
            star = " ★" if best is not None and value == best else ""
            out.append(
                f'<td class="cell" style="background:{_heat_colour(t)}" '
                f'title="{_e(f"{device} / {framework}: {_fmt(value, metric.unit)}")}">'
                f'<a href="#{link}">{_e(_fmt(value))}{star}</a></td>'
            )
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Per-cell details


def _kv_table(rows: Iterable[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta">{body}</table>' if body else ""


def _details(r: Record, anchor: str, expand: bool = False) -> str:
    lat = r.latency_ms or {}
    open_attr = " open" if expand or r.status != "ok" else ""
    out = [
        f'<details id="{anchor}"{open_attr}><summary>{_e(r.device)} / {_e(r.framework)} '
        f'<span class="status {_e(r.status)}">{_e(_status_word(r))}</span>',
        f" <span class='muted'>p50 {_e(_fmt(lat.get('p50'), 'ms'))}</span></summary>",
    ]
    if r.error:
        out.append(f'<div class="err">{_e(r.error)}</div>')
    stats = [
        (key, _fmt(lat.get(key), "ms"))
        for key in ("min", "p50", "p90", "p95", "p99", "mean", "std")
        if lat.get(key) is not None
    ]
    if lat.get("cv") is not None:
        stats.append(("cv", f"{lat['cv']:.1%}"))
    stats += [
        ("samples", r.n_samples or len(r.samples_ns) or "-"),
        ("throughput", _fmt(r.throughput_ips, "inf/s")),
        ("peak RSS", _fmt(r.peak_rss_mb, "MB")),
        ("energy / inference", _fmt(r.energy_mj_per_inf, "mJ")),
        ("average power", _fmt(r.avg_power_w, "W")),
        ("framework version", r.framework_version or "-"),
    ]
    charts = [latency_cdf_svg(r.samples_ns, lat), *telemetry_svgs(r.telemetry)]
    charts = [c for c in charts if c]
    if charts:
        out.append('<div class="charts">' + "".join(charts) + "</div>")
    else:
        out.append('<p class="muted">no latency samples or telemetry for this cell</p>')
    out.append("<h3>statistics</h3>" + _kv_table(stats))
    check = r.output_check
    if check:
        rows = [
            (k, check.get(k))
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
    if r.warnings:
        out.append(
            "<h3>warnings</h3><ul>" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings) + "</ul>"
        )
    if r.energy_flags:
        out.append(
            "<h3>energy flags</h3><ul>"
            + "".join(f"<li>{_e(f)}</li>" for f in r.energy_flags)
            + "</ul>"
        )
    if r.stderr_tail and r.status != "ok":
        out.append(f'<h3>stderr (tail)</h3><div class="err">{_e(r.stderr_tail)}</div>')
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
    rows = "".join(
        f"<tr><td>{_e(name)}</td><td>{_e(info.get('cpu_model') or '-')}</td>"
        f"<td>{_e(info.get('machine') or '-')}</td>"
        f"<td>{_e(' '.join(str(x) for x in (info.get('os'), info.get('kernel')) if x) or '-')}"
        "</td></tr>"
        for name, info in devices.items()
    )
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no cells"
    return (
        f"<h1>edgebench run {_e(run_id)}</h1>"
        + _kv_table(
            [
                ("run id", run_id),
                ("date", date),
                ("edgebench", version),
                ("cells", summary),
            ]
        )
        + '<h3>devices</h3><table class="meta"><thead><tr><th>device</th><th>CPU model</th>'
        f"<th>arch</th><th>OS</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def render_html(records: Sequence[Record], meta: Mapping[str, Any] | None = None) -> str:
    """The whole report as one HTML document (str) that needs nothing else to display."""
    meta = meta or {}
    run_id = meta.get("run_id") or (records[0].run_id if records else "")
    frameworks = _framework_order(records)
    groups: dict[tuple[str, str, int, str, int], list[Record]] = {}
    for record in records:
        groups.setdefault(_group_key(record), []).append(record)
    anchors = {id(r): f"cell-{i}" for i, r in enumerate(records)}

    body = [_header(records, meta)]
    if not records:
        body.append("<p>This run has no records.</p>")
    for key, group in groups.items():
        devices = list(dict.fromkeys(r.device for r in group))
        group_fw = [f for f in frameworks if any(r.framework == f for r in group)]
        cells = {(r.device, r.framework): r for r in group}
        body.append(f'<section class="model"><h2>{_e(_group_title(key))}</h2>')
        body.append(
            '<div class="heat">'
            + "".join(
                _heatmap(METRICS[m], devices, group_fw, cells, anchors) for m in HEATMAP_METRICS
            )
            + "</div>"
        )
        body.append(
            "<p class='muted'>Colour is scaled per table from best (green) to worst (red) over "
            "the cells that ran; ★ = best on the device; hatched cells did not produce a valid "
            "result (hover for the reason, click for details).</p>"
        )
        body.append("<h3>cells</h3>")
        expand = len(records) <= EXPAND_UP_TO
        body.extend(_details(r, anchors[id(r)], expand) for r in group)
        body.append("</section>")

    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>edgebench report {_e(run_id)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
