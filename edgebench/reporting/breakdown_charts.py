"""The SVG of the breakdown sections: a stacked bar per stage breakdown, and line charts whose
lines carry their own colour and dash (memory vs instances, latency vs input size).

``charts.line_chart`` colours a line by its index and draws every line solid; these charts
need one colour per framework with a solid and a dashed line in it, a legend that shows the
dash, a log axis and marked segments (cliffs), so they are drawn here on the same conventions
(inline SVG, page CSS for fonts, every text escaped with ``charts.esc``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from edgebench.analysis.breakdowns import (
    STAGES,
    UNATTRIBUTED,
    StageSummary,
)
from edgebench.reporting.charts import PALETTE, esc
from edgebench.reporting.tables import fmt_number

STAGE_LABELS = {
    "copy_in": "copy-in",
    "compute": "compute",
    "copy_out": "copy-out",
    UNATTRIBUTED: "unattributed",
}
STAGE_COLOURS = {
    "copy_in": "#ff7f0e",
    "compute": "#1f77b4",
    "copy_out": "#2ca02c",
    UNATTRIBUTED: "#bbbbbb",
}
_CLIFF = "#d62728"
_DASH = "6,4"


def colours_for(keys: Iterable[object]) -> dict[object, str]:
    """One palette colour per distinct key, in order of first appearance."""
    distinct = list(dict.fromkeys(keys))
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(distinct)}


def stage_bar_svg(summary: StageSummary, *, width: int = 180, height: int = 14) -> str:
    """The iteration as one 100% bar, a segment per stage (and the unattributed rest)."""
    if not summary.shares:
        return ""
    out = [
        f'<svg class="stagebar" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="stages">'
    ]
    x = 0.0
    for stage in (*STAGES, UNATTRIBUTED):
        share = summary.shares.get(stage)
        if not share:
            continue
        ms = summary.p50_ms.get(stage, summary.remainder_ms)
        w = share * width
        tip = f"{STAGE_LABELS[stage]}: {fmt_number(ms, 'ms')} ({share:.0%})"
        out.append(
            f'<rect x="{x:.1f}" y="0" width="{max(w, 0.5):.1f}" height="{height}" '
            f'fill="{STAGE_COLOURS[stage]}"><title>{esc(tip)}</title></rect>'
        )
        x += w
    out.append("</svg>")
    return "".join(out)


def stage_legend() -> str:
    """The stage colours, as a line of HTML."""
    return "".join(
        f'<span class="swatch" style="background:{STAGE_COLOURS[s]}"></span>{esc(label)}'
        for s, label in STAGE_LABELS.items()
    )


@dataclass
class Line:
    label: str
    xs: list[float]
    ys: list[float | None]
    colour: str
    dashed: bool = False
    #: Tooltips of the point markers, one per point.
    tips: list[str] | None = None


@dataclass
class Mark:
    """A highlighted step between two points, with a ring on its end and a tooltip."""

    x0: float
    y0: float
    x1: float
    y1: float
    tip: str


def lines_chart(
    title: str,
    lines: Sequence[Line],
    x_label: str,
    y_label: str,
    *,
    x_ticks: Sequence[tuple[float, str]] = (),
    log_x: bool = False,
    marks: Sequence[Mark] = (),
    width: int = 520,
    height: int = 240,
) -> str:
    """A line chart with a dot (and tooltip) on every point, y from 0, and a legend below
    ``height`` that shows each line's colour and dash; ``x_ticks`` label x positions (slanted
    when long), ``log_x`` spaces x by its logarithm (x must be positive), ``marks`` are red
    steps."""
    points = [
        (x, y)
        for line in lines
        for x, y in zip(line.xs, line.ys, strict=False)
        if y is not None and (x > 0 or not log_x)
    ]
    if not points:
        return ""
    tx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    xs = [tx(x) for x, _ in points] + [tx(x) for x, _ in x_ticks if x > 0 or not log_x]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    pad = (x1 - x0) * 0.04
    x0, x1 = x0 - pad, x1 + pad
    y1 = max(y for _, y in points) * 1.08 or 1.0
    # Slanted tick labels only when some are long; the legend goes under the x axis label.
    slant = any(len(label) > 4 for _, label in x_ticks)
    left, right, top = 56, 14, 22
    axis = 66 if slant else 36
    plot_h = height - top - axis
    pw = width - left - right
    base = top + plot_h
    legend_top = base + axis + 14
    total_h = legend_top + 14 * ((len(lines) + 1) // 2)

    def sx(x: float) -> float:
        return left + (tx(x) - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + plot_h - y / y1 * plot_h

    out = [
        f'<svg class="chart" width="{width}" height="{total_h}" viewBox="0 0 {width} {total_h}" '
        f'role="img" aria-label="{esc(title)}">',
        f'<rect x="0" y="0" width="{width}" height="{total_h}" fill="#fff"/>',
        f'<text x="{left}" y="14" style="font-weight:600">{esc(title)}</text>',
    ]
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        yy = sy(frac * y1)
        out.append(
            f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{left - 4}" y="{yy + 4:.1f}" text-anchor="end">'
            f"{esc(fmt_number(frac * y1))}</text>"
        )
    if x_ticks:
        for xv, label in x_ticks:
            if log_x and xv <= 0:
                continue
            xx, ty = sx(xv), base + 14
            turn = f' transform="rotate(-35 {xx:.1f} {ty})"' if slant else ""
            out.append(
                f'<line x1="{xx:.1f}" y1="{base}" x2="{xx:.1f}" y2="{base + 4}" stroke="#999"/>'
                f'<text x="{xx:.1f}" y="{ty}" text-anchor="{"end" if slant else "middle"}"{turn}>'
                f"{esc(label)}</text>"
            )
    else:
        for frac, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
            xv = x0 + frac * (x1 - x0)
            shown = 10**xv if log_x else xv
            out.append(
                f'<text x="{left + frac * pw:.1f}" y="{base + 14}" text-anchor="{anchor}">'
                f"{esc(fmt_number(shown))}</text>"
            )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{plot_h}" fill="none" stroke="#999"/>'
        f'<text x="{left + pw / 2:.1f}" y="{base + axis - 6}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
        f'<text x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{esc(y_label)}</text>'
    )
    for m in marks:
        out.append(
            f'<line x1="{sx(m.x0):.1f}" y1="{sy(m.y0):.1f}" x2="{sx(m.x1):.1f}" '
            f'y2="{sy(m.y1):.1f}" stroke="{_CLIFF}" stroke-width="7" stroke-opacity="0.25" '
            f'stroke-linecap="round"><title>{esc(m.tip)}</title></line>'
        )
    for line in lines:
        dash = f' stroke-dasharray="{_DASH}"' if line.dashed else ""
        kept = [
            (x, y, tip)
            for x, y, tip in zip(
                line.xs, line.ys, line.tips or [line.label] * len(line.xs), strict=False
            )
            if y is not None and (x > 0 or not log_x)
        ]
        if len(kept) > 1:
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _ in kept)
            out.append(
                f'<polyline fill="none" stroke="{line.colour}" stroke-width="1.8"{dash} '
                f'points="{coords}"><title>{esc(line.label)}</title></polyline>'
            )
        fill = "#fff" if line.dashed else line.colour
        for x, y, tip in kept:
            out.append(
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{fill}" '
                f'stroke="{line.colour}"><title>{esc(tip)}</title></circle>'
            )
    for m in marks:
        out.append(
            f'<circle class="cliff" cx="{sx(m.x1):.1f}" cy="{sy(m.y1):.1f}" r="7" fill="none" '
            f'stroke="{_CLIFF}" stroke-width="2"><title>{esc(m.tip)}</title></circle>'
        )
    for i, line in enumerate(lines):
        lx = left + (i % 2) * (pw / 2)
        ly = legend_top + 14 * (i // 2)
        dash = f' stroke-dasharray="{_DASH}"' if line.dashed else ""
        out.append(
            f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 26:.1f}" y2="{ly - 4}" '
            f'stroke="{line.colour}" stroke-width="2"{dash}/>'
            f'<text x="{lx + 32:.1f}" y="{ly}">{esc(line.label[:40])}</text>'
        )
    out.append("</svg>")
    return "".join(out)
