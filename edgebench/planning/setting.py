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
    named: str = "",
    option: str | None = "",
    plan: str | None = "",
    repeat: bool = False,
    show_default: bool = True,
) -> Any:
    """A field of a config part.

    ``named`` is the name users type, when it is not the field's own: a field carries its
    unit (``min_time_s``) while users keep typing ``--min-time`` and ``min_time``. ``option``
    is the command-line flag ("" derives ``--typed-name``; None: not an option of `run`);
    ``plan`` is the key in the plan's table ("" the typed name; None: command line only);
    ``repeat`` lets the option be given several times.
    """
    metadata = {
        "check": check,
        "help": help,
        "named": named,
        "option": option,
        "plan": plan,
        "repeat": repeat,
        "show_default": show_default,
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)
