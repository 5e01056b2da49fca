"""The reports' line chart (reporting/line_chart.py, drawn on the chart engine reporting/svg.py)
and the breakdown charts' use of it: the options each kind of chart needs, read back from the
SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from edgebench.reporting.breakdown_charts import lines_chart
from edgebench.reporting.line_chart import PALETTE, Mark, Series, line_chart


def _svg(text: str) -> ET.Element:
    return ET.fromstring(text)


def _points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in polyline.get("points").split()]


def test_a_log_axis_spaces_decades_evenly_and_leaves_out_what_it_cannot_place():
    chart = line_chart(
        "t", [Series("s", [0.0, 10.0, 100.0, 1000.0], [1.0, 2.0, 3.0, 4.0])], "x", "y", log_x=True
    )
    (line,) = _svg(chart).iter("polyline")
    xs = [x for x, _ in _points(line)]
    assert len(xs) == 3
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.11)


def test_series_take_their_own_colour_and_dash_else_the_palette_by_position():
    chart = line_chart(
        "t",
        [
            Series("a", [1.0, 2.0], [1.0, 2.0]),
            Series("b", [1.0, 2.0], [2.0, 1.0], colour="#123456", dashed=True),
        ],
        "x",
        "y",
        markers=True,
    )
    first, second = _svg(chart).iter("polyline")
    assert first.get("stroke") == PALETTE[0] and first.get("stroke-dasharray") is None
    assert second.get("stroke") == "#123456" and second.get("stroke-dasharray")
    assert [c.get("fill") for c in _svg(chart).iter("circle")] == [
        PALETTE[0],
        PALETTE[0],
        "#fff",
        "#fff",
    ]


def test_the_legend_sits_inside_for_several_series_or_below_growing_the_chart():
    one = [Series("only", [1.0, 2.0], [1.0, 2.0])]
    three = [Series(name, [1.0, 2.0], [1.0, 2.0]) for name in ("a", "b", "c")]
    assert "only</text>" not in line_chart("t", one, "x", "y", height=200)
    inside = _svg(line_chart("t", three, "x", "y", height=200))
    assert inside.get("height") == "200" and [t.text for t in inside.iter("text")][-3:] == [
        "a",
        "b",
        "c",
    ]
    below = _svg(line_chart("t", three, "x", "y", height=200, legend_below=True))
    assert below.get("height") == str(200 + 14 + 2 * 14)  # two rows of two


def test_a_gap_breaks_the_line_but_the_breakdown_charts_join_across_it():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    series = [Series("s", xs, [1.0, 2.0, None, 4.0, 5.0], colour="#000000")]
    assert len(list(_svg(line_chart("t", series, "x", "y")).iter("polyline"))) == 2
    joined = _svg(lines_chart("t", series, "x", "y"))
    (line,) = joined.iter("polyline")
    assert len(_points(line)) == 4 and len(list(joined.iter("circle"))) == 4
    assert lines_chart("t", [Series("s", [1.0], [None])], "x", "y") == ""


def test_long_tick_labels_are_slanted_and_get_room_short_ones_stand():
    short = _svg(
        line_chart(
            "t", [Series("s", [1.0, 2.0], [1.0, 2.0])], "x", "y", x_ticks=[(1.0, "1"), (2.0, "2")]
        )
    )
    long = _svg(
        line_chart(
            "t",
            [Series("s", [1.0, 2.0], [1.0, 2.0])],
            "x",
            "y",
            x_ticks=[(1.0, "1x3x224x224"), (2.0, "1x3x320x320")],
        )
    )

    def tick_texts(svg: ET.Element) -> list[ET.Element]:
        return [t for t in svg.iter("text") if t.text in {"1", "2", "1x3x224x224", "1x3x320x320"}]

    assert all(t.get("transform") is None for t in tick_texts(short))
    assert all("rotate(-35" in t.get("transform") for t in tick_texts(long))

    def plot_height(svg: ET.Element) -> float:
        return float(next(r for r in svg.iter("rect") if r.get("stroke") == "#999").get("height"))

    assert plot_height(long) < plot_height(short)


def test_marks_are_red_steps_ringed_at_their_end():
    series = [Series("s", [1.0, 2.0, 3.0], [1.0, 5.0, 6.0])]
    chart = _svg(line_chart("t", series, "x", "y", marks=[Mark(1.0, 1.0, 2.0, 5.0, "cliff")]))
    (ring,) = [c for c in chart.iter("circle") if c.get("class") == "cliff"]
    (line,) = chart.iter("polyline")
    assert (float(ring.get("cx")), float(ring.get("cy"))) == _points(line)[1]
