"""The dashboard's SVG charts: a tile's sparkline and a cell page's history chart.

Both are drawn with the chart engine (``reporting/svg.py``), which escapes every text (device,
model and run names are untrusted); this module says what to draw. The history chart draws
the nightly value as a line, the p99 as a band above it, the level of each segment between
change points as a dashed line, and each change point as a vertical marker
(``class="change-point"``) whose ``<title>`` says what moved and what changed that night.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edgebench.reporting import svg
from edgebench.reporting.svg import Frame, esc

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
        return svg.open_svg("spark", width, height) + "</svg>"
    lo, hi = min(present), max(present)
    # At least SPARK_SPAN of the median from bottom to top: a quiet series stays flat instead
    # of its noise filling the tile like a step would.
    least = SPARK_SPAN * abs(statistics.median(present))
    if hi - lo < least:
        middle = (hi + lo) / 2
        lo, hi = middle - least / 2, middle + least / 2
    frame = Frame(2, 3, width - 4, height - 6, 0, max(len(values) - 1, 1), lo, hi)
    parts = [svg.open_svg("spark", width, height)]
    if step_at is not None:
        x = frame.sx(step_at / group - 0.5)
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" stroke="{step_colour_}" '
            'stroke-width="1.5" stroke-dasharray="3,2"/>'
        )
    for run in svg.runs(frame, enumerate(values)):
        parts.append(svg.polyline(frame, run, LINE, 1.2))
    last = next(((i, v) for i, v in reversed(list(enumerate(values))) if v is not None), None)
    if last is not None:
        at, value = last
        parts.append(
            f'<circle cx="{frame.sx(at):.1f}" cy="{frame.sy(value):.1f}" r="2" fill="{LINE}"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _dates(nights: Sequence[Night]) -> list[tuple[float, str]]:
    """At most seven nights, spread evenly from the first to the last, labelled by date."""
    labels = min(len(nights), 7)
    at = [round(k * (len(nights) - 1) / max(labels - 1, 1)) for k in range(labels)]
    return [(float(i), (nights[i].created_at or "")[:10]) for i in at]


def _levels(frame: Frame, steps: Sequence[tuple[int, Step]], n: int) -> list[str]:
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


def _markers(frame: Frame, steps: Sequence[tuple[int, Step]], lower_is_better: bool) -> list[str]:
    out = []
    for index, step in steps:
        cp = step.change_point
        colour = step_colour(cp.change, lower_is_better)
        x = frame.sx(index - 0.5)
        out.append(
            f'<g class="change-point"><title>{esc(step.describe())}</title>'
            f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{frame.bottom}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="6,3"/>'
            f'<rect x="{x - 4:.1f}" y="{frame.top}" width="8" height="{frame.height}" '
            'fill="transparent"/>'
            f'<text x="{x + 4:.1f}" y="{frame.top + 12}" fill="{colour}" '
            f'style="fill:{colour};font-weight:600">{cp.change:+.1%}</text></g>'
        )
    return out


def _band(frame: Frame, nights: Sequence[Night]) -> list[str]:
    """The area between each night's value and its p99."""
    band = [
        (i, n.value, n.p99)
        for i, n in enumerate(nights)
        if n.value is not None and n.p99 is not None and n.p99 >= n.value
    ]
    if not band:
        return []
    outline = [(i, p99) for i, _, p99 in band] + [(i, v) for i, v, _ in reversed(band)]
    return [
        f'<polygon class="p99-band" points="{frame.points(outline)}" fill="{BAND}" '
        'fill-opacity="0.55" stroke="none"><title>p50 to p99</title></polygon>'
    ]


def _nights(frame: Frame, nights: Sequence[Night]) -> list[str]:
    """The value line, a red tick under each night without a value, a hollow dot on each
    night measured on an emulated CPU or a software device."""
    values = [(float(i), n.value) for i, n in enumerate(nights)]
    out = [svg.polyline(frame, run, LINE, 1.5, css="value") for run in svg.runs(frame, values)]
    bottom = frame.bottom
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
    # Night i sits in the middle of the i-th of len(nights) equal slots.
    frame = Frame(
        64, 12, width - 80, height - 48, -0.5, len(nights) - 0.5, *svg.padded(lo, hi, 0.08)
    )
    index_of = {n.run_id: i for i, n in enumerate(nights)}
    placed = [(index_of[s.night.run_id], s) for s in steps if s.night.run_id in index_of]
    kind = "history band" if with_band else "history"
    return "".join(
        [
            svg.open_svg(kind, width, height),
            *svg.axes(frame, _dates(nights), y_label=unit, hug_ends=True, background="#fcfcfc"),
            *(_band(frame, nights) if with_band else _levels(frame, placed, len(nights))),
            *_nights(frame, nights),
            *_markers(frame, placed, lower_is_better),
            "</svg>",
        ]
    )
