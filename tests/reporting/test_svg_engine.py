"""The one SVG chart engine (reporting/svg.py): it is the only module of the reporting package
that draws chart primitives, and its parts (ticks, frame, runs, axes, legend, escaping) behave
as the charts built on it need. The dashboard's charts are read back from their SVG."""

from __future__ import annotations

import ast
import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from edgebench.analysis.nightly import Night
from edgebench.reporting import svg
from edgebench.reporting.site.charts import SPARK_POINTS, history_svg, sparkline_svg
from edgebench.results.clock_regime import ClockRegime

REPORTING = Path(svg.__file__).parent
#: Words in the names of chart primitives: axes and ticks, escaping, path building (a frame
#: or scale is a class named ...Frame).
PRIMITIVE_WORDS = {"axes", "axis", "ticks", "nice", "esc", "escape", "segments", "staircase"}


def _primitive(node: ast.AST) -> str:
    """The name ``node`` defines if it is a chart primitive, else ""."""
    if isinstance(node, ast.ClassDef) and node.name.lower().endswith("frame"):
        return node.name
    if isinstance(node, ast.FunctionDef):
        return "" if PRIMITIVE_WORDS.isdisjoint(node.name.lower().split("_")) else node.name
    return ""


def primitives_outside_the_engine(root: Path) -> list[str]:
    """Where a module under ``root`` other than svg.py defines a chart primitive, escapes
    text itself or opens an <svg> element: ``path: what`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "svg.py":
            continue
        where = path.relative_to(root)
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if name := _primitive(node):
                found.append(f"{where}: defines {name}")
            if isinstance(node, ast.ImportFrom) and node.module in {"html", "xml.sax.saxutils"}:
                found.append(f"{where}: imports its own escape from {node.module}")
        if "<svg" in text:
            found.append(f"{where}: opens an <svg> element itself")
    return found


def test_only_the_engine_defines_frames_axes_ticks_escaping_or_opens_an_svg() -> None:
    assert primitives_outside_the_engine(REPORTING) == []


def test_the_check_finds_a_second_engine(tmp_path: Path) -> None:
    (tmp_path / "svg.py").write_text("def nice_ticks(): ...\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "charts.py").write_text(
        "from html import escape\n\nclass _Frame: ...\n\ndef _axes(): return '<svg>'\n"
    )
    assert primitives_outside_the_engine(tmp_path) == [
        "site/charts.py: imports its own escape from html",
        "site/charts.py: defines _Frame",
        "site/charts.py: defines _axes",
        "site/charts.py: opens an <svg> element itself",
    ]


# --------------------------------------------------------------------------- ticks and scale


@pytest.mark.parametrize(
    ("lo", "hi", "count"), [(0.13, 0.97, 5), (0.0, 9.0, 4), (-3.2, 17.0, 5), (990.0, 1012.0, 5)]
)
def test_nice_ticks_are_evenly_spaced_round_values_in_the_range(lo, hi, count) -> None:
    ticks = svg.nice_ticks(lo, hi, count)
    step = svg.nice_step(hi - lo, count)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 9) in {1, 2, 2.5, 5}
    assert lo <= ticks[0] < lo + step and hi - step < ticks[-1] <= hi
    assert all(b - a == pytest.approx(step) for a, b in itertools.pairwise(ticks))
    assert count // 2 <= len(ticks) <= 2 * count + 1
    covering = svg.nice_ticks(lo, hi, count, cover=True)
    assert covering[0] <= lo < covering[0] + step and covering[-1] - step < hi <= covering[-1]


def test_nice_ticks_print_round_and_survive_an_empty_or_bad_span() -> None:
    assert svg.nice_ticks(0.13, 0.97) == [0.2, 0.4, 0.6, 0.8]  # not 0.6000000000000001
    assert svg.nice_ticks(0.0, 9.0, 4, cover=True) == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert svg.nice_ticks(3.0, 3.0) == [3.0]
    assert [svg.nice_step(s) for s in (0.0, -1.0, math.nan, math.inf)] == [1.0] * 4


def test_padded_widens_a_range_or_an_empty_one() -> None:
    assert svg.padded(10.0, 20.0, 0.1) == (9.0, 21.0)
    assert svg.padded(4.0, 4.0, 0.5) == (2.0, 6.0)
    assert svg.padded(0.0, 0.0, 0.1) == (-0.5, 0.5)


def test_the_frame_maps_data_to_pixels_with_y_up_and_a_log_x() -> None:
    f = svg.Frame(10, 20, 100, 50, 0.0, 10.0, 0.0, 5.0)
    assert (f.sx(0), f.sx(10), f.sy(0), f.sy(5), f.bottom, f.right) == (10, 110, 70, 20, 70, 110)
    log = svg.Frame(0, 0, 200, 10, 0.0, 2.0, 0.0, 1.0, log_x=True)
    assert [log.sx(x) for x in (1.0, 10.0, 100.0)] == [0, 100, 200]
    assert not log.placeable(0.0, 1.0) and f.placeable(0.0, 1.0) and not f.placeable(1.0, math.nan)
    flat = svg.Frame(0, 0, 10, 10, 3.0, 3.0, 1.0, 1.0)
    assert math.isfinite(flat.sx(3.0)) and math.isfinite(flat.sy(1.0))


def test_runs_break_where_a_point_has_no_place_and_staircase_holds_each_value() -> None:
    log = svg.Frame(0, 0, 10, 10, 0.0, 1.0, 0.0, 1.0, log_x=True)
    points = [(1.0, 1.0), (2.0, None), (3.0, 2.0), (4.0, math.nan), (5.0, 3.0), (6.0, 4.0)]
    assert svg.runs(log, points) == [[(1.0, 1.0)], [(3.0, 2.0)], [(5.0, 3.0), (6.0, 4.0)]]
    assert svg.runs(log, [(-1.0, 1.0), (0.0, 2.0), (1.0, 3.0)]) == [[(1.0, 3.0)]]
    steps = svg.staircase([(1.0, 1.0), (2.0, 3.0), (4.0, 2.0)])
    assert steps == [(1.0, 1.0), (2.0, 1.0), (2.0, 3.0), (4.0, 3.0), (4.0, 2.0)]


# --------------------------------------------------------------------------- drawing parts


def _svg(parts: list[str]) -> ET.Element:
    return ET.fromstring(f"<svg>{''.join(parts)}</svg>")


def test_text_is_escaped_in_content_and_attributes() -> None:
    assert svg.esc('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert svg.esc(None) == "" and svg.esc(2.5) == "2.5"
    tag = svg.open_svg("chart", 100, 50, label='"><script>')
    assert "<script>" not in tag and ET.fromstring(tag + "</svg>").get("aria-label") == '"><script>'


def test_x_axis_anchors_slants_and_draws_grid_lines() -> None:
    f = svg.Frame(50, 10, 200, 100, 0.0, 2.0, 0.0, 1.0)
    ticks = [(0.0, "a"), (1.0, "b"), (2.0, "c")]
    hugged = _svg(svg.x_axis(f, ticks, hug_ends=True))
    assert [t.get("text-anchor") for t in hugged.iter("text")] == ["start", "middle", "end"]
    assert [float(t.get("x")) for t in hugged.iter("text")] == [50, 150, 250]
    slanted = _svg(svg.x_axis(f, ticks, slant=True))
    assert all("rotate(-35" in t.get("transform") for t in slanted.iter("text"))
    assert {t.get("text-anchor") for t in slanted.iter("text")} == {"end"}
    short = [float(line.get("y1")) for line in hugged.iter("line")]
    grid = [float(line.get("y1")) for line in _svg(svg.x_axis(f, ticks, grid=True)).iter("line")]
    assert short == [f.bottom + 4] * 3 and grid == [f.top] * 3


def test_axes_label_round_y_values_inside_the_range_and_the_escaped_units() -> None:
    f = svg.Frame(60, 10, 300, 200, 0.0, 1.0, 0.37, 4.1)
    drawn = _svg(svg.axes(f, [(0.5, "mid")], y_label="ms <p99>", x_label="size", label_at=240))
    texts = [t.text for t in drawn.iter("text")]
    values = [float(t) for t in texts if t and re.fullmatch(r"[\d.]+", t)]
    assert values == [1.0, 2.0, 3.0, 4.0]
    assert "mid" in texts and "size" in texts and "ms <p99>" in texts  # parsed back unescaped
    (outline,) = [r for r in drawn.iter("rect") if r.get("stroke")]
    assert [float(outline.get(k)) for k in ("x", "y", "width", "height")] == [60, 10, 300, 200]
    filled = _svg(svg.axes(f, [], y_label="", background="#fcfcfc"))
    assert next(filled.iter("rect")).get("fill") == "#fcfcfc"


def test_the_legend_goes_top_right_or_two_to_a_row_below() -> None:
    f = svg.Frame(50, 20, 400, 200, 0.0, 1.0, 0.0, 1.0)
    keys = [svg.Key("a" * 50, "#111111"), svg.Key("b", "#222222", dashed=True), svg.Key("c", "#3")]
    inside = _svg(svg.legend(f, keys))
    assert [t.text for t in inside.iter("text")] == ["a" * 16, "b", "c"]
    assert {float(line.get("x1")) for line in inside.iter("line")} == {f.right - 124}
    dashes = [line.get("stroke-dasharray") for line in inside.iter("line")]
    assert dashes == [None, svg.DASH, None]
    below = _svg(svg.legend(f, keys, below_at=300))
    assert next(t.text for t in below.iter("text")) == "a" * 40
    rows = [(float(t.get("x")), float(t.get("y"))) for t in below.iter("text")]
    assert rows == [(82, 300), (282, 300), (82, 314)]


def test_a_polyline_joins_pixel_points_and_carries_its_tooltip() -> None:
    f = svg.Frame(0, 0, 100, 100, 0.0, 1.0, 0.0, 1.0)
    plain = ET.fromstring(svg.polyline(f, [(0.0, 0.0), (1.0, 1.0)], "#000", 1.5, css="value"))
    assert plain.get("points") == "0.0,100.0 100.0,0.0" and plain.get("class") == "value"
    tipped = ET.fromstring(svg.polyline(f, [(0.0, 0.0)], "#000", 1, dashed=True, title="<x>"))
    assert tipped.get("stroke-dasharray") == svg.DASH and tipped.find("title").text == "<x>"


# --------------------------------------------------------------------------- the dashboard's use


def _night(i: int, value: float | None, *, emulated: str = "") -> Night:
    return Night(
        run_id=f"run-{i}",
        created_at=f"2026-03-{i + 1:02d}T02:00:00+00:00",
        value=value,
        p99=None if value is None else value * 1.2,
        spread=None,
        status="ok" if value is not None else "failed",
        correctness_only=emulated,
        regime=ClockRegime(),
    )


def test_the_history_chart_slots_each_night_and_marks_the_odd_ones() -> None:
    nights = [_night(i, 10.0 + i % 3) for i in range(10)]
    nights[4] = _night(4, None)
    nights[7] = _night(7, 11.0, emulated="emulated CPU")
    chart = ET.fromstring(history_svg(nights, [], unit="ms", width=500, height=200))
    lines = [p for p in chart.iter("polyline") if p.get("class") == "value"]
    assert len(lines) == 2, "the failed night breaks the line"
    xs = [float(p.split(",")[0]) for line in lines for p in line.get("points").split()]
    slot = (500 - 80) / 10
    assert xs[0] == pytest.approx(64 + slot / 2, abs=0.1) and len(xs) == 9
    dates = [t for t in chart.iter("text") if (t.text or "").startswith("2026-")]
    assert dates[0].text == "2026-03-01" and dates[-1].text == "2026-03-10"
    assert (dates[0].get("text-anchor"), dates[-1].get("text-anchor")) == ("start", "end")
    tips = [t.text for t in chart.iter("title")]
    assert "run-4: failed" in tips and "run-7: emulated CPU" in tips
    assert history_svg([_night(0, None)], [], unit="ms").startswith('<p class="muted">')


def test_a_long_sparkline_draws_group_medians_and_an_empty_one_nothing() -> None:
    values: list[float | None] = [float(i % 5) for i in range(SPARK_POINTS * 3)]
    (line,) = ET.fromstring(sparkline_svg(values)).iter("polyline")
    assert len(line.get("points").split()) == SPARK_POINTS
    empty = ET.fromstring(sparkline_svg([None, None]))
    assert empty.get("class") == "spark" and len(empty) == 0
