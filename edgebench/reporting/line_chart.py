"""The reports' line chart, drawn with the chart engine (``reporting/svg.py``): the HTML
report's latency CDF and telemetry traces, the history trend of one cell across runs (a
standalone .svg file), and the breakdown sections' memory and input-size charts
(``breakdown_charts.py``). A chart of figures measured on an emulated CPU is drawn on a hatched
plot area (an SVG pattern fill) labelled "emulated CPU"; a history point from an emulated run
is a hollow marker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from edgebench.reporting import svg
from edgebench.reporting.svg import PALETTE, esc
from edgebench.reporting.tables import fmt_number

_FAILED = "#d62728"
#: The hatch of emulated figures, as in the HTML report's emulated cells.
_EMULATED_STRIPE, _EMULATED_INK = "#c9d8ef", "#1d3f6e"


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
        if y is not None and svg.placeable(x, y, log_x)
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
    if y1 == y0:
        y0, y1 = svg.padded(y0, y1, 0.05)
    f = svg.Frame(
        left, top, width - left - right, height - top - axis, x0 - pad, x1 + pad, y0, y1, log_x
    )
    out = [svg.open_svg("chart", width, total, label=title, standalone=standalone)]
    out.append(svg.heading(width, total, left, title))
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
    out += svg.axes(
        f, ticks or _numbered(f), y_label=y_label, x_label=x_label, label_at=height - 6, slant=slant
    )
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
    keys = [
        svg.Key(s.label, s.colour or PALETTE[i % len(PALETTE)], s.dashed)
        for i, s in enumerate(series)
    ]
    for s, key in zip(series, keys, strict=True):
        out += _series(s, key.colour, f, step, markers)
    if legend_below:
        out += svg.legend(f, keys, below_at=height + 14)
    elif len(series) > 1:
        out += svg.legend(f, keys)
    if hatch:
        out.append(
            f'<text x="{f.right - 4}" y="{f.bottom - 6}" text-anchor="end" '
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


def _numbered(f: svg.Frame) -> list[tuple[float, str]]:
    """Round x values as the ticks of a chart that names no x positions of its own (on a log
    axis, round logarithms)."""
    values = svg.nice_ticks(f.x0, f.x1, 4)
    if f.log_x:
        values = [10**v for v in values]
    return [(v, fmt_number(v)) for v in values]


def _series(s: Series, colour: str, f: svg.Frame, step: bool, markers: bool) -> list[str]:
    """One series: its line (runs between the points that cannot be drawn, a staircase with
    ``step``; a lone point without markers is a small dot) and its markers."""
    out = []
    for run in svg.runs(f, zip(s.xs, s.ys, strict=False)):
        if len(run) == 1 and not markers:
            ((lone_x, lone_y),) = run
            out.append(
                f'<circle cx="{f.sx(lone_x):.1f}" cy="{f.sy(lone_y):.1f}" r="2" fill="{colour}"/>'
            )
        elif len(run) > 1:
            line = svg.staircase(run) if step else run
            out.append(svg.polyline(f, line, colour, 1.5, dashed=s.dashed, title=s.label))
    if markers:
        tips = s.tips or [s.label] * len(s.xs)
        hollow = s.hollow or [s.dashed] * len(s.xs)
        for x, y, tip, empty in zip(s.xs, s.ys, tips, hollow, strict=False):
            if y is not None and f.placeable(x, y):
                fill = f'fill="#fff" stroke="{colour}"' if empty else f'fill="{colour}"'
                out.append(
                    f'<circle cx="{f.sx(x):.1f}" cy="{f.sy(y):.1f}" r="3" {fill}>'
                    f"<title>{esc(tip)}</title></circle>"
                )
    return out
