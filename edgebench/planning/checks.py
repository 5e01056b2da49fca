"""Checkers for run settings: each takes a raw value (a string from the command line, or a
TOML value from a plan file) and returns the checked value, or raises ValueError saying what
the value must be. The command line and plan files use the same checker for a setting."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from edgebench.lab.toml_input import has_breaks
from edgebench.planning.limits import over_limit, tensor_problem

Check = Callable[[Any], Any]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _control_problem(text: str) -> str | None:
    """Why a typed string may not be echoed to a terminal as it is (a line break, a carriage
    return or an escape sequence would forge or hide output), or None. The name of a file that
    exists is what it is: it is taken, and shown escaped wherever it is printed."""
    if has_breaks(text) and not _names_a_file(text):
        return f"{text!r} contains a control character (line break, tab or escape)"
    return None


def _names_a_file(text: str) -> bool:
    try:
        return Path(text).expanduser().is_file()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, overlong names, "~nobody"
        return False


def whole(minimum: int, limit: int | None = None) -> Check:
    """A whole number >= ``minimum``; over ``limit`` (planning/limits.py) is its own error."""

    def check(value: Any) -> int:
        if isinstance(value, str):
            typed = value.strip()
            try:
                value = int(typed)
            except ValueError:
                if limit is not None and typed.isdigit():  # past Python's digit limit
                    raise ValueError(over_limit(typed, limit)) from None
                raise ValueError(f"must be a whole number >= {minimum}") from None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"must be a whole number >= {minimum}")
        if limit is not None and value > limit:
            raise ValueError(over_limit(value, limit))
        return value

    check.metavar = "N"  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return check


def number(
    minimum: float | None = None, maximum: float | None = None, limit: float | None = None
) -> Check:
    """A finite number in [minimum, maximum]; over ``limit`` (planning/limits.py) is its own
    error."""
    span = " and ".join(
        part
        for part in (
            f">= {minimum:g}" if minimum is not None else "",
            f"<= {maximum:g}" if maximum is not None else "",
        )
        if part
    )
    problem = f"must be a number {span}".rstrip()

    def check(value: Any) -> float:
        typed = value
        if isinstance(value, str):
            typed = value.strip()
            try:
                value = float(typed)
            except ValueError:
                raise ValueError(problem) from None
        if limit is not None and _is_number(value) and value == math.inf:
            raise ValueError(over_limit(typed, limit))  # 1e400 as typed, not "inf"
        if not _is_number(value) or not math.isfinite(value):  # NaN, -inf
            raise ValueError(problem)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise ValueError(problem)
        if limit is not None and value > limit:
            raise ValueError(over_limit(f"{value:g}", limit))
        return float(value)

    check.metavar = "X"  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return check


def fraction(low_open: bool) -> Check:
    """A probability-like value: (0, 1) or [0, 1)."""
    problem = (
        "must be between 0 and 1, e.g. 0.01"
        if low_open
        else "must be between 0 and 1 (0 allowed), e.g. 0.05"
    )

    def check(value: Any) -> float:
        checked = number()(value) if not isinstance(value, bool) else None
        if checked is None or not (0 < checked < 1 if low_open else 0 <= checked < 1):
            raise ValueError(problem)
        return checked

    check.metavar = "X"  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return check


def one_of(registry: Collection[str], what: str = "") -> Check:
    """A name in ``registry``, looked up when checked (a registry such as the metrics may grow
    after import)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in registry:
            kind = f"a {what}; " if what else ""
            raise ValueError(f"{value!r} is not {kind}one of {', '.join(registry)}")
        return value

    check.metavar = "|".join(registry)  # type: ignore[attr-defined]  # a function attribute, read with getattr
    check.choices = registry  # type: ignore[attr-defined]  # what a command line offers
    return check


def choice(*allowed: str) -> Check:
    return one_of(allowed)


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    problem = _control_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def path(value: Any) -> Path:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ValueError("must be a path")
    problem = _control_problem(str(value))
    if problem:
        raise ValueError(problem)
    try:
        return Path(value).expanduser()
    except RuntimeError as exc:  # "~user" with no such user
        raise ValueError(f"cannot expand {value!r} ({exc})") from None


def folder(value: Any) -> Path:
    """A folder, or a path where one can be made (``--results-dir``); not an existing file."""
    checked = path(value)
    if checked.exists() and not checked.is_dir():
        raise ValueError(f"{checked} is a file; give a folder")
    return checked


