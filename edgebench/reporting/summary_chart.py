"""The summary's chart: per device, a horizontal bar per framework at its p50 with a whisker
out to its p99, the leaders green and marked (★ best, ≈ tied), the others grey.

A cell measured on an emulated CPU or a software device is drawn pale blue with a dashed
outline and labelled "not ranked"; a cell that did not run ok has its status word instead of
a bar. The scale spans the ranked cells (an emulated cell 20x slower would flatten the real
ones); a bar or whisker past it is cut at the edge with a "»". Drawn with the chart engine
(``reporting/svg.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from edgebench.reporting import svg
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number

LEADER, OTHER, FAILED = "#2ca02c", "#8ea8c3", "#a00"
EMULATED_FILL, EMULATED_INK = "#c9d8ef", "#1d3f6e"
MARKS = {"best": "★", "tied": "≈"}
ROW = 17
AXIS = 30
PLOT_WIDTH = 320
CHAR_PX = 6.6


@dataclass(frozen=True)
class Bar:
    """One cell of the chart."""

    device: str
    framework: str
    p50: float | None
    p99: float | None
    #: ``"best"``, ``"tied"`` or ``""`` (ranking.Ranking.standing), or ``"only"`` for the one
    #: ranked cell on its device (the answer, green, without a mark).
    standing: str
    #: ``""`` for a ranked cell, ``"emulated CPU"``/``"software device"`` for one that is shown
    #: but not ranked, else the status word of a cell without a figure.
    excluded: str
    #: The in-page anchor of the cell's details.
    anchor: str

    @property
    def drawn(self) -> bool:
        return self.p50 is not None and self.excluded in ("", "emulated CPU", "software device")


def _scale(bars: Sequence[Bar]) -> list[float]:
    """The ticks of the ms scale, from 0 to the first round value at or above the ranked
    cells' largest figure (every drawn cell's where none is ranked)."""
    ranked = [b for b in bars if b.drawn and not b.excluded]
    over = ranked or [b for b in bars if b.drawn]
    tops = [v for b in over for v in (b.p99, b.p50) if v is not None and math.isfinite(v)]
    return svg.nice_ticks(0.0, max(tops, default=1.0) or 1.0, 4, cover=True)


def _value_words(b: Bar, cut: bool) -> str:
    """``9.17 ≈``, or ``»901 · emulated CPU, not ranked`` for a cut bar of an emulated cell."""
    words = ("»" if cut else "") + fmt_number(b.p50)
    if b.standing in MARKS:
        words += f" {MARKS[b.standing]}"
    if b.excluded:
        words += f" · {b.excluded}, not ranked"
    return words


def _bar(b: Bar, y: float, f: svg.Frame) -> list[str]:
    """The shapes of one drawn row: the p50 bar, the whisker, the value text."""
    assert b.p50 is not None
    mid = y + ROW / 2
    x0, edge = f.left, f.right
    end = min(f.sx(b.p50), edge)
    if b.excluded:
        style = f'fill="{EMULATED_FILL}" stroke="{EMULATED_INK}" stroke-dasharray="3,2"'
    else:
        style = f'fill="{LEADER if b.standing else OTHER}"'
    width = max(end - x0, 1)
    out = [
        f'<rect class="p50" x="{x0}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" {style}/>'
    ]
    text_x = end
    if b.p99 is not None and math.isfinite(b.p99) and b.p99 > b.p50:
        tip = min(f.sx(b.p99), edge)
        out.append(
            f'<line x1="{end:.1f}" y1="{mid}" x2="{tip:.1f}" y2="{mid}" stroke="#333"/>'
            + (
                f'<line x1="{tip:.1f}" y1="{mid - 4}" x2="{tip:.1f}" y2="{mid + 4}" stroke="#333"/>'
                if tip < edge
                else ""
            )
        )
        text_x = tip
    words = _value_words(b, f.sx(max(b.p50, b.p99 or 0)) > edge)
    ink = f' style="fill:{EMULATED_INK}"' if b.excluded else ""
    out.append(f'<text x="{text_x + 4:.1f}" y="{mid + 4}"{ink}>{esc(words)}</text>')
    return out


def p50_chart(bars: Sequence[Bar], title: str) -> str:
    """The chart as inline SVG ("" without a bar to draw)."""
    if not any(b.drawn for b in bars):
        return ""
    devices = list(dict.fromkeys(b.device for b in bars))
    longest = max(len(b.framework) for b in bars)
    x0 = round(min(max(70.0, 16 + longest * CHAR_PX), 220.0))
    longest_tail = max(len(_value_words(b, True)) for b in bars if b.drawn)
    width = x0 + PLOT_WIDTH + 50 + round(longest_tail * CHAR_PX)
    ticks = _scale(bars)
    rows = len(bars) + len(devices)
    height = 22 + rows * ROW + AXIS
    # The rows are placed by count, so the frame's y range is only a formality.
    f = svg.Frame(x0, 22, PLOT_WIDTH, rows * ROW, 0.0, ticks[-1], 0.0, 1.0)
    out = [
        svg.open_svg("chart summary-chart", width, height, label=title),
        svg.heading(width, height, 4, title),
        *svg.x_axis(f, [(t, f"{t:g}") for t in ticks], grid=True),
        f'<text x="{f.left + f.width / 2:.0f}" y="{f.bottom + 26}" text-anchor="middle">'
        "p50 latency (ms), whisker to p99</text>",
    ]
    y = 22.0
    for device in devices:
        out.append(f'<text x="4" y="{y + 12}" style="font-weight:600">{esc(device)}</text>')
        y += ROW
        for b in (b for b in bars if b.device == device):
            tip = f"{device} / {b.framework}: " + (
                f"p50 {fmt_number(b.p50, 'ms')}, p99 {fmt_number(b.p99, 'ms')}"
                if b.drawn
                else b.excluded
            )
            out.append(f'<a href="#{esc(b.anchor)}"><title>{esc(tip)}</title>')
            out.append(
                f'<text x="{x0 - 6}" y="{y + 12}" text-anchor="end">{esc(b.framework)}</text>'
            )
            if b.drawn:
                out += _bar(b, y, f)
            else:
                out.append(
                    f'<text x="{x0 + 4}" y="{y + 12}" style="fill:{FAILED}">'
                    f"{esc(b.excluded)}</text>"
                )
            out.append("</a>")
            y += ROW
    out.append(f'<line x1="{x0}" y1="22" x2="{x0}" y2="{f.bottom}" stroke="#999"/></svg>')
    return "".join(out)
