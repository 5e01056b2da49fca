"""The dashboard's SVG charts: a tile's sparkline and a cell page's history chart.

Both are drawn in Python as inline SVG (no scripts, nothing fetched). The history chart draws
the nightly value as a line, the p99 as a band above it, the level of each segment between
change points as a dashed line, and each change point as a vertical marker
(``class="change-point"``) whose ``<title>`` says what moved and what changed that night.
All text is escaped: device, model and run names are untrusted.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgebench.reporting.line_chart import esc
from edgebench.reporting.tables import fmt_number

if TYPE_CHECKING:
    from edgebench.analysis.nightly import Night, Step

LINE = "#1f77b4"
BAND = "#9ecae1"
WORSE = "#c0392b"
BETTER = "#2e8b57"
FAILED = "#d62728"
#: The most points a sparkline draws.
SPARK_POINTS = 60
#: The least a sparkline's height spans, relative to the series' median.
SPARK_SPAN = 0.15


def step_colour(change: float, lower_is_better: bool) -> str:
    """Red for a step to a worse level, green for a better one."""
    return WORSE if is_regression(change, lower_is_better) else BETTER


def is_regression(change: float, lower_is_better: bool) -> bool:
    return change > 0 if lower_is_better else change < 0


def _runs(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """Consecutive points with a value, as separate runs (a missing night breaks the line)."""
    out: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None or not math.isfinite(y):
            if out[-1]:
                out.append([])
        else:
            out[-1].append((x, y))
    return [run for run in out if run]


def _path(run: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in run)


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(present) if present else None


def sparkline_svg(
    values: Sequence[float | None],
    step_at: int | None = None,
    step_colour_: str = WORSE,
    *,
    width: int = 150,
    height: int = 34,
) -> str:
    """A small line of ``values`` (oldest first); ``step_at``: the index of the latest change
    point, marked with a vertical line. More than ``SPARK_POINTS`` nights are drawn as the
    medians of consecutive groups of nights: a year of nightly noise in 150 pixels would hide
    the step it is there to show."""
    group = math.ceil(len(values) / SPARK_POINTS) if len(values) > SPARK_POINTS else 1
    if group > 1:
        values = [_median(values[i : i + group]) for i in range(0, len(values), group)]
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return f'<svg class="spark" width="{width}" height="{height}" role="img"></svg>'
    lo, hi = min(present), max(present)
    # At least SPARK_SPAN of the median from bottom to top: a quiet series stays flat instead
    # of its noise filling the tile like a step would.
    least = SPARK_SPAN * abs(statistics.median(present))
    if hi - lo < least:
        middle = (hi + lo) / 2
        lo, hi = middle - least / 2, middle + least / 2
    span = (hi - lo) or 1.0
    n = max(len(values) - 1, 1)

    def sx(i: float) -> float:
        return 2 + i / n * (width - 4)

    def sy(v: float) -> float:
        return height - 3 - (v - lo) / span * (height - 6)

    parts = [f'<svg class="spark" width="{width}" height="{height}" role="img">']
    if step_at is not None:
        x = sx(step_at / group - 0.5)
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" stroke="{step_colour_}" '
            'stroke-width="1.5" stroke-dasharray="3,2"/>'
        )
    for run in _runs([(sx(i), None if v is None else sy(v)) for i, v in enumerate(values)]):
        parts.append(
            f'<polyline fill="none" stroke="{LINE}" stroke-width="1.2" points="{_path(run)}"/>'
        )
    last = next(((i, v) for i, v in reversed(list(enumerate(values))) if v is not None), None)
    if last is not None:
        at, value = last
        parts.append(f'<circle cx="{sx(at):.1f}" cy="{sy(value):.1f}" r="2" fill="{LINE}"/>')
    parts.append("</svg>")
    return "".join(parts)


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    raw = (hi - lo) / max(count, 1)
    if raw <= 0:
        return [lo]
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


@dataclass
class _Frame:
    left: float
    top: float
    width: float
    height: float
    n: int
    lo: float
    hi: float

    def sx(self, i: float) -> float:
        return self.left + (i + 0.5) / self.n * self.width

    def sy(self, v: float) -> float:
        return self.top + self.height - (v - self.lo) / (self.hi - self.lo) * self.height


def _axes(frame: _Frame, nights: Sequence[Night], unit: str) -> list[str]:
    f = frame
    out = [
        f'<rect x="{f.left}" y="{f.top}" width="{f.width}" height="{f.height}" fill="#fcfcfc" '
        'stroke="#bbb"/>'
    ]
    for tick in _nice_ticks(f.lo, f.hi):
        y = f.sy(tick)
        out.append(
            f'<line x1="{f.left}" y1="{y:.1f}" x2="{f.left + f.width}" y2="{y:.1f}" '
            'stroke="#e6e6e6"/>'
            f'<text x="{f.left - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(fmt_number(tick))}'
            "</text>"
        )
    labels = min(len(nights), 7)
    for k in range(labels):
        i = round(k * (len(nights) - 1) / max(labels - 1, 1))
        x = f.sx(i)
        anchor = "start" if k == 0 else ("end" if k == labels - 1 else "middle")
        out.append(
            f'<line x1="{x:.1f}" y1="{f.top + f.height}" x2="{x:.1f}" '
            f'y2="{f.top + f.height + 4}" stroke="#888"/>'
            f'<text x="{x:.1f}" y="{f.top + f.height + 17}" text-anchor="{anchor}">'
            f"{esc((nights[i].created_at or '')[:10])}</text>"
        )
    out.append(
        f'<text x="14" y="{f.top + f.height / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {f.top + f.height / 2:.1f})">{esc(unit)}</text>'
    )
    return out


def _levels(frame: _Frame, steps: Sequence[tuple[int, Step]], n: int) -> list[str]:
    """The median level of each segment between change points, as a dashed line."""
    if not steps:
        return []
    out = []
    bounds = [0, *(i for i, _ in steps), n]
    levels = [steps[0][1].change_point.before, *(step.change_point.after for _, step in steps)]
    for (start, end), level in zip(itertools.pairwise(bounds), levels, strict=True):
        y = frame.sy(level)
        out.append(
            f'<line class="level" x1="{frame.sx(start - 0.5):.1f}" y1="{y:.1f}" '
            f'x2="{frame.sx(end - 0.5):.1f}" y2="{y:.1f}" stroke="#555" stroke-width="1" '
            'stroke-dasharray="5,4"/>'
        )
    return out


def _markers(frame: _Frame, steps: Sequence[tuple[int, Step]], lower_is_better: bool) -> list[str]:
    out = []
    bottom = frame.top + frame.height
    for index, step in steps:
        cp = step.change_point
        colour = step_colour(cp.change, lower_is_better)
        x = frame.sx(index - 0.5)
        out.append(
            f'<g class="change-point"><title>{esc(step.describe())}</title>'
            f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{bottom}" stroke="{colour}" '
            'stroke-width="2" stroke-dasharray="6,3"/>'
            f'<rect x="{x - 4:.1f}" y="{frame.top}" width="8" height="{frame.height}" '
            'fill="transparent"/>'
            f'<text x="{x + 4:.1f}" y="{frame.top + 12}" fill="{colour}" '
            f'style="fill:{colour};font-weight:600">{cp.change:+.1%}</text></g>'
        )
    return out


def _band(frame: _Frame, nights: Sequence[Night]) -> list[str]:
    """The area between each night's value and its p99."""
    band = [
        (i, n.value, n.p99)
        for i, n in enumerate(nights)
        if n.value is not None and n.p99 is not None and n.p99 >= n.value
    ]
    if not band:
        return []
    upper = " ".join(f"{frame.sx(i):.1f},{frame.sy(p99):.1f}" for i, _, p99 in band)
    lower = " ".join(f"{frame.sx(i):.1f},{frame.sy(v):.1f}" for i, v, _ in reversed(band))
    return [
        f'<polygon class="p99-band" points="{upper} {lower}" fill="{BAND}" '
        'fill-opacity="0.55" stroke="none"><title>p50 to p99</title></polygon>'
    ]


