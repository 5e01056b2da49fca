"""Text made safe to print on a terminal. Model names are file names, and record fields come
from files anyone can edit: an escape sequence in one would clear the screen or recolour it, a
carriage return would overwrite the line before it and a line break would split a table row.
Such characters are shown escaped (``\\x1b``, ``\\r``, ``\\n``) wherever text is printed; the
names themselves are kept as they are (a file with such a name still runs)."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: C0 and C1 controls and DEL, the Unicode line and paragraph separators, and the bidi
#: embedding, override and isolate marks (they reorder what follows them on the line).
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character written as its escape, on one line. Text with
    none is returned unchanged, so escaping twice is the same as escaping once."""
    return _UNPRINTABLE.sub(_escaped, text)


def printable_lines(lines: Iterable[str]) -> str:
    """Lines joined for printing, each escaped: a line break inside one is shown as ``\\n``
    and never starts a line of its own."""
    return "\n".join(printable(line) for line in lines)
