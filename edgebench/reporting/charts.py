"""SVG charts drawn in Python: nothing is fetched, so a page or file shows them offline.

One line chart serves every plot: the HTML report's latency CDF and telemetry traces, and the
history trend of one cell across runs (written as a standalone .svg file). A chart of figures
measured on an emulated CPU is drawn on a hatched plot area (an SVG pattern fill) labelled
"emulated CPU"; a history point from an emulated run is a hollow marker.
All text is escaped: model, device and run names are untrusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from edgebench.analysis.history import HistoryPoint
from edgebench.reporting.tables import fmt_number

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_FAILED = "#d62728"
#: The hatch of emulated figures, as in the HTML report's emulated cells.
_EMULATED_STRIPE, _EMULATED_INK = "#c9d8ef", "#1d3f6e"


def esc(value: Any) -> str:
    """Text for HTML/SVG content or a quoted attribute ("" for None)."""
    return escape("" if value is None else str(value), quote=True)


@dataclass
class Series:
    label: str
    xs: list[float]
    ys: list[float | None]
    #: Tooltips of the point markers (``markers=True``), one per point.
    tips: list[str] | None = None
    #: Points drawn as hollow markers (``markers=True``): figures from an emulated CPU.
    hollow: list[bool] | None = None


def _segments(s: Series, sx: Any, sy: Any, step: bool) -> list[list[str]]:
    """Polyline point lists of a series; None in ys starts a new segment."""
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
    return segments


def line_chart(
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
    x_range: tuple[float, float] | None = None,
    x_labels: Sequence[tuple[float, str]] = (),
    markers: bool = False,
    crosses: Sequence[tuple[float, str]] = (),
    standalone: bool = False,
    hatch: str = "",
) -> str:
    """A line chart; None in ys breaks the line. ``shade`` marks an x range, ``vlines`` label
    x positions. ``x_labels`` replaces the numeric x ticks by slanted labels, ``markers`` puts
    a dot with a tooltip on every point, ``crosses`` are red marks on the x axis (with a
    tooltip) and ``standalone`` makes the SVG a file of its own (XML namespace). ``hatch``, an
    id unique in the page, hatches the plot area and labels it "emulated CPU". The axes span
    the data, widened to ``x_range`` and ``y_range`` where given."""
    points = [(x, y) for s in series for x, y in zip(s.xs, s.ys, strict=False) if y is not None]
    xs = [p[0] for p in points] + [x for x, _ in crosses] + [x for x, _ in x_labels]
    left, right, top = 56, 12, 22
    bottom = 90 if x_labels else 40
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(p[1] for p in points), max(p[1] for p in points)) if points else (0.0, 1.0)
    if shade:
        x0, x1 = min(x0, shade[0]), max(x1, shade[1])
    if y_range:
        y0, y1 = min(y0, y_range[0]), max(y1, y_range[1])
    if x_range:
        x0, x1 = min(x0, x_range[0]), max(x1, x_range[1])
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 == y0:
        pad = abs(y0) * 0.05 or 0.5
        y0, y1 = y0 - pad, y1 + pad

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    # Inline, the page's CSS sets the font; a file of its own says it itself.
    namespace = (
        ' xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="11"'
        if standalone
        else ""
    )
    out = [
        f'<svg{namespace} class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<text x="{left}" y="14" style="font-weight:600">{esc(title)}</text>',
    ]
    if shade:
        a, b = sx(shade[0]), sx(shade[1])
        out.append(
            f'<rect x="{a:.1f}" y="{top}" width="{max(b - a, 1):.1f}" height="{ph}" '
            'fill="#fff3c4"><title>timed window</title></rect>'
        )
    if hatch:
        out.append(
            f'<defs><pattern id="{esc(hatch)}" width="8" height="8" '
            'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            f'<rect width="4" height="8" fill="{_EMULATED_STRIPE}"/></pattern></defs>'
            f'<rect class="emu-hatch" x="{left}" y="{top}" width="{pw}" height="{ph}" '
            f'fill="url(#{esc(hatch)})"><title>emulated CPU: for correctness only</title></rect>'
        )
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        yv = y0 + frac * (y1 - y0)
        yy = sy(yv)
        out.append(
            f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{left - 4}" y="{yy + 4:.1f}" text-anchor="end">{esc(fmt_number(yv))}</text>'
        )
    for xv, label in x_labels:
        xx, ty = sx(xv), top + ph + 14
        out.append(
            f'<text x="{xx:.1f}" y="{ty}" text-anchor="end" '
            f'transform="rotate(-35 {xx:.1f} {ty})">{esc(label)}</text>'
        )
    for frac in () if x_labels else (0.0, 0.5, 1.0):
        xv = x0 + frac * (x1 - x0)
        anchor = ("start", "middle", "end")[int(frac * 2)]
        out.append(
            f'<text x="{sx(xv):.1f}" y="{top + ph + 14}" text-anchor="{anchor}">'
            f"{esc(fmt_number(xv))}</text>"
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>'
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle">{esc(x_label)}</text>'
        f'<text x="12" y="{top + ph / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + ph / 2:.1f})">{esc(y_label)}</text>'
    )
    for xv, label in vlines:
        xx = sx(xv)
        out.append(
            f'<line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" y2="{top + ph}" stroke="#888" '
            f'stroke-dasharray="3,3"/><text x="{xx + 2:.1f}" y="{top + 10}">{esc(label)}</text>'
        )
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        for seg in _segments(s, sx, sy, step):
            if len(seg) == 1 and not markers:
                cx, cy = seg[0].split(",")
                out.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
            elif len(seg) > 1:
                out.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                    f'points="{" ".join(seg)}"><title>{esc(s.label)}</title></polyline>'
                )
        if markers:
            tips = s.tips or [s.label] * len(s.xs)
            hollow = s.hollow or [False] * len(s.xs)
            for x, y, tip, empty in zip(s.xs, s.ys, tips, hollow, strict=False):
                if y is not None:
                    fill = f'fill="#fff" stroke="{colour}"' if empty else f'fill="{colour}"'
                    out.append(
                        f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" {fill}>'
                        f"<title>{esc(tip)}</title></circle>"
                    )
        if len(series) > 1:
            ly = top + 12 + 13 * i
            out.append(
                f'<rect x="{left + pw - 110}" y="{ly - 8}" width="8" height="8" fill="{colour}"/>'
                f'<text x="{left + pw - 98}" y="{ly}">{esc(s.label[:16])}</text>'
            )
    if hatch:
        out.append(
            f'<text x="{left + pw - 4}" y="{top + ph - 6}" text-anchor="end" '
            f'style="fill:{_EMULATED_INK};font-weight:600">emulated CPU</text>'
        )
    for xv, tip in crosses:
        xx, yy = sx(xv), top + ph
        out.append(
            f'<path d="M{xx - 4:.1f},{yy - 4:.1f} l8,8 m0,-8 l-8,8" stroke="{_FAILED}" '
            f'stroke-width="2"><title>{esc(tip)}</title></path>'
        )
    out.append("</svg>")
    return "".join(out)


def latency_cdf_svg(
    samples_ns: Sequence[int], latency_ms: Mapping[str, float] | None, *, hatch: str = ""
) -> str:
    """Empirical CDF of the per-iteration latencies (ms); ``hatch`` (an id unique in the page)
    for samples from an emulated CPU."""
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
    return line_chart(
        f"latency CDF ({n} samples{', emulated CPU' if hatch else ''})",
        [Series("CDF", xs, ys)],
        "latency (ms)",
        "fraction",
        step=True,
        vlines=marks,
        y_range=(0.0, 1.0),
        hatch=hatch,
    )


def telemetry_svgs(telemetry: Mapping[str, Any] | None, *, hatch: str = "") -> list[str]:
    """Temperature, CPU frequency and power traces, x in seconds from the first sample;
    ``hatch`` (an id prefix unique in the page) for a cell measured on an emulated CPU."""
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

    def hatched(chart: str) -> str:
        return f"{hatch}-{chart}" if hatch else ""

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
        charts.append(
            line_chart("temperature", temps, "time (s)", "°C", shade=shade, hatch=hatched("t"))
        )
    freqs = series(telemetry.get("freq_khz"), 1e-3)
    if freqs:
        charts.append(
            line_chart("CPU frequency", freqs, "time (s)", "MHz", shade=shade, hatch=hatched("f"))
        )
    power = telemetry.get("power_w")
    if isinstance(power, list) and any(p is not None for p in power):
        ys = [None if p is None else float(p) for p in power[: len(xs)]]
        charts.append(
            line_chart(
                "power",
                [Series("power", xs[: len(ys)], ys)],
                "time (s)",
                "W",
                shade=shade,
                hatch=hatched("p"),
            )
        )
    return [c for c in charts if c]


def history_svg(points: Sequence[HistoryPoint], *, title: str = "", unit: str = "") -> str:
    """One cell's metric across runs: per series (precision, ...) a dot per ok run joined by a
    line (hollow for a run measured on an emulated CPU), a red cross on the x axis for a run
    without an ok value; each run labelled by its date (or id)."""
    runs = list(dict.fromkeys(p.run_id for p in points))
    x_of = {run_id: float(i) for i, run_id in enumerate(runs)}
    first = {p.run_id: p for p in reversed(points)}
    values = [p.value for p in points if p.value is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    trends = []
    for name in dict.fromkeys(p.series for p in points):
        ok = [p for p in points if p.series == name and p.value is not None]
        trends.append(
            Series(
                name or "history",
                [x_of[p.run_id] for p in ok],
                [p.value for p in ok],
                tips=[
                    f"{p.run_id}{f' {name}' if name else ''}: {p.value:.4g}"
                    + (" (emulated CPU: correctness only)" if p.emulated else "")
                    for p in ok
                ],
                hollow=[p.emulated for p in ok],
            )
        )
    return line_chart(
        title or "history",
        trends,
        "",
        unit,
        width=720,
        height=360,
        x_range=(-0.5, len(runs) - 0.5),
        y_range=(max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad),
        x_labels=[(x_of[r], (first[r].created_at or r)[:19]) for r in runs],
        markers=True,
        crosses=[
            (x_of[p.run_id], f"{p.run_id}{f' {p.series}' if p.series else ''}: {p.status}")
            for p in points
            if p.value is None
        ],
        standalone=True,
    )


def plot_history(
    points: Sequence[HistoryPoint], path: Path, *, title: str = "", unit: str = ""
) -> Path:
    """Write ``history_svg`` as a self-contained .svg file; returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history_svg(points, title=title, unit=unit) + "\n", encoding="utf-8")
    return path
