"""How a setting of `edgebench run` is declared: a dataclass field whose metadata holds its
checker, help text, command-line option and plan key (read by ``planning.config``)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from edgebench.planning.checks import Check


def setting(
    default: Any,
    check: Check,
    help: str,
    *,
    option: str | None = "",
    plan: str | None = "",
    repeat: bool = False,
    show_default: bool = True,
) -> Any:
    """A field of a config part.

    ``option`` is the command-line flag ("" derives ``--field-name``; None: plan file only);
    ``plan`` is the key in the plan's table ("" the field name; None: command line only);
    ``repeat`` lets the option be given several times.
    """
    metadata = {
        "check": check,
        "help": help,
        "option": option,
        "plan": plan,
        "repeat": repeat,
        "show_default": show_default,
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)
