"""The SVG of the breakdown sections: a stacked bar per stage breakdown, and the settings of
``line_chart`` its line charts share (memory vs instances, latency vs input size): one colour
per framework with a solid and a dashed line in it, a dot on every point, y from 0 and the
legend under the chart. The parts of both come from the chart engine (``reporting/svg.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from edgebench.analysis.breakdowns import (
    STAGES,
    UNATTRIBUTED,
    StageSummary,
)
from edgebench.reporting import svg
from edgebench.reporting.line_chart import Mark, Series, line_chart
from edgebench.reporting.svg import PALETTE, esc
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


def colours_for(keys: Iterable[object]) -> dict[object, str]:
    """One palette colour per distinct key, in order of first appearance."""
    distinct = list(dict.fromkeys(keys))
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(distinct)}


def stage_bar_svg(summary: StageSummary, *, width: int = 180, height: int = 14) -> str:
    """The iteration as one 100% bar, a segment per stage (and the unattributed rest)."""
    if not summary.shares:
        return ""
    out = [svg.open_svg("stagebar", width, height, label="stages")]
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


def lines_chart(
    title: str,
    lines: Sequence[Series],
    x_label: str,
    y_label: str,
    *,
    x_ticks: Sequence[tuple[float, str]] = (),
    log_x: bool = False,
    marks: Sequence[Mark] = (),
    width: int = 520,
    height: int = 240,
) -> str:
    """``line_chart`` as the breakdown sections draw it: a dot (and tooltip) on every point, a
    line through the points each series has (a missing one is stepped over), y from 0, and a
    legend below ``height`` that shows each line's colour and dash; "" with nothing to draw.
    ``x_ticks`` label x positions, ``log_x`` spaces x by its logarithm (x must be positive),
    ``marks`` are red steps (cliffs)."""
    drawn = [_drawable(line, log_x) for line in lines]
    tops = [y for line in drawn for y in line.ys if y is not None]
    if not tops:
        return ""
    return line_chart(
        title,
        drawn,
        x_label,
        y_label,
        width=width,
        height=height,
        y_range=(0.0, max(tops) * 1.08 or 1.0),
        x_ticks=x_ticks,
        log_x=log_x,
        x_pad=0.04,
        markers=True,
        marks=marks,
        legend_below=True,
    )


def _drawable(line: Series, log_x: bool) -> Series:
    """``line`` without the points it has no value for (or no place on a log axis), so that
    its line joins the points on either side of them."""
    tips = line.tips or [line.label] * len(line.xs)
    kept = [
        (x, y, tip)
        for x, y, tip in zip(line.xs, line.ys, tips, strict=False)
        if y is not None and (x > 0 or not log_x)
    ]
    return Series(
        line.label,
        [x for x, _, _ in kept],
        [y for _, y, _ in kept],
        tips=[tip for _, _, tip in kept],
        colour=line.colour,
        dashed=line.dashed,
    )
