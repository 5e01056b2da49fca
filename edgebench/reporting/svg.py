"""edgebench's one SVG chart engine: escaping, the plot frame and its scales, nice ticks, axes,
paths and the legend. Every chart (the reports' line charts, the summary's bars, the stage bar,
the dashboard's history chart and sparklines) is drawn with these parts and only says what to
draw. Drawn in Python as inline SVG: no script, nothing fetched.
All text goes through ``esc``: model, device and run names are untrusted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from edgebench.reporting.tables import fmt_number

#: The line colours of series that have none of their own, by position.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
DASH = "6,4"
GRID, OUTLINE, TICK = "#eee", "#999", "#999"
#: Pixels under the plot to a tick label's baseline.
TICK_LABEL_DROP = 14

Point = tuple[float, float]


def esc(value: Any) -> str:
    """Text for HTML/SVG content or a quoted attribute ("" for None)."""
    return escape("" if value is None else str(value), quote=True)


def nice_step(span: float, count: int = 4) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) that cuts ``span`` into about
    ``count`` parts; 1 for a span that is not a positive number."""
    if not (span > 0 and math.isfinite(span)):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def nice_ticks(lo: float, hi: float, count: int = 5, *, cover: bool = False) -> list[float]:
    """The multiples of ``nice_step(hi - lo, count)`` from ``lo`` to ``hi``; ``cover``: from the
    last one at or below ``lo`` to the first one at or above ``hi`` (a scale that ends on a
    tick). ``[lo]`` when the span is empty."""
    if not hi > lo:
        return [lo]
    step = nice_step(hi - lo, count)
    # A little slack, so that a value a rounding error off a multiple counts as on it.
    slack = step * 1e-9
    first = math.floor((lo + slack) / step) if cover else math.ceil((lo - slack) / step)
    last = math.ceil((hi - slack) / step) if cover else math.floor((hi + slack) / step)
    return [float(f"{k * step:.12g}") for k in range(first, last + 1)]


def padded(lo: float, hi: float, share: float) -> tuple[float, float]:
    """``lo``..``hi`` widened by ``share`` of its span on both sides; an empty span by
    ``share`` of the value (or 0.5 around 0)."""
    pad = (hi - lo) * share or abs(hi) * share or 0.5
    return lo - pad, hi + pad


def placeable(x: float, y: float | None, log_x: bool) -> bool:
    """Whether a point has a place on a chart: a finite y, and on a log axis an x above 0."""
    return y is not None and math.isfinite(y) and (x > 0 or not log_x)


@dataclass(frozen=True)
class Frame:
    """The plot area inside a chart (pixels) and the data range it shows: data -> pixel
    positions. ``log_x`` spaces x by its logarithm; ``x0``/``x1`` are then logarithms too."""

    left: float
    top: float
    width: float
    height: float
    x0: float
    x1: float
    y0: float
    y1: float
    log_x: bool = False

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width

    def tx(self, x: float) -> float:
        return math.log10(x) if self.log_x else x

    def sx(self, x: float) -> float:
        return self.left + (self.tx(x) - self.x0) / ((self.x1 - self.x0) or 1.0) * self.width

    def sy(self, y: float) -> float:
        return self.bottom - (y - self.y0) / ((self.y1 - self.y0) or 1.0) * self.height

    def placeable(self, x: float, y: float | None) -> bool:
        return placeable(x, y, self.log_x)

    def points(self, run: Iterable[Point]) -> str:
        """The pixel positions of data points, as an SVG ``points`` attribute."""
        return " ".join(f"{self.sx(x):.1f},{self.sy(y):.1f}" for x, y in run)


def runs(frame: Frame, points: Iterable[tuple[float, float | None]]) -> list[list[Point]]:
    """Consecutive points that have a place in ``frame``, as separate runs: a missing value
    (None, not finite, or x <= 0 on a log axis) breaks the line."""
    out: list[list[Point]] = [[]]
    for x, y in points:
        if y is None or not frame.placeable(x, y):
            if out[-1]:
                out.append([])
        else:
            out[-1].append((x, y))
    return [run for run in out if run]


def staircase(run: Sequence[Point]) -> list[Point]:
    """A run drawn as steps: each value holds until the next point's x (a CDF)."""
    out: list[Point] = []
    for i, (x, y) in enumerate(run):
        if i:
            out.append((x, run[i - 1][1]))
        out.append((x, y))
    return out


def polyline(
    frame: Frame,
    run: Iterable[Point],
    colour: str,
    width: float,
    *,
    css: str = "",
    dashed: bool = False,
    title: str = "",
) -> str:
    """An open line through data points, of class ``css``, with a tooltip ``title``."""
    cls = f' class="{css}"' if css else ""
    dash = f' stroke-dasharray="{DASH}"' if dashed else ""
    tip = f"><title>{esc(title)}</title></polyline>" if title else "/>"
    return (
        f'<polyline{cls} fill="none" stroke="{colour}" stroke-width="{width}"{dash} '
        f'points="{frame.points(run)}"{tip}'
    )


