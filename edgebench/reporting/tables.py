"""Plain-text tables and numbers: every aligned table edgebench prints is laid out here."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence

from edgebench.terminal import printable


def format_table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    right: Collection[int] = (),
    underline: bool = True,
) -> list[str]:
    """The lines of a table: columns two spaces apart, as wide as their widest cell.

    Columns are left-aligned except those whose index is in ``right``; ``underline`` puts a
    row of dashes under the header; trailing spaces are stripped from every line. Cells are
    escaped (edgebench.terminal): a name's line break never splits a row.
    """
    header = [printable(str(cell)) for cell in header]
    body = [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    lines = [line(header)]
    if underline:
        lines.append(line(["-" * w for w in widths]))
    lines.extend(line(row) for row in body)
    return lines


def fmt_number(value: float | None, unit: str = "", *, tiny: str = ".3g") -> str:
    """About three significant figures (123, 12.3, 1.23), "-" for none; values below 0.01
    use the format ``tiny`` (the text matrix keeps ``.2f`` there)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    elif abs(value) >= 0.01 or value == 0:
        text = f"{value:.2f}"
    else:
        text = format(value, tiny)
    return f"{text} {unit}".rstrip()


def fmt_or_dash(value: float | None, spec: str) -> str:
    """``value`` in the format ``spec``, or "-" when there is none."""
    return "-" if value is None else format(value, spec)


def shorten(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` characters: whole as it is when it fits,
    else cut after its last whole word (or path part) that fits, ended with "…"."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    head = text[: width - 1]
    if text[width - 1] != " ":  # the cut falls inside a word: go back to its start
        breaks = [head.rfind(c) for c in " /,;:"]
        cut = max(breaks)
        if cut >= width // 2:
            head = head[: cut + 1] if head[cut] != " " else head[:cut]
    return head.rstrip(" ,;:") + "…"
