"""Commands that read stored runs: show, report, compare, recommend, history, export."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from edgebench.analysis.metrics import RECOMMEND_METRICS, judged_metric
from edgebench.analysis.ranking import correctness_only
from edgebench.cli.app import cli
from edgebench.cli.options import comma_list, metric_option, results_dir_option, setting_option
from edgebench.cli.values import print_records
from edgebench.errors import UserError
from edgebench.paths import default_results_dir, safe_file_name
from edgebench.planning.checks import one_of
from edgebench.results.energy_part import unavailable_flag
from edgebench.results.records import Record
from edgebench.results.store import RUN_FILE, ResultsStore, RunDir
from edgebench.statuses import Status
from edgebench.terminal import printable

log = logging.getLogger(__name__)

#: How many stored cells a "no such cell" error lists.
_LISTED = 8


def _choice(name: str, dest: str, choices: tuple[str, ...], **kwargs: Any) -> Callable:
    """An option with a fixed set of values, the first one the default."""
    return click.option(
        name,
        dest,
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        **kwargs,
    )


@contextmanager
def _writing(option: str, target: Path) -> Iterator[None]:
    """Turn a failure to write ``target`` into one line naming the option, the path and the
    reason (a missing folder, no permission, a read-only file system), exit 2."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise UserError(
            f"{option} {target}: cannot write there ({reason}); "
            "choose a writable place whose folder exists"
        ) from None


def _existing_folder(option: str, target: Path) -> None:
    """The folder a file is written into must exist: a mistyped path is not created."""
    folder = target.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UserError(f"{option} {target}: folder {folder} {what}; create it or choose another")


def _open_run(store: ResultsStore, ref: str | None) -> RunDir:
    """The run ``ref`` names, its files checked before anything is written from it: one
    that cannot be read is one error line naming it; a missing run.json is a warning, since
    the records alone still show the cells. Runs are found through the results index."""
    from edgebench.analysis.results_index import open_run

    run_dir = open_run(store, ref)
    run_dir.check_files()
    if not run_dir.has_metadata:
        log.warning(
            "warning: run %s has no %s (%s): its status and settings are unknown; "
            "showing what its records hold",
            run_dir.run_id,
            RUN_FILE,
            run_dir.metadata_path,
        )
    return run_dir


@cli.command()
@click.argument("run_ref", required=False)
@results_dir_option
@setting_option("output", "format", dest="output_format")
@metric_option
def show(run_ref: str | None, results_dir: Path | None, output_format: str, metric: str) -> None:
    """Print a stored run's matrix (RUN: id, id prefix, folder, or latest)."""
    run_dir = _open_run(ResultsStore(results_dir or default_results_dir()), run_ref)
    records = run_dir.current_records()
    meta = run_dir.metadata()
    if output_format == "table":
        status = meta.get("status", "unknown") if run_dir.has_metadata else f"no {RUN_FILE}"
        click.echo(
            f"run {run_dir.run_id} ({status}, "
            f"{len(records)} cells, edgebench {meta.get('edgebench_version', '?')})"
        )
    if not records:
        click.echo("no finished cells in this run")
        return
    print_records(records, output_format, metric)


@cli.command()
@click.argument("run_ref", required=False)
@results_dir_option
@click.option(
    "--format",
    "formats",
    default="html,md,csv",
    show_default=True,
    callback=comma_list,
    help="Comma-separated: html, md, csv, parquet, json.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Folder for the report files.",
)
def report(run_ref: str | None, results_dir: Path | None, formats: list[str], out: Path) -> None:
    """Write a stored run as a self-contained HTML page, Markdown, CSV, Parquet or JSON."""
    from edgebench.reporting.report import write_report

    run_dir = _open_run(ResultsStore(results_dir or default_results_dir()), run_ref)
    with _writing("--out", out):
        out.mkdir(parents=True, exist_ok=True)
        written = write_report(run_dir, formats, out)
    for path in written:
        click.echo(str(path))


@cli.command()
@click.argument("base_ref")
@click.argument("new_ref")
@results_dir_option
@setting_option("thresholds", "metric")
@setting_option("thresholds", "min_effect")
@setting_option("thresholds", "alpha")
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the verdicts as JUnit XML.",
)
def compare(
    base_ref: str,
    new_ref: str,
    results_dir: Path | None,
    metric: str,
    min_effect: float,
    alpha: float,
    junit: Path | None,
) -> None:
    """Per-cell verdicts between two stored runs; exit 1 when anything regressed."""
    from edgebench.analysis.compare import any_regression, compare_runs
    from edgebench.reporting.junit import junit_xml
    from edgebench.reporting.text import format_comparison

    if junit is not None:
        _existing_folder("--junit", junit)
    store = ResultsStore(results_dir or default_results_dir())
    base, new = _open_run(store, base_ref), _open_run(store, new_ref)
    verdicts = compare_runs(
        base.current_records(),
        new.current_records(),
        min_effect=min_effect,
        alpha=alpha,
        metric=metric,
    )
    click.echo(f"base {base.run_id} -> new {new.run_id}")
    click.echo(format_comparison(verdicts))
    if junit is not None:
        # Exit 2, not 1: CI reads 1 as "regressed". The verdicts above are already printed.
        with _writing("--junit", junit):
            junit.write_text(junit_xml(verdicts, "edgebench.compare"))
    if any_regression(verdicts):
        sys.exit(1)