def _nights(frame: _Frame, nights: Sequence[Night]) -> list[str]:
    """The value line, a red tick under each night without a value, a hollow dot on each
    night measured on an emulated CPU or a software device."""
    scaled = [
        (frame.sx(i), None if n.value is None else frame.sy(n.value)) for i, n in enumerate(nights)
    ]
    out = [
        f'<polyline class="value" fill="none" stroke="{LINE}" stroke-width="1.5" '
        f'points="{_path(run)}"/>'
        for run in _runs(scaled)
    ]
    bottom = frame.top + frame.height
    for i, night in enumerate(nights):
        if night.value is None:
            x = frame.sx(i)
            out.append(
                f'<line x1="{x:.1f}" y1="{bottom - 8}" x2="{x:.1f}" y2="{bottom}" '
                f'stroke="{FAILED}" stroke-width="2"><title>{esc(night.run_id)}: '
                f"{esc(night.status)}</title></line>"
            )
        elif night.correctness_only:
            out.append(
                f'<circle cx="{frame.sx(i):.1f}" cy="{frame.sy(night.value):.1f}" r="3" '
                f'fill="#fff" stroke="{LINE}"><title>{esc(night.run_id)}: '
                f"{esc(night.correctness_only)}</title></circle>"
            )
    return out


def history_svg(
    nights: Sequence[Night],
    steps: Sequence[Step],
    *,
    unit: str,
    lower_is_better: bool = True,
    with_band: bool = False,
    width: int = 960,
    height: int = 300,
) -> str:
    """The cell's nightly values with change-point markers, and either the level between the
    change points (scaled to the values, so a step of a few percent shows) or, ``with_band``,
    the p99 band above the values (scaled to hold it)."""
    values = [n.value for n in nights]
    if with_band:
        values += [n.p99 for n in nights]
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not nights or not present:
        return '<p class="muted">No night of this cell has a value.</p>'
    lo, hi = min(present), max(present)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    frame = _Frame(64, 12, width - 80, height - 48, len(nights), lo - pad, hi + pad)
    index_of = {n.run_id: i for i, n in enumerate(nights)}
    placed = [(index_of[s.night.run_id], s) for s in steps if s.night.run_id in index_of]
    kind = "history band" if with_band else "history"
    return "".join(
        [
            f'<svg class="{kind}" width="{width}" height="{height}" role="img" '
            f'viewBox="0 0 {width} {height}">',
            *_axes(frame, nights, unit),
            *(_band(frame, nights) if with_band else _levels(frame, placed, len(nights))),
            *_nights(frame, nights),
            *_markers(frame, placed, lower_is_better),
            "</svg>",
        ]
    )
