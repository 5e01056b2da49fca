"""Small helpers shared by the commands: comma lists, whole numbers, printing records."""

from __future__ import annotations

import json

import click

from edgebench.errors import UserError
from edgebench.planning.checks import comma_items
from edgebench.reporting.matrix import format_details, format_matrix
from edgebench.reporting.precisions import format_precisions
from edgebench.results.records import Record


def split_values(values: tuple[str, ...] | str | None) -> list[str]:
    """``("a,b", "c")`` -> ``["a", "b", "c"]``: options take commas, repeats, or both.

    Nothing given (or only blanks) is ``[]``, the command's default; an empty item inside a
    list (``a,,b``) is a usage error, as it is for `edgebench run` (the same parser)."""
    if values is None:
        return []
    given = (values,) if isinstance(values, str) else values
    if not any(value.replace(",", "").strip() for value in given):
        return []
    try:
        return comma_items(list(given), unique=False)
    except ValueError as exc:
        raise UserError(f"{_option_of(values)}: {exc}") from None


def _option_of(values: object) -> str:
    """The option of the running command that holds ``values`` (for the error line)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        for param in ctx.command.params:
            if ctx.params.get(param.name or "") is values and param.opts:
                return param.opts[0]
    return repr(values)


def print_records(records: list[Record], output_format: str, metric: str) -> None:
    if output_format == "jsonl":
        for record in records:
            click.echo(json.dumps(record.to_dict(), separators=(",", ":")))
        return
    click.echo("")
    click.echo(format_matrix(records, metric))
    by_precision = format_precisions(records, metric)
    if by_precision:
        click.echo(by_precision)
    click.echo(format_details(records))