def input_file(value: Any) -> Path:
    """An existing .npy, .npz or image file (``--input``)."""
    from edgebench.runners.protocol.tensors import IMAGE_SUFFIXES

    checked = path(value)
    suffix = checked.suffix.lower()
    if suffix not in (".npy", ".npz", *IMAGE_SUFFIXES):
        raise ValueError(f"{checked} is not an image ({', '.join(IMAGE_SUFFIXES)}), .npy or .npz")
    if not checked.is_file():
        raise ValueError(f"{checked}: no such file")
    if suffix in (".npy", ".npz"):
        _check_arrays(checked)
    return checked


def _check_arrays(source: Path) -> None:
    """An --input array file must be numpy's and hold finite numbers: a NaN input makes every
    output and every comparison NaN, so it is refused before any run rather than in each cell."""
    from edgebench.runners.protocol.tensors import (
        load_array_file,
        nonfinite_array,
        nonfinite_message,
    )

    try:
        arrays = load_array_file(str(source))
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    bad = nonfinite_array(arrays)
    if bad is not None:
        raise ValueError(f"{source} {nonfinite_message(bad)}")


def calibration_source(value: Any) -> Path:
    """An existing folder of samples, or one .npy, .npz or image file (``--calibration``)."""
    from edgebench.runners.protocol.tensors import IMAGE_SUFFIXES

    checked = path(value)
    if checked.is_dir():
        return checked
    if checked.suffix.lower() not in (".npy", ".npz", *IMAGE_SUFFIXES):
        raise ValueError(
            f"{checked} is not a folder, an image ({', '.join(IMAGE_SUFFIXES)}), .npy or .npz"
        )
    if not checked.is_file():
        raise ValueError(f"{checked}: no such file or folder")
    return checked


def preprocessing(value: Any) -> str:
    """``--preprocess``: key=value items (mean, std, layout, size, scale, color), checked now."""
    from edgebench.runners.protocol.tensors import parse_preprocess

    checked = text(value)
    parse_preprocess(checked)  # ValueError names the bad item
    return checked


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


EMPTY = "is empty; name at least one"


def comma_items(
    value: Any, split: bool = True, rejoin: bool = False, unique: bool = True
) -> list[Any]:
    """The one comma-list parser: a list from "a,b", ("a,b", "c") (an option given twice),
    ["a", "b"] (a TOML array) or a single TOML value; duplicates dropped, order kept.

    An empty value (``''``, ``','``, ``[]``) is an error, never "the default", and so is an
    empty item inside a list (``fp32,,int8``, ``1,,2``, ``1,``). ``split``: strings are split
    on commas (not for cpu lists and --shape, whose syntax has commas). ``rejoin``: a run of
    parts that names an existing file is kept whole (``--models /tmp/a,b.onnx``).
    """
    raw = list(value) if isinstance(value, (list, tuple)) else [value]
    items: list[Any] = []
    for item in raw:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError("must be a list")
        if not isinstance(item, str):
            items.append(item)
            continue
        parts = [p.strip() for p in item.split(",")] if split else [item.strip()]
        if rejoin:
            parts = _rejoin_files(parts)
        if not any(parts) and len(raw) > 1:
            shown = ", ".join(repr(i) for i in raw)
            raise ValueError(f"has an empty item ({shown}); remove it or give a value")
        if not any(parts):
            raise ValueError(EMPTY)
        if not all(parts):
            raise ValueError(f"{item!r} has an empty item; separate the items with single commas")
        items += parts
    if not items:
        raise ValueError(EMPTY)
    return list(dict.fromkeys(items)) if unique else items


def _rejoin_files(parts: list[str]) -> list[str]:
    """Comma-split ``parts`` with runs joined back when the joined text is an existing file, so
    a model path such as ``/tmp/a,b.onnx`` is not cut in two (the longest run wins)."""
    out: list[str] = []
    i = 0
    while i < len(parts):
        for j in range(len(parts), i + 1, -1):
            joined = ",".join(parts[i:j])
            if os.path.isfile(os.path.expanduser(joined)):
                out.append(joined)
                i = j
                break
        else:
            out.append(parts[i])
            i += 1
    return out


def _strings(items: list[Any]) -> list[str]:
    if not all(isinstance(i, str) for i in items):
        raise ValueError("must be a list of strings")
    for item in items:
        problem = _control_problem(item)
        if problem:
            raise ValueError(problem)
    return items


