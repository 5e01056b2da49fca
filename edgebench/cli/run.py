"""`edgebench run`: its options are generated from the run configuration's declarations."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import click

from edgebench.analysis.compare import CellVerdict
from edgebench.cli.app import cli
from edgebench.cli.options import run_options
from edgebench.cli.values import print_records
from edgebench.planning.config import from_options
from edgebench.reporting.junit import junit_xml
from edgebench.reporting.text import format_comparison
from edgebench.results.records import Record


class _TerminalOutput:
    """The run's matrix (or JSON lines) on stdout, and a plan's comparison with its baseline.

    JSON lines are printed as each record is stored, so a pipeline sees the run progress; the
    matrix waits for the end.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # records arrive from the device workers' threads
        self._shown: dict[int, Record] = {}  # by identity; holding them keeps the ids unique

    def record(self, record: Record, output_format: str) -> None:
        if output_format != "jsonl":
            return
        with self._lock:
            print_records([record], output_format, "")
            sys.stdout.flush()
            self._shown[id(record)] = record

    def records(self, records: list[Record], output_format: str, metric: str) -> None:
        if output_format == "jsonl":
            with self._lock:
                records = [r for r in records if id(r) not in self._shown]
        print_records(records, output_format, metric)

    def comparison(self, verdicts: list[CellVerdict], plan_name: str, junit: Path | None) -> None:
        click.echo(format_comparison(verdicts))
        if junit is not None:
            junit.write_text(junit_xml(verdicts, f"edgebench.{plan_name}"))
            click.echo(f"JUnit XML: {junit}", err=True)


@cli.command()
@run_options
def run(**options: Any) -> None:
    """Measure every model x framework on every device and print the matrix."""
    from edgebench.measure.session import run_session

    config = from_options(options)
    devices = None
    if config.session.cluster:
        # Imported only here: a run without --cluster neither imports nor needs Ray.
        from edgebench.cluster.source import ClusterLab

        devices = ClusterLab(config.session.cluster)
    code = run_session(
        config,
        output=_TerminalOutput(),
        devices=devices,
        precision_chosen=bool(options.get("sweep__precision")),
    )
    if code:
        sys.exit(code)
