"""Reading the lab's TOML files (lab.toml, device profiles) and phrasing what is wrong in them.

Shared by ``lab_file`` and the profile modules: every problem becomes one ``UserError`` line
that names the file and the field, shows the offending value quoted and shortened, and says
how to fix it.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from edgebench.errors import UserError

MAX_FILE_BYTES = 1 << 20

#: C0 and C1 controls (line breaks, CR, the escape that starts a terminal sequence, 8-bit CSI)
#: and the Unicode line and paragraph separators.
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

#: TOML's names for parsed value types, most specific first (a bool is also an int).
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
)


def one_line(text: str) -> str:
    """Collapse anything that could break a message onto a second line."""
    return _LINE_BREAKS.sub(" ", text).strip()


def show(value: Any, limit: int = 40) -> str:
    """A value as it may appear in a message: quoted, escaped, shortened."""
    if isinstance(value, str):
        text = value if len(value) <= limit else value[: limit - 1] + "…"
        return json.dumps(text, ensure_ascii=False)
    if type(value) in (int, float):
        return str(value)[:limit]
    return type_name(value)


def type_name(value: Any) -> str:
    """TOML's name for a parsed value's type, for 'must be X, not Y' messages."""
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return "a date/time" if value is not None else "nothing"


def has_breaks(text: str) -> bool:
    return bool(_LINE_BREAKS.search(text))


def string_problem(value: Any, example: str) -> str | None:
    """Why ``value`` is not a non-empty one-line string; None when it is one."""
    if not isinstance(value, str):
        return f"must be a string like {example}, not {type_name(value)}"
    if has_breaks(value) or not value.strip():
        return f"must be a non-empty one-line string like {example}"
    return None


def unknown_key_fix(key: str, known: Iterable[str]) -> str:
    """'(did you mean X?)' for a mistyped key, else the list of known keys."""
    names = list(known)
    match = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return f"(did you mean {match[0]}?)" if match else f"(known keys: {', '.join(names)})"


def read_toml(path: Path, kind: str, label: str) -> dict[str, Any]:
    """Parse a TOML file; every failure is one UserError line naming ``kind label``."""
    where = f"{kind} {label}"
    try:
        data = path.read_bytes()[: MAX_FILE_BYTES + 1]
    except FileNotFoundError as exc:
        raise UserError(one_line(f"{where}: file does not exist")) from exc
    except IsADirectoryError as exc:
        raise UserError(one_line(f"{where}: is a folder, not a TOML file")) from exc
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        raise UserError(one_line(f"{where}: cannot be read ({reason})")) from exc
    if len(data) > MAX_FILE_BYTES:
        raise UserError(one_line(f"{where}: larger than 1 MB, not a {kind} file"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            one_line(f"{where}: not UTF-8 text (byte {exc.start}); save it as UTF-8")
        ) from exc
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(
            one_line(f"{where}: TOML syntax error: {exc} (see docs/devices.md for the format)")
        ) from exc
    except (RecursionError, ValueError) as exc:
        raise UserError(one_line(f"{where}: TOML that edgebench cannot read ({exc})")) from exc
