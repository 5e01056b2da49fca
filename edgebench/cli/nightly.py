"""`edgebench accept`: a plan's night declared the new normal for its gate (docs/nightly.md)."""

from __future__ import annotations

from pathlib import Path

import click

from edgebench.cli.app import cli
from edgebench.cli.options import results_dir_option
from edgebench.errors import UserError
from edgebench.paths import default_results_dir
from edgebench.results.store import ResultsStore, utc_now


@cli.command()
@click.argument("run_ref")
@results_dir_option
def accept(run_ref: str, results_dir: Path | None) -> None:
    """Accept a plan's run (RUN: id, id prefix or folder): it becomes good, and the plan's
    history gate judges later nights from its level on (the nights before it no longer weigh)."""
    from edgebench.analysis.results_index import open_run

    if not run_ref.strip():
        # Never the newest run by default: a nightly script's unset $RUN would re-baseline
        # the gate on whatever ran last.
        raise UserError(
            f"accept: RUN is empty ({run_ref!r}); name the night to accept by its id, id "
            "prefix or folder (`edgebench history` lists the runs)"
        )
    run_dir = open_run(ResultsStore(results_dir or default_results_dir()), run_ref)
    run_dir.check_files()
    meta = run_dir.metadata()
    plan = meta.get("plan")
    if not plan:
        raise UserError(
            f"run {run_dir.run_id} was not run from a plan; accept marks a plan's night "
            "(edgebench run --plan FILE)"
        )
    if meta.get("status") != "complete":
        raise UserError(
            f"run {run_dir.run_id} is {meta.get('status') or 'not finished'}; accept a run "
            f"that finished (edgebench run --resume {run_dir.run_id} completes it)"
        )
    run_dir.update_metadata(good=True, accepted=True, accepted_at=utc_now())
    click.echo(
        f"accepted {run_dir.run_id}: plan {plan}'s gate now judges later nights from this "
        "night's level"
    )
