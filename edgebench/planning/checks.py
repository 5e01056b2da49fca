"""Checkers for run settings: each takes a raw value (a string from the command line, or a
TOML value from a plan file) and returns the checked value, or raises ValueError saying what
the value must be. The command line and plan files use the same checker for a setting."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

Check = Callable[[Any], Any]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def whole(minimum: int) -> Check:
    def check(value: Any) -> int:
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ValueError(f"must be a whole number >= {minimum}") from None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"must be a whole number >= {minimum}")
        return value

    check.metavar = "N"  # type: ignore[attr-defined]
    return check


def number(minimum: float | None = None, maximum: float | None = None) -> Check:
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
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ValueError(problem) from None
        if not _is_number(value) or value != value:  # NaN
            raise ValueError(problem)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise ValueError(problem)
        return float(value)

    check.metavar = "X"  # type: ignore[attr-defined]
    return check


def fraction(low_open: bool) -> Check:
    """A probability-like value: (0, 1) or [0, 1)."""
    problem = (
        "must be between 0 and 1, e.g. 0.01" if low_open else "must be a fraction such as 0.05"
    )

    def check(value: Any) -> float:
        checked = number()(value) if not isinstance(value, bool) else None
        if checked is None or not (0 < checked < 1 if low_open else 0 <= checked < 1):
            raise ValueError(problem)
        return checked

    check.metavar = "X"  # type: ignore[attr-defined]
    return check


def one_of(registry: Collection[str], what: str = "") -> Check:
    """A name in ``registry``, looked up when checked (a registry such as the metrics may grow
    after import)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in registry:
            kind = f"a {what}; " if what else ""
            raise ValueError(f"{value!r} is not {kind}one of {', '.join(registry)}")
        return value

    check.metavar = "|".join(registry)  # type: ignore[attr-defined]
    return check


def choice(*allowed: str) -> Check:
    return one_of(allowed)


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def path(value: Any) -> Path:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ValueError("must be a path")
    try:
        return Path(value).expanduser()
    except RuntimeError as exc:  # "~user" with no such user
        raise ValueError(f"cannot expand {value!r} ({exc})") from None


def input_file(value: Any) -> Path:
    """An existing .npy, .npz or image file (``--input``)."""
    from edgebench.runners.backends.tensors import IMAGE_SUFFIXES

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
    from edgebench.runners.backends.tensors import (
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
    from edgebench.runners.backends.tensors import IMAGE_SUFFIXES

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
    from edgebench.runners.backends.tensors import parse_preprocess

    checked = text(value)
    parse_preprocess(checked)  # ValueError names the bad item
    return checked


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _items(value: Any, split: bool) -> list[Any]:
    """A list from "a,b", ("a,b", "c"), ["a", "b"] or a single TOML value."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError("must be a list")
    items: list[Any] = []
    for item in value:
        if isinstance(item, str) and split:
            items += [part.strip() for part in item.split(",") if part.strip()]
        elif isinstance(item, str):
            items += [item.strip()] if item.strip() else []
        else:
            items.append(item)
    return items


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


def _listed(value: Any, split: bool) -> list[str]:
    raw = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(v, str) and not v.replace(",", "").strip() for v in raw):
        # An explicit "" or "," (--frameworks '') never means "the default" (every framework).
        raise ValueError("is empty; name at least one")
    items = _items(value, split)
    if not all(isinstance(i, str) and i for i in items):
        raise ValueError("must be a list of strings")
    if not items:  # [] in a plan
        raise ValueError("is empty; name at least one")
    return list(dict.fromkeys(items))


def names(value: Any) -> list[str]:
    """Comma-separated or repeated names; duplicates dropped, order kept. An empty value is an
    error. A comma inside an existing file's path does not split it (``--models /tmp/a,b.onnx``
    is one model when that file exists)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        value = [
            part
            for item in value
            for part in (
                _rejoin_files([p.strip() for p in item.split(",")])
                if isinstance(item, str)
                else [item]
            )
        ]
    return _listed(value, split=False)


def entries(value: Any) -> list[str]:
    """Like ``names`` but never split on commas (cpu lists such as 0,2 contain them)."""
    return _listed(value, split=False)


def wholes(minimum: int) -> Check:
    def check(value: Any) -> list[int]:
        try:
            numbers = [whole(minimum)(item) for item in _items(value, split=True)]
        except ValueError:
            raise ValueError(f"must be whole numbers >= {minimum}, e.g. 1,4") from None
        if not numbers:
            raise ValueError(f"must be whole numbers >= {minimum}, e.g. 1,4")
        return list(dict.fromkeys(numbers))

    check.metavar = "N[,N...]"  # type: ignore[attr-defined]
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

    check.metavar = "|".join(allowed) + "[,...]"  # type: ignore[attr-defined]
    return check


def optional(check: Check) -> Check:
    def checked(value: Any) -> Any:
        return None if value is None else check(value)

    checked.__name__ = f"optional_{getattr(check, '__name__', 'value')}"
    checked.metavar = getattr(check, "metavar", "VALUE")  # type: ignore[attr-defined]
    return checked


text.metavar = "TEXT"  # type: ignore[attr-defined]
path.metavar = "PATH"  # type: ignore[attr-defined]
input_file.metavar = "PATH"  # type: ignore[attr-defined]
calibration_source.metavar = "PATH"  # type: ignore[attr-defined]
preprocessing.metavar = "KEY=VALUE;..."  # type: ignore[attr-defined]
names.metavar = "NAME[,NAME...]"  # type: ignore[attr-defined]
entries.metavar = "VALUE"  # type: ignore[attr-defined]


def shapes(value: Any) -> list[str]:
    """Input shapes to sweep: ``1x3x160x160`` or ``name=1x3x160x160``, comma separated."""
    items = names(value)
    for item in items:
        dims = item.rpartition("=")[2].split("x")
        if not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"{item!r} is not a shape such as 1x3x224x224 or input=1x3x224x224")
    return list(dict.fromkeys(items))


shapes.metavar = "[NAME=]1x3xHxW[,...]"  # type: ignore[attr-defined]
