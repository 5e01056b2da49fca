"""SVG line charts drawn in Python: nothing is fetched, so a page or file shows them offline.

``line_chart`` is the one engine for every line plot of the reports: the HTML report's latency
CDF and telemetry traces, the history trend of one cell across runs (a standalone .svg file),
and the breakdown sections' memory and input-size charts (``breakdown_charts.py``). A chart of
figures measured on an emulated CPU is drawn on a hatched plot area (an SVG pattern fill)
labelled "emulated CPU"; a history point from an emulated run is a hollow marker.
All text is escaped: model, device and run names are untrusted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from edgebench.reporting.tables import fmt_number

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_FAILED = "#d62728"
_DASH = "6,4"
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
    #: The line's colour; None takes the palette's colour of the series' position.
    colour: str | None = None
    #: A dashed line with hollow markers (a variant drawn beside the solid line of its colour).
    dashed: bool = False


@dataclass
class Mark:
    """A highlighted step between two points, with a ring on its end and a tooltip."""

    x0: float
    y0: float
    x1: float
    y1: float
    tip: str


@dataclass
class _Frame:
    """The plot area inside the chart, and data -> pixel positions."""

    left: float
    top: float
    width: float
    height: float
    x0: float
    x1: float
    y0: float
    y1: float
    log_x: bool

    def tx(self, x: float) -> float:
        return math.log10(x) if self.log_x else x

    def sx(self, x: float) -> float:
        return self.left + (self.tx(x) - self.x0) / (self.x1 - self.x0) * self.width

    def sy(self, y: float) -> float:
        return self.top + self.height - (y - self.y0) / (self.y1 - self.y0) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height


def _plotted(x: float, y: float | None, log_x: bool) -> bool:
    return y is not None and (x > 0 or not log_x)


def _segments(s: Series, f: _Frame, step: bool) -> list[list[str]]:
    """Polyline point lists of a series; a point that cannot be drawn (None, or x <= 0 on a log
    axis) starts a new segment."""
    segments: list[list[str]] = [[]]
    prev_y: float | None = None
    for x, y in zip(s.xs, s.ys, strict=False):
        if y is None or not _plotted(x, y, f.log_x):
            if segments[-1]:
                segments.append([])
            prev_y = None
            continue
        if step and prev_y is not None:
            segments[-1].append(f"{f.sx(x):.1f},{f.sy(prev_y):.1f}")
        segments[-1].append(f"{f.sx(x):.1f},{f.sy(y):.1f}")
        prev_y = y
    return segments


def _legend_item(x: float, y: float, colour: str, dashed: bool, label: str) -> str:
    dash = f' stroke-dasharray="{_DASH}"' if dashed else ""
    return (
        f'<line x1="{x:.1f}" y1="{y - 4}" x2="{x + 26:.1f}" y2="{y - 4}" stroke="{colour}" '
        f'stroke-width="2"{dash}/><text x="{x + 32:.1f}" y="{y}">{esc(label)}</text>'
    )


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
    x_ticks: Sequence[tuple[float, str]] = (),
    log_x: bool = False,
    x_pad: float = 0.0,
    markers: bool = False,
    crosses: Sequence[tuple[float, str]] = (),
    marks: Sequence[Mark] = (),
    legend_below: bool = False,
    standalone: bool = False,
    hatch: str = "",
) -> str:
    """The one SVG line chart of edgebench's reports; None in ys breaks a line.

    Axes: they span the data, widened to ``x_range``/``y_range`` (and ``shade``) where given;
    ``x_pad`` adds that share of the x span on both sides, ``log_x`` spaces x by its logarithm
    (points with x <= 0 are left out). ``x_ticks`` label x positions (slanted when some label
    is long) instead of three numeric ticks.
    Lines: a series has its own colour or the palette's, solid or ``dashed``; ``step`` draws a
    staircase (a CDF); ``markers`` puts a dot with a tooltip on every point (hollow for a
    dashed series or a ``hollow`` point). With several series a legend names them, in the
    top-right corner or, ``legend_below``, under the chart (``height`` grows by it).
    Marks: ``shade`` an x range (the timed window), ``vlines`` labelled x positions, ``marks``
    red steps with a ring on their end, ``crosses`` red marks on the x axis (with a tooltip).
    ``hatch``, an id unique in the page, hatches the plot area and labels it "emulated CPU";
    ``standalone`` makes the SVG a file of its own (XML namespace and font)."""
    tx = math.log10 if log_x else float
    points = [
        (x, y)
        for s in series
        for x, y in zip(s.xs, s.ys, strict=False)
        if y is not None and _plotted(x, y, log_x)
    ]
    ticks = [(x, label) for x, label in x_ticks if x > 0 or not log_x]
    xs = [tx(x) for x, _ in points] + [tx(x) for x, _ in crosses] + [tx(x) for x, _ in ticks]
    longest = max((len(label) for _, label in ticks), default=0)
    slant = longest > 4
    left, right, top = 56, 12, 22
    # Under the plot: the x tick labels (slanted at 35 degrees, ~3.4 px of height per
    # character), then the x axis label.
    axis = min(90, 36 + round(3.4 * longest)) if slant else 36
    rows = (len(series) + 1) // 2 if legend_below else 0
    total = height + (14 + 14 * rows if rows else 0)
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(p[1] for p in points), max(p[1] for p in points)) if points else (0.0, 1.0)
    if shade:
        x0, x1 = min(x0, tx(shade[0])), max(x1, tx(shade[1]))
    if y_range:
        y0, y1 = min(y0, y_range[0]), max(y1, y_range[1])
    if x_range:
        x0, x1 = min(x0, tx(x_range[0])), max(x1, tx(x_range[1]))
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    pad = (x1 - x0) * x_pad
    x0, x1 = x0 - pad, x1 + pad
    if y1 == y0:
        grow = abs(y0) * 0.05 or 0.5
        y0, y1 = y0 - grow, y1 + grow
    f = _Frame(left, top, width - left - right, height - top - axis, x0, x1, y0, y1, log_x)

    # Inline, the page's CSS sets the font; a file of its own says it itself.
    namespace = (
        ' xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="11"'
        if standalone
        else ""
    )
    out = [
        f'<svg{namespace} class="chart" width="{width}" height="{total}" '
        f'viewBox="0 0 {width} {total}" role="img" aria-label="{esc(title)}">',
        f'<rect x="0" y="0" width="{width}" height="{total}" fill="#fff"/>',
        f'<text x="{left}" y="14" style="font-weight:600">{esc(title)}</text>',
    ]
    if shade:
        a, b = f.sx(shade[0]), f.sx(shade[1])
        out.append(
            f'<rect x="{a:.1f}" y="{top}" width="{max(b - a, 1):.1f}" height="{f.height}" '
            'fill="#fff3c4"><title>timed window</title></rect>'
        )
    if hatch:
        out.append(
            f'<defs><pattern id="{esc(hatch)}" width="8" height="8" '
            'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            f'<rect width="4" height="8" fill="{_EMULATED_STRIPE}"/></pattern></defs>'
            f'<rect class="emu-hatch" x="{left}" y="{top}" width="{f.width}" height="{f.height}" '
            f'fill="url(#{esc(hatch)})"><title>emulated CPU: for correctness only</title></rect>'
        )
    out += _axes(f, ticks, slant, x_label, y_label, height)
    for xv, label in vlines:
        xx = f.sx(xv)
        out.append(
            f'<line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" y2="{f.bottom}" stroke="#888" '
            f'stroke-dasharray="3,3"/><text x="{xx + 2:.1f}" y="{top + 10}">{esc(label)}</text>'
        )
    for m in marks:
        out.append(
            f'<line x1="{f.sx(m.x0):.1f}" y1="{f.sy(m.y0):.1f}" x2="{f.sx(m.x1):.1f}" '
            f'y2="{f.sy(m.y1):.1f}" stroke="{_FAILED}" stroke-width="7" stroke-opacity="0.25" '
            f'stroke-linecap="round"><title>{esc(m.tip)}</title></line>'
        )
    for i, s in enumerate(series):
        out += _series(s, s.colour or PALETTE[i % len(PALETTE)], f, step, markers)
    for i, s in enumerate(series):
        colour = s.colour or PALETTE[i % len(PALETTE)]
        if legend_below:
            x, y = left + (i % 2) * (f.width / 2), height + 14 + 14 * (i // 2)
            out.append(_legend_item(x, y, colour, s.dashed, s.label[:40]))
        elif len(series) > 1:
            x, y = left + f.width - 124, top + 12 + 13 * i
            out.append(_legend_item(x, y, colour, s.dashed, s.label[:16]))
    if hatch:
        out.append(
            f'<text x="{left + f.width - 4}" y="{f.bottom - 6}" text-anchor="end" '
            f'style="fill:{_EMULATED_INK};font-weight:600">emulated CPU</text>'
        )
    for m in marks:
        out.append(
            f'<circle class="cliff" cx="{f.sx(m.x1):.1f}" cy="{f.sy(m.y1):.1f}" r="7" '
            f'fill="none" stroke="{_FAILED}" stroke-width="2"><title>{esc(m.tip)}</title></circle>'
        )
    for xv, tip in crosses:
        xx, yy = f.sx(xv), f.bottom
        out.append(
            f'<path d="M{xx - 4:.1f},{yy - 4:.1f} l8,8 m0,-8 l-8,8" stroke="{_FAILED}" '
            f'stroke-width="2"><title>{esc(tip)}</title></path>'
        )
    out.append("</svg>")
    return "".join(out)


def _axes(
    f: _Frame,
    ticks: Sequence[tuple[float, str]],
    slant: bool,
    x_label: str,
    y_label: str,
    height: int,
) -> list[str]:
    """Grid lines with the y values, the x ticks, the plot's frame and the axis labels."""
    out = []
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        yv = f.y0 + frac * (f.y1 - f.y0)
        yy = f.sy(yv)
        out.append(
            f'<line x1="{f.left}" y1="{yy:.1f}" x2="{f.left + f.width}" y2="{yy:.1f}" '
            f'stroke="#eee"/><text x="{f.left - 4}" y="{yy + 4:.1f}" text-anchor="end">'
            f"{esc(fmt_number(yv))}</text>"
        )
    for xv, label in ticks:
        xx, ty = f.sx(xv), f.bottom + 14
        turn = f' transform="rotate(-35 {xx:.1f} {ty})"' if slant else ""
        out.append(
            f'<line x1="{xx:.1f}" y1="{f.bottom}" x2="{xx:.1f}" y2="{f.bottom + 4}" '
            f'stroke="#999"/><text x="{xx:.1f}" y="{ty}" '
            f'text-anchor="{"end" if slant else "middle"}"{turn}>{esc(label)}</text>'
        )
    for frac in () if ticks else (0.0, 0.5, 1.0):
        xv = f.x0 + frac * (f.x1 - f.x0)
        anchor = ("start", "middle", "end")[int(frac * 2)]
        out.append(
            f'<text x="{f.left + frac * f.width:.1f}" y="{f.bottom + 14}" text-anchor="{anchor}">'
            f"{esc(fmt_number(10**xv if f.log_x else xv))}</text>"
        )
    middle = f.top + f.height / 2
    out.append(
        f'<rect x="{f.left}" y="{f.top}" width="{f.width}" height="{f.height}" fill="none" '
        f'stroke="#999"/><text x="{f.left + f.width / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">{esc(x_label)}</text>'
        f'<text x="12" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {middle:.1f})">{esc(y_label)}</text>'
    )
    return out


def _series(s: Series, colour: str, f: _Frame, step: bool, markers: bool) -> list[str]:
    """One series: its line (segments between the points that cannot be drawn; a lone point
    without markers is a small dot) and its markers."""
    out = []
    dash = f' stroke-dasharray="{_DASH}"' if s.dashed else ""
    for seg in _segments(s, f, step):
        if len(seg) == 1 and not markers:
            cx, cy = seg[0].split(",")
            out.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
        elif len(seg) > 1:
            out.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} '
                f'points="{" ".join(seg)}"><title>{esc(s.label)}</title></polyline>'
            )
    if markers:
        tips = s.tips or [s.label] * len(s.xs)
        hollow = s.hollow or [s.dashed] * len(s.xs)
        for x, y, tip, empty in zip(s.xs, s.ys, tips, hollow, strict=False):
            if y is not None and _plotted(x, y, f.log_x):
                fill = f'fill="#fff" stroke="{colour}"' if empty else f'fill="{colour}"'
                out.append(
                    f'<circle cx="{f.sx(x):.1f}" cy="{f.sy(y):.1f}" r="3" {fill}>'
                    f"<title>{esc(tip)}</title></circle>"
                )
    return out