@cli.command()
@setting_option(
    "sweep",
    "devices",
    default=None,
    required=True,
    help="Devices the app must run on, e.g. A,B,C.",
)
@click.option("--model", required=True, help="Model name as stored in the run.")
@setting_option(
    "output",
    "metric",
    check=one_of(RECOMMEND_METRICS, "metric"),
    help="What the frameworks are ranked by.",
)
@click.option(
    "--budget-ms",
    type=float,
    default=None,
    help="Latency budget in ms per device, on the ranked metric when it is a latency (p99, "
    "ttft), else on p50 (per inference, or per generated token for a generative model).",
)
@click.option(
    "--budget-mb",
    type=float,
    default=None,
    help="Peak memory budget in MB per device: a framework whose chosen cell's peak RSS "
    "exceeds it on a device does not meet the budget there.",
)
@click.option(
    "--max-accuracy-drop",
    type=float,
    default=None,
    help="Refuse quantized cells whose top-1 agreement with fp32 drops by more than this "
    "fraction (0.01 = 1%); quantized cells without a top-1 figure are refused too.",
)
@click.option("--run", "run_ref", default=None, help="Stored run to decide from [default: newest].")
@results_dir_option
def recommend(
    devices: list[str],
    model: str,
    metric: str,
    budget_ms: float | None,
    budget_mb: float | None,
    max_accuracy_drop: float | None,
    run_ref: str | None,
    results_dir: Path | None,
) -> None:
    """Which framework to ship for a list of devices, with the reasoning."""
    from edgebench.analysis.recommend import recommend as choose
    from edgebench.reporting.text import format_recommendation

    if budget_ms is not None and not 0 < budget_ms < float("inf"):
        raise UserError(f"--budget-ms {budget_ms:g}: must be a positive number of ms, e.g. 16.7")
    if budget_mb is not None and not 0 < budget_mb < float("inf"):
        raise UserError(f"--budget-mb {budget_mb:g}: must be a positive number of MB, e.g. 512")
    if max_accuracy_drop is not None and not 0 <= max_accuracy_drop < 1:
        raise UserError(
            f"--max-accuracy-drop {max_accuracy_drop:g}: must be a fraction in [0, 1), e.g. 0.01"
        )
    run_dir = _open_run(ResultsStore(results_dir or default_results_dir()), run_ref)
    records = run_dir.current_records()
    _check_present(run_dir.run_id, "device", devices, [r.device for r in records])
    _check_present(
        run_dir.run_id,
        "model",
        [model],
        [r.model for r in records if r.device in devices],
        where=f" on {', '.join(devices)}",
    )
    _check_metric_measured(run_dir.run_id, records, devices, model, metric)
    result = choose(
        records,
        devices,
        model,
        metric=metric,
        budget_ms=budget_ms,
        max_accuracy_drop=max_accuracy_drop,
        budget_mb=budget_mb,
    )
    click.echo(f"from run {run_dir.run_id}")
    click.echo(format_recommendation(result))


def _check_present(
    run_id: str, what: str, wanted: list[str], stored: list[str], where: str = ""
) -> None:
    """A device or model the run does not have is a mistake, not an empty recommendation."""
    known = list(dict.fromkeys(stored))
    missing = [w for w in wanted if w not in known]
    if missing:
        raise UserError(
            f"run {run_id} has no {what} {', '.join(repr(m) for m in missing)}{where}; "
            f"it has: {', '.join(known) or 'no records'}"
        )


def _check_metric_measured(
    run_id: str, records: list[Record], devices: list[str], model: str, metric: str
) -> None:
    """Ok cells none of which has the metric (energy on a device without an energy source)
    cannot be ranked by it: say which figure is missing and how to get it."""
    from edgebench.reporting.tables import shorten

    ok = [
        r
        for r in records
        if r.model == model
        and r.device in devices
        and r.status == Status.OK
        and not correctness_only(r)
    ]
    wanted = judged_metric(metric, {r.framework for r in ok})
    if not ok or any(wanted.value(r) is not None for r in ok):
        return
    gaps = [unavailable_flag(r.energy.unavailable) for r in ok if r.energy and r.energy.unavailable]
    why = f" ({shorten(gaps[0], 200)})" if metric == "energy" and gaps else ""
    how = f"{wanted.how_to_get}, or" if wanted.how_to_get else "or"
    others = ", ".join(m for m in RECOMMEND_METRICS if m != metric)
    raise UserError(
        f"run {run_id}: the {len(ok)} ok cell(s) of {model} on {', '.join(devices)} have no "
        f"{wanted.label} ({wanted.unit}){why}; {how} rank by another --metric ({others})"
    )


