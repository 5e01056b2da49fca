"""Click options generated from the setting declarations (``planning/config.py``).

`run` gets one option per declared setting; the other commands take the settings they share
with it (``--lab``, ``--results-dir``, ``--metric``, ``--devices``, ``compare``'s thresholds)
from the same declarations, so a flag, its checker, its default and its help text are written
once and a bad value is the same one error line from every command."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from edgebench.planning.checks import Check, names
from edgebench.planning.config import SettingSpec, checked, find_setting, settings

#: ``setting_option``'s default: the declaration's own.
DECLARED: Any = object()


def _with_default(text: str, spec: SettingSpec, default: Any) -> str:
    if spec.show_default and default not in (None, [], False):
        shown = ",".join(map(str, default)) if isinstance(default, list) else default
        text += f"  [default: {shown}]"
    return text


def run_option(spec: SettingSpec) -> Callable:
    """A `run` option: the raw text goes to ``from_options``, which checks it with the rest
    of the configuration."""
    assert spec.option is not None
    help_text = _with_default(spec.help, spec, spec.default)
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


def run_options(command: Callable) -> Callable:
    for spec in reversed([s for s in settings() if s.option is not None]):
        command = run_option(spec)(command)
    return command


class CheckedValue(click.ParamType):
    """A setting's checker as a click type: a bad value is one error line naming the flag, as
    `run` and plan files word it."""

    def __init__(self, check: Check, flag: str) -> None:
        self.check = check
        self.flag = flag
        self.name = getattr(check, "metavar", "VALUE")

    @property
    def choices(self) -> Sequence[str] | None:
        """The values a choice setting takes (the metrics registry, looked up now)."""
        return getattr(self.check, "choices", None)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return self.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return checked(self.check, value, self.flag)


def setting_option(
    part: str,
    name: str,
    *,
    dest: str | None = None,
    help: str | None = None,
    default: Any = DECLARED,
    check: Check | None = None,
    required: bool = False,
) -> Callable:
    """The option of another command for the declared setting ``part``.``name``: `run`'s flag,
    checker, default and help text. ``help`` and ``default`` say what the setting means for that
    command where it differs; ``check`` narrows the values (recommend ranks by fewer metrics)."""
    spec = find_setting(part, name)
    value_check = check or spec.check
    value_default = spec.default if default is DECLARED else default
    help_text = _with_default(help or spec.help, spec, value_default)
    if spec.repeat:
        # A list is checked whole (duplicates across repeats, an empty value), as `run` does.
        def whole_list(ctx: click.Context, param: click.Parameter, raw: tuple[str, ...]) -> Any:
            return value_default if not raw else checked(value_check, raw, spec.flag)

        return click.option(
            spec.flag,
            dest or spec.name,
            multiple=True,
            required=required,
            metavar=getattr(value_check, "metavar", "VALUE"),
            callback=whole_list,
            help=help_text,
        )
    return click.option(
        spec.flag,
        dest or spec.name,
        type=CheckedValue(value_check, spec.flag),
        default=value_default,
        required=required,
        help=help_text,
    )


def comma_list(ctx: click.Context, param: click.Parameter, raw: Any) -> list[str]:
    """Callback of a list option or argument that is no setting of `run` (``report --format``,
    ``convert --to``, ``toolchains install``): read by ``planning.checks.names``, the parser of
    every list `run` takes; not given is ``[]``."""
    if raw is None or raw == ():
        return []
    where = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
    return checked(names, raw, where)


lab_option = setting_option("session", "lab", dest="lab_path")
results_dir_option = setting_option("output", "results_dir")
metric_option = setting_option("output", "metric")
