"""`edgebench publish`: the nightly dashboard, a static site built from the results store."""

from __future__ import annotations

import re
import sys
from datetime import date
from pathlib import Path

import click

from edgebench.cli.app import cli
from edgebench.cli.options import results_dir_option, setting_option
from edgebench.errors import UserError
from edgebench.paths import default_results_dir
from edgebench.results.store import ResultsStore

DEFAULT_OUT = Path("reports/site")


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    problem = "is no date"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:  # the form alone lets 2026-13-45, 2026-02-31 and 0000-00-00 through
            return date.fromisoformat(value).isoformat()
        except ValueError as exc:
            problem = f"is no calendar date ({exc})"
    raise click.BadParameter(f"{value!r} {problem}; write it as YYYY-MM-DD")


@cli.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="The site's folder (created; rebuilt in place, writing only what changed).",
)
@results_dir_option
@setting_option("output", "metric", help="The metric the dashboard follows.")
@click.option(
    "--since",
    default=None,
    callback=_since,
    metavar="YYYY-MM-DD",
    help="The regressions page lists change points from this date [default: the last 14 nights].",
)
def publish(out: Path, results_dir: Path | None, metric: str, since: str | None) -> None:
    """Build the nightly dashboard: one folder of self-contained HTML pages (no server, no
    network): an overview grid, a page per cell with its history and change points, the
    regressions, and each night's run and full report."""
    from edgebench.reporting.site.build import publish_site

    store = ResultsStore(results_dir or default_results_dir())
    if not store.runs():
        raise UserError(f"no stored runs under {store.root}; run `edgebench run` first")
    summary = publish_site(store, out, metric, since, stream=sys.stderr)
    click.echo(summary.line())