@cli.command(name="history")
@click.option("--device", default=None)
@click.option("--model", default=None)
@click.option("--framework", default=None)
@setting_option("output", "metric", help="The metric whose trend is shown.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SVG file for the trend [default: reports/history-DEVICE-MODEL-FRAMEWORK.svg].",
)
@results_dir_option
def history_cmd(
    device: str | None,
    model: str | None,
    framework: str | None,
    metric: str,
    plot: Path | None,
    results_dir: Path | None,
) -> None:
    """The stored runs (date, git sha, lab, plan), or one cell's trend across them."""
    from edgebench.analysis.history import build_index, history
    from edgebench.reporting.charts import plot_history
    from edgebench.reporting.text import format_history, format_run_index

    store = ResultsStore(results_dir or default_results_dir())
    if not (device or model or framework):
        for line in format_run_index(build_index(store)):
            click.echo(line)
        return
    if not (device and model and framework):
        raise UserError("history of one cell needs --device, --model and --framework together")
    # A generative throughput is its decode speed; its energy is per decoded token (mJ/tok).
    tracked = judged_metric(metric, [framework])
    metric = tracked.name
    stored: set[tuple[str, str, str]] = set()
    points = history(store, device, model, framework, metric=metric, cells_seen=stored)
    if not points:
        raise UserError(_no_such_cell(store.root, (device, model, framework), stored))
    click.echo(format_history(points, tracked))
    for line in _change_point_lines(store, device, model, framework, metric):
        click.echo(line)
    target = plot or Path("reports") / _plot_name(device, model, framework)
    unit = f"{tracked.label} ({tracked.bare_unit})"
    with _writing("--plot", target):
        plot_history(points, target, title=printable(f"{device}/{model}/{framework}"), unit=unit)
    click.echo(f"plot: {target}")


def _change_point_lines(
    store: ResultsStore, device: str, model: str, engine: str, metric: str
) -> list[str]:
    """The cell's change points across the nights (analysis/nightly.py), one line each."""
    from edgebench.analysis.nightly import cell_histories

    lines = []
    for found in cell_histories(store, metric, device=device, model=model, engine=engine):
        series = f" ({found.key.series})" if found.key.series else ""
        if not found.steps:
            trend = sum(1 for n in found.nights if n.trend_point)
            nights = f"{trend} night" + ("" if trend == 1 else "s")
            lines.append(f"change points{series}: none in {nights}")
            continue
        lines.append(f"change points{series}:")
        lines += [f"  {step.describe()}" for step in found.steps]
    return lines


def _no_such_cell(
    root: Path, wanted: tuple[str, str, str], stored: set[tuple[str, str, str]]
) -> str:
    """No run has the cell: say so, and what the runs do have (closest first)."""
    shown = sorted(stored, key=lambda c: (sum(a != b for a, b in zip(c, wanted, strict=True)), c))
    listed = ", ".join("/".join(c) for c in shown[:_LISTED])
    more = f" and {len(shown) - _LISTED} more" if len(shown) > _LISTED else ""
    return (
        f"no stored run under {root} has the cell {'/'.join(wanted)} "
        f"(--device/--model/--framework); stored cells: {listed or 'none'}{more}"
    )


def _plot_name(device: str, model: str, framework: str) -> str:
    """The default plot's file name: inside the reports folder whatever the names hold."""
    parts = (device, model, framework)
    return "history-" + "-".join(safe_file_name(part) for part in parts) + ".svg"


@cli.command(name="export")
@click.argument("run_ref", required=False)
@results_dir_option
@_choice("--format", "export_format", ("csv", "parquet"))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Output file [default: RUN.csv / RUN.parquet in the current folder].",
)
def export_cmd(
    run_ref: str | None, results_dir: Path | None, export_format: str, out: Path | None
) -> None:
    """Write a stored run as a flat table for pandas/spreadsheets."""
    from edgebench.reporting.export import export_run

    run_dir = _open_run(ResultsStore(results_dir or default_results_dir()), run_ref)
    target = out or Path(f"{run_dir.run_id}.{export_format}")
    _existing_folder("--out", target)
    with _writing("--out", target):
        rows = export_run(run_dir.current_records(), target, export_format)
    click.echo(f"wrote {rows} rows to {target}")