def open_svg(
    css: str, width: float, height: float, *, label: str = "", standalone: bool = False
) -> str:
    """The opening tag of a chart; ``label`` names it for screen readers. Inline, the page's
    CSS sets the font; ``standalone`` (a file of its own) says it itself."""
    namespace = (
        ' xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="11"'
        if standalone
        else ""
    )
    aria = f' aria-label="{esc(label)}"' if label else ""
    return (
        f'<svg{namespace} class="{css}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"{aria}>'
    )


def heading(width: float, height: float, x: float, title: str) -> str:
    """A white chart background and its bold title in the top-left corner."""
    return (
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>'
        f'<text x="{x}" y="14" style="font-weight:600">{esc(title)}</text>'
    )


def y_grid(f: Frame, ticks: Iterable[float]) -> list[str]:
    """A grid line across the plot at each y tick, its value left of the plot."""
    out = []
    for value in ticks:
        y = f.sy(value)
        out.append(
            f'<line x1="{f.left}" y1="{y:.1f}" x2="{f.right}" y2="{y:.1f}" stroke="{GRID}"/>'
            f'<text x="{f.left - 5}" y="{y + 4:.1f}" text-anchor="end">{esc(fmt_number(value))}'
            "</text>"
        )
    return out


def x_axis(
    f: Frame,
    ticks: Sequence[tuple[float, str]],
    *,
    slant: bool = False,
    hug_ends: bool = False,
    grid: bool = False,
) -> list[str]:
    """Labelled x positions (data x) under the plot, each with a short tick or, ``grid``, a
    line up through the plot. ``slant`` turns long labels 35 degrees; ``hug_ends`` anchors the
    first label at its start and the last at its end, so both stay inside the chart."""
    out = []
    drop = f.bottom + TICK_LABEL_DROP
    for k, (value, label) in enumerate(ticks):
        x = f.sx(value)
        anchor = "middle"
        if slant:
            anchor = "end"
        elif hug_ends and len(ticks) > 1:
            anchor = "start" if k == 0 else ("end" if k == len(ticks) - 1 else "middle")
        turn = f' transform="rotate(-35 {x:.1f} {drop})"' if slant else ""
        upto = f.top if grid else f.bottom + 4
        out.append(
            f'<line x1="{x:.1f}" y1="{upto}" x2="{x:.1f}" y2="{f.bottom}" '
            f'stroke="{GRID if grid else TICK}"/><text x="{x:.1f}" y="{drop}" '
            f'text-anchor="{anchor}"{turn}>{esc(label)}</text>'
        )
    return out


def axes(
    f: Frame,
    x_ticks: Sequence[tuple[float, str]],
    *,
    y_label: str,
    x_label: str = "",
    label_at: float = 0.0,
    slant: bool = False,
    hug_ends: bool = False,
    background: str = "",
) -> list[str]:
    """The y grid at nice ticks, the x ticks, the plot's outline and the axis labels: y turned
    up the left side, x centred at the height ``label_at``. ``background`` fills the plot."""
    out = []
    if background:
        out.append(
            f'<rect x="{f.left}" y="{f.top}" width="{f.width}" height="{f.height}" '
            f'fill="{background}"/>'
        )
    out += y_grid(f, nice_ticks(f.y0, f.y1))
    out += x_axis(f, x_ticks, slant=slant, hug_ends=hug_ends)
    middle = f.top + f.height / 2
    out.append(
        f'<rect x="{f.left}" y="{f.top}" width="{f.width}" height="{f.height}" fill="none" '
        f'stroke="{OUTLINE}"/><text x="12" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {middle:.1f})">{esc(y_label)}</text>'
    )
    if x_label:
        out.append(
            f'<text x="{f.left + f.width / 2:.1f}" y="{label_at}" text-anchor="middle">'
            f"{esc(x_label)}</text>"
        )
    return out


@dataclass(frozen=True)
class Key:
    """One entry of a legend: a line's colour and dash, and what it is."""

    label: str
    colour: str
    dashed: bool = False


def legend(f: Frame, keys: Sequence[Key], *, below_at: float | None = None) -> list[str]:
    """A sample of each line with its label: in the plot's top-right corner, or, ``below_at``,
    two to a row under the chart from that height down (14 px a row)."""
    out = []
    for i, key in enumerate(keys):
        if below_at is None:
            x, y, label = f.right - 124, f.top + 12 + 13 * i, key.label[:16]
        else:
            x, y, label = f.left + (i % 2) * (f.width / 2), below_at + 14 * (i // 2), key.label[:40]
        dash = f' stroke-dasharray="{DASH}"' if key.dashed else ""
        out.append(
            f'<line x1="{x:.1f}" y1="{y - 4}" x2="{x + 26:.1f}" y2="{y - 4}" '
            f'stroke="{key.colour}" stroke-width="2"{dash}/>'
            f'<text x="{x + 32:.1f}" y="{y}">{esc(label)}</text>'
        )
    return out
