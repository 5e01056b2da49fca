"""`edgebench run`: its options are generated from the run configuration's declarations."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from edgebench.cli.app import cli
from edgebench.cli.values import print_records
from edgebench.planning.config import SettingSpec, from_options, settings


def _option(spec: SettingSpec) -> Callable:
    """A click option that hands the raw text to the setting's own checker."""
    assert spec.option is not None
    help_text = spec.help
    default = spec.default
    if spec.show_default and default not in (None, [], False):
        shown = ",".join(map(str, default)) if isinstance(default, list) else default
        help_text += f"  [default: {shown}]"
    if spec.check.__name__ == "flag":
        return click.option(spec.option, spec.dest, is_flag=True, default=False, help=help_text)
    return click.option(
        spec.option,
        spec.dest,
        multiple=spec.repeat,
        default=None,
        metavar=getattr(spec.check, "metavar", "VALUE"),
        help=help_text,
    )


def _with_options(command: Callable) -> Callable:
    for spec in reversed([s for s in settings() if s.option is not None]):
        command = _option(spec)(command)
    return command


@cli.command()
@_with_options
def run(**options: Any) -> None:
    """Measure every model x framework on every device and print the matrix."""
    from edgebench.measure.session import run_session

    code = run_session(from_options(options), show=print_records)
    if code:
        sys.exit(code)
