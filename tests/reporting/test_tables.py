"""The one text-table printer and number format."""

from __future__ import annotations

import math

from edgebench.reporting.tables import fmt_number, fmt_or_dash, format_table


def test_columns_align_and_lines_are_stripped() -> None:
    lines = format_table(["name", "ms", "note"], [["a", "1.5", ""], ["long name", "12.25", "x"]])
    assert lines == [
        "name       ms     note",
        "---------  -----  ----",
        "a          1.5",
        "long name  12.25  x",
    ]


def test_right_aligned_columns_and_no_underline() -> None:
    lines = format_table(["k", "value"], [["a", "1"], ["b", "100"]], right={1}, underline=False)
    assert lines == ["k  value", "a      1", "b    100"]


def test_header_only() -> None:
    assert format_table(["a", "bb"], []) == ["a  bb", "-  --"]


def test_number_format() -> None:
    assert [fmt_number(v) for v in (123.4, 12.34, 1.234, 0.0, 0.001234)] == [
        "123",
        "12.3",
        "1.23",
        "0.00",
        "0.00123",
    ]
    assert fmt_number(0.001234, tiny=".2f") == "0.00"
    assert fmt_number(2.5, "ms") == "2.50 ms"
    assert fmt_number(None, "ms") == fmt_number(math.nan) == "-"
    assert fmt_or_dash(None, ".3f") == "-" and fmt_or_dash(0.5, ".3f") == "0.500"