def names(value: Any) -> list[str]:
    """Comma-separated or repeated names; duplicates dropped, order kept. An empty value or
    item is an error. A comma inside an existing file's path does not split it (``--models
    /tmp/a,b.onnx`` is one model when that file exists)."""
    return _strings(comma_items(value, split=True, rejoin=True))


def device_names(value: Any) -> list[str]:
    """``names`` of devices, by every command that takes them (`run`, `devices`, `clean`,
    `recommend`); an empty list says what to give."""
    try:
        return names(value)
    except ValueError as exc:
        if str(exc) == EMPTY:
            raise ValueError(f"{EMPTY} device, e.g. local") from None
        raise


def entries(value: Any) -> list[str]:
    """Like ``names`` but never split on commas (cpu lists such as 0,2 contain them)."""
    return _strings(comma_items(value, split=False))


def wholes(minimum: int, limit: int | None = None) -> Check:
    """Whole numbers >= ``minimum`` (and not over ``limit``), comma-separated or repeated."""
    one = whole(minimum, limit)

    def check(value: Any) -> list[int]:
        numbers = []
        for item in comma_items(value):
            try:
                numbers.append(one(item))
            except ValueError as exc:
                if str(exc).startswith("must be"):
                    raise ValueError(f"must be whole numbers >= {minimum}, e.g. 1,4") from None
                raise
        return list(dict.fromkeys(numbers))

    check.metavar = "N[,N...]"  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return check


def choices(*allowed: str) -> Check:
    def check(value: Any) -> list[str]:
        items = names(value)
        bad = [i for i in items if i not in allowed]
        if bad or not items:
            shown = repr(bad[0]) if bad else "nothing"
            listed = " or ".join(allowed) if len(allowed) < 3 else "one of " + ", ".join(allowed)
            raise ValueError(f"{shown} is not {listed}")
        return items

    check.metavar = "|".join(allowed) + "[,...]"  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return check


def optional(check: Check) -> Check:
    def checked(value: Any) -> Any:
        return None if value is None else check(value)

    checked.__name__ = f"optional_{getattr(check, '__name__', 'value')}"
    checked.metavar = getattr(check, "metavar", "VALUE")  # type: ignore[attr-defined]  # a function attribute, read with getattr
    return checked


text.metavar = "TEXT"  # type: ignore[attr-defined]  # a function attribute, read with getattr
path.metavar = "PATH"  # type: ignore[attr-defined]  # a function attribute, read with getattr
folder.metavar = "PATH"  # type: ignore[attr-defined]  # a function attribute, read with getattr
input_file.metavar = "PATH"  # type: ignore[attr-defined]  # a function attribute, read with getattr
calibration_source.metavar = "PATH"  # type: ignore[attr-defined]  # a function attribute, read with getattr
preprocessing.metavar = "KEY=VALUE;..."  # type: ignore[attr-defined]  # a function attribute, read with getattr
names.metavar = "NAME[,NAME...]"  # type: ignore[attr-defined]  # a function attribute, read with getattr
device_names.metavar = "NAME[,NAME...]"  # type: ignore[attr-defined]  # a function attribute, read with getattr
entries.metavar = "VALUE"  # type: ignore[attr-defined]  # a function attribute, read with getattr


def shapes(value: Any) -> list[str]:
    """Input shapes to sweep: ``1x3x160x160`` or ``name=1x3x160x160``, comma separated.

    A shape's dimensions are joined by ``x``; commas separate shapes. So ``1,3,32,32``, which
    reads as one shape written like --shape, is refused rather than swept as four 1-D shapes."""
    typed = comma_items(value, unique=False)
    if len(typed) > 1 and all(isinstance(i, str) and i.isdigit() for i in typed):
        joined = "x".join(typed)
        raise ValueError(
            f"{','.join(typed)!r} is one shape written with commas; join a shape's "
            f"dimensions with x ({joined}) and separate shapes with commas "
            "(1x3x160x160,1x3x224x224)"
        )
    items = names(value)
    for item in items:
        dims = item.rpartition("=")[2].split("x")
        if not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"{item!r} is not a shape such as 1x3x224x224 or input=1x3x224x224")
        problem = tensor_problem([int(d) for d in dims])
        if problem:
            raise ValueError(f"{item!r}: {problem}")
    return items


shapes.metavar = "[NAME=]1x3xHxW[,...]"  # type: ignore[attr-defined]  # a function attribute, read with getattr
