"""Printing records, as `run` and `show` do."""

from __future__ import annotations

import json

import click

from edgebench.reporting.matrix import format_details, format_matrix
from edgebench.reporting.precisions import format_precisions
from edgebench.results.records import Record


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
