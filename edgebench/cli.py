"""The `edgebench` command line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click
import onnx

from edgebench import __version__
from edgebench.cli_values import print_records, split_values
from edgebench.converters import (
    CONVERTERS,
    ArtifactCache,
    ConversionError,
    ConversionOptions,
    get_converter,
)
from edgebench.errors import UserError
from edgebench.lab.cores import format_cpu_list
from edgebench.lab.inventory import LOCAL, probe_device, resolve_devices
from edgebench.lab.lab_file import load_lab
from edgebench.lab.profiles import compare_clusters
from edgebench.lab.transports.base import TransportError
from edgebench.measure.output_check import DEFAULT_TOLERANCE
from edgebench.models import BUILTIN_MODELS, builtin_model_path, summarize_model
from edgebench.paths import cache_dir, default_results_dir
from edgebench.planning.modelref import input_shapes, parse_shape_overrides, resolve_models
from edgebench.reporting.matrix import METRICS
from edgebench.results.store import ResultsStore
from edgebench.run_command import RunOptions, run_matrix

log = logging.getLogger("edgebench")


lab_option = click.option(
    "--lab",
    "lab_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Lab inventory TOML [default: $EDGEBENCH_LAB, then ~/.config/edgebench/lab.toml].",
)


results_dir_option = click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where runs are stored [default: $EDGEBENCH_RESULTS or ~/.local/share/edgebench/runs].",
)
metric_option = click.option(
    "--metric",
    type=click.Choice(list(METRICS)),
    default="p50",
    show_default=True,
    help="What the matrix shows.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="edgebench")
@click.option("-v", "--verbose", is_flag=True, help="Log what edgebench does.")
def cli(verbose: bool) -> None:
    """Compare on-device inference frameworks with numbers you can trust."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="edgebench: %(message)s",
        stream=sys.stderr,
    )
    # paramiko logs its own tracebacks (e.g. a banner read cut short by a dropped link) from
    # its transport thread; edgebench reports those failures itself, in one line.
    logging.getLogger("paramiko").setLevel(logging.WARNING if verbose else logging.CRITICAL)


@cli.command()
@click.option("--devices", multiple=True, help="Devices to measure on [default: local].")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A run plan (TOML): matrix, sweeps, thresholds; compares with its last good run.",
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --plan: write the comparison with the baseline as JUnit XML.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=None,
    help="Visit each device's cells in N interleaved rounds (A B C A B C) and pool the samples "
    "[default: 3 when several frameworks share a device, else 1].",
)
@click.option(
    "--target-ci",
    type=click.FloatRange(min=0.01, max=50),
    default=None,
    help="Keep sampling until the 95% CI of the median is within +-PCT % (capped by --max-time).",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Fail at once when another edgebench run holds a device, instead of waiting.",
)
@click.option(
    "--resume",
    "resume_ref",
    default=None,
    help="Continue a stopped run (same options): completed cells are not measured again.",
)
@lab_option
@click.option(
    "--models", multiple=True, help="Built-in names or .onnx paths [default: all built-in]."
)
@click.option("--frameworks", multiple=True, help="Frameworks [default: every known one].")
@click.option(
    "--threads",
    multiple=True,
    default=("1",),
    show_default=True,
    help="Thread counts to sweep, e.g. 1,4.",
)
@click.option(
    "--cores",
    multiple=True,
    default=("all",),
    show_default=True,
    help="Cores: all, 0, 0-3, 0,2 or a cluster name; repeat to sweep.",
)
@click.option("--precision", type=click.Choice(["fp32", "fp16"]), default="fp32", show_default=True)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Untimed iterations first.",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Minimum timed iterations.",
)
@click.option(
    "--min-time",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Minimum timed seconds per cell.",
)
@click.option(
    "--max-time",
    type=click.FloatRange(min=0.01),
    default=120.0,
    show_default=True,
    help="Stop timing a cell after this many seconds.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Concurrent inference streams (throughput mode).",
)
@click.option(
    "--shape",
    multiple=True,
    help="Input shape for dynamic models: 1,3,640,640 or name=1,3,640,640.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=600.0,
    show_default=True,
    help="Seconds before a cell is abandoned.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the input tensors.")
@click.option(
    "--reference",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="ONNX model that pre-converted artifacts are checked against.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=DEFAULT_TOLERANCE["fp32"],
    show_default=True,
    help="Max relative L2 error vs ONNX Runtime for fp32 cells.",
)
@click.option(
    "--tolerance-fp16",
    type=click.FloatRange(min=0),
    default=DEFAULT_TOLERANCE["fp16"],
    show_default=True,
    help="Max relative L2 error vs ONNX Runtime for fp16 cells.",
)
@click.option(
    "--force-convert", is_flag=True, help="Reconvert even when the cache has the artifact."
)
@click.option(
    "--energy-source",
    type=click.Choice(["auto", "android_fuel_gauge", "android_odpm", "ina3221", "rapl", "none"]),
    default=None,
    help="Energy source on the devices [default: the device profile's, else auto].",
)
@click.option(
    "--baseline-s",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Idle power is measured this long before each cell.",
)
@click.option(
    "--telemetry-period",
    type=click.FloatRange(min=0.005),
    default=0.05,
    show_default=True,
    help="Seconds between telemetry samples on the device.",
)
@click.option(
    "--sync-marker",
    default=None,
    help="Device file that exists while the timed window runs (for external power meters).",
)
@click.option(
    "--cooldown-temp",
    type=float,
    default=None,
    help="Before each cell, wait until the hottest thermal zone is below this, C.",
)
@click.option(
    "--cooldown-max-wait",
    type=click.FloatRange(min=0),
    default=120.0,
    show_default=True,
    help="Longest cool-down wait per cell, s.",
)
@click.option(
    "--set-governor",
    default=None,
    help="cpufreq governor for the pinned cores during each cell (e.g. performance; needs root"
    " on the device), restored afterwards.",
)
@click.option(
    "--sustained",
    type=click.FloatRange(min=1),
    default=None,
    help="Run each cell continuously for this many seconds and compare its first and last 10%.",
)
@click.option(
    "--temp-limit",
    type=float,
    default=None,
    help="Flag cells hotter than this, C [default: the profile's max_temp_c].",
)
@results_dir_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "jsonl"]),
    default="table",
    show_default=True,
)
@metric_option
def run(**options: Any) -> None:
    """Measure every model x framework on every device and print the matrix."""
    code = run_matrix(RunOptions(**options))
    if code:
        sys.exit(code)


@cli.command()
@click.argument("run_ref", required=False)
@results_dir_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "jsonl"]),
    default="table",
    show_default=True,
)
@metric_option
def show(run_ref: str | None, results_dir: Path | None, output_format: str, metric: str) -> None:
    """Print a stored run's matrix (RUN: id, id prefix, folder, or latest)."""
    run_dir = ResultsStore(results_dir or default_results_dir()).open(run_ref)
    records = run_dir.current_records()
    meta = run_dir.metadata()
    if output_format == "table":
        click.echo(
            f"run {run_dir.run_id} ({meta.get('status', 'unknown')}, "
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
    help="Comma-separated: html, md, csv, parquet, json.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Folder for the report files.",
)
def report(run_ref: str | None, results_dir: Path | None, formats: str, out: Path) -> None:
    """Write a stored run as a self-contained HTML page, Markdown, CSV, Parquet or JSON."""
    from edgebench.reporting.report import write_report

    run_dir = ResultsStore(results_dir or default_results_dir()).open(run_ref)
    out.mkdir(parents=True, exist_ok=True)
    for path in write_report(run_dir, split_values(formats), out):
        click.echo(str(path))


@cli.command()
@click.argument("base_ref")
@click.argument("new_ref")
@results_dir_option
@click.option("--metric", default="p50", show_default=True, help="p50, throughput, energy, memory.")
@click.option(
    "--min-effect",
    type=click.FloatRange(min=0, max=1),
    default=0.05,
    show_default=True,
    help="Smallest relative change that counts.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="Significance level of the Mann-Whitney U test on the raw samples.",
)
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
    from edgebench.analysis.compare import (
        any_regression,
        compare_runs,
        format_comparison,
        junit_xml,
    )

    store = ResultsStore(results_dir or default_results_dir())
    base, new = store.open(base_ref), store.open(new_ref)
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
        junit.write_text(junit_xml(verdicts, "edgebench.compare"))
    if any_regression(verdicts):
        sys.exit(1)


@cli.command()
@click.option("--devices", "names", required=True, help="Devices the app must run on, e.g. A,B,C.")
@click.option("--model", required=True, help="Model name as stored in the run.")
@click.option(
    "--metric",
    type=click.Choice(["p50", "p99", "throughput", "energy", "memory"]),
    default="p50",
    show_default=True,
)
@click.option("--budget-ms", type=float, default=None, help="Latency budget per inference.")
@click.option("--run", "run_ref", default=None, help="Stored run to decide from [default: newest].")
@results_dir_option
def recommend(
    names: str,
    model: str,
    metric: str,
    budget_ms: float | None,
    run_ref: str | None,
    results_dir: Path | None,
) -> None:
    """Which framework to ship for a list of devices, with the reasoning."""
    from edgebench.analysis.recommend import format_recommendation
    from edgebench.analysis.recommend import recommend as choose

    run_dir = ResultsStore(results_dir or default_results_dir()).open(run_ref)
    result = choose(
        run_dir.current_records(), split_values(names), model, metric=metric, budget_ms=budget_ms
    )
    click.echo(f"from run {run_dir.run_id}")
    click.echo(format_recommendation(result))


@cli.command(name="history")
@click.option("--device", default=None)
@click.option("--model", default=None)
@click.option("--framework", default=None)
@click.option("--metric", default="p50", show_default=True)
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
    from edgebench.analysis.history import build_index, format_history, history, plot_history

    store = ResultsStore(results_dir or default_results_dir())
    if not (device or model or framework):
        rows = [
            (
                r.run_id,
                (r.created_at or "-")[:19],
                (r.git_sha or "-")[:10],
                r.plan or "-",
                r.lab_path or "-",
                ",".join(r.devices) or "-",
                str(r.n_records),
                r.status or "-",
            )
            for r in build_index(store)
        ]
        header = ("run", "created", "git", "plan", "lab", "devices", "cells", "status")
        widths = [max(len(x[i]) for x in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        return
    if not (device and model and framework):
        raise UserError("history of one cell needs --device, --model and --framework together")
    points = history(store, device, model, framework, metric=metric)
    click.echo(format_history(points))
    target = plot or Path("reports") / f"history-{device}-{model}-{framework}.svg"
    target.parent.mkdir(parents=True, exist_ok=True)
    plot_history(points, target)
    click.echo(f"plot: {target}")


@cli.command(name="export")
@click.argument("run_ref", required=False)
@results_dir_option
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["csv", "parquet"]),
    default="csv",
    show_default=True,
)
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

    run_dir = ResultsStore(results_dir or default_results_dir()).open(run_ref)
    target = out or Path(f"{run_dir.run_id}.{export_format}")
    rows = export_run(run_dir.current_records(), target, export_format)
    click.echo(f"wrote {rows} rows to {target}")


@cli.command()
@click.argument("model")
@click.option(
    "--to", "targets", default=",".join(CONVERTERS), show_default=True, help="Formats to produce."
)
@click.option("--precision", type=click.Choice(["fp32", "fp16"]), default="fp32", show_default=True)
@click.option(
    "--shape",
    multiple=True,
    help="Input shape for dynamic models: 1,3,640,640 or name=1,3,640,640.",
)
@click.option("--force", is_flag=True, help="Reconvert even when the cache has the artifact.")
def convert(model: str, targets: str, precision: str, shape: tuple[str, ...], force: bool) -> None:
    """Convert MODEL (built-in name or .onnx path) to other formats, through the cache."""
    formats = split_values(targets)
    unknown = [f for f in formats if f not in CONVERTERS]
    if unknown or not formats:
        raise UserError(f"--to {targets}: choose from {', '.join(CONVERTERS)}")
    (ref,) = resolve_models([model], cache_dir())
    if ref.error:
        raise UserError(ref.error)
    if ref.format != "onnx":
        raise UserError(f"{model} is already a {ref.format} model; convert takes an ONNX model")
    inputs = input_shapes(ref, parse_shape_overrides(shape))
    options = ConversionOptions(
        precision=precision, input_shapes={i["name"]: list(i["shape"]) for i in inputs}
    )
    cache = ArtifactCache(cache_dir() / "artifacts")
    failures = 0
    for fmt in formats:
        try:
            artifact = cache.convert(get_converter(fmt), ref.path, ref.sha256, options, force=force)
        except ConversionError as exc:
            failures += 1
            click.echo(f"{fmt}: {exc.kind}: {exc.message}")
            continue
        how = "cached" if artifact.cached else f"converted in {artifact.manifest['time_s']:.2f} s"
        click.echo(f"{fmt}: {how} -> {artifact.path} ({', '.join(artifact.files)})")
    if failures:
        sys.exit(1)


@cli.command(name="devices")
@lab_option
@click.option("--devices", "names", multiple=True, help="Only these devices [default: all].")
def devices_cmd(lab_path: Path | None, names: tuple[str, ...]) -> None:
    """The lab's devices with live status and what was probed on each."""
    lab = load_lab(lab_path)
    wanted = split_values(names) or [LOCAL, *lab.devices]
    click.echo(f"lab: {lab.path or 'none found (only the local device)'}")
    for device in resolve_devices(wanted, lab):
        problem = probe_device(device)
        click.echo(f"\n{device.name}  [{device.transport.describe()}]  ", nl=False)
        if problem:
            click.echo("OFFLINE")
            click.echo(f"  {problem}")
            continue
        click.echo("online")
        for line in describe_facts(device):
            click.echo(f"  {line}")


def describe_facts(device) -> list[str]:
    facts = device.facts()
    freq = facts.max_freq_khz
    clusters = ", ".join(
        f"{name} {format_cpu_list(cpus)}"
        + (f" @{freq[cpus[0]] / 1000:.0f} MHz" if cpus and cpus[0] in freq else "")
        for name, cpus in facts.clusters.items()
    )
    available = [n for n, info in facts.frameworks.items() if info.get("available")]
    lines = [
        f"model: {facts.model or '?'}   soc: {facts.soc or '?'}   os: "
        f"{facts.os_version or facts.os or '?'}   kernel: {facts.kernel or '?'}",
        f"cpu: {facts.cpu_model or '?'}, cpus {format_cpu_list(facts.cpus) or '?'}; "
        f"clusters detected: {clusters or 'one (all cores equal)'}",
        f"governor: {', '.join(facts.governors) or 'unknown'}",
        f"python: {facts.python or 'not usable: ' + (facts.probe_error or '?')}; "
        f"frameworks: {', '.join(available) or 'none'}",
    ]
    if device.profile is not None:
        lines.append(f"profile: {device.profile_name}")
        differences = compare_clusters(
            device.profile, facts.clusters, max_freq_khz=facts.max_freq_khz
        )
        lines += [f"  differs from profile: {d}" for d in differences] or [
            "  clusters match the profile"
        ]
    return lines


@cli.command()
@lab_option
@click.option("--devices", "names", multiple=True, required=True, help="Devices to clean.")
def clean(lab_path: Path | None, names: tuple[str, ...]) -> None:
    """Remove the runner, models and outputs edgebench put on devices."""
    lab = load_lab(lab_path)
    failures = 0
    for device in resolve_devices(split_values(names), lab):
        try:
            click.echo(f"{device.name}: {device.clean()}")
        except TransportError as exc:
            failures += 1
            click.echo(f"{device.name}: not cleaned: {exc}", err=True)
    if failures:
        sys.exit(1)


@cli.group()
def toolchains() -> None:
    """Converter toolchains that live in their own environments (ncnn: pnnx, tflite: onnx2tf)."""


@toolchains.command(name="list")
def toolchains_list() -> None:
    """State, version and size of each toolchain."""
    from edgebench.converters.toolchains import TOOLCHAINS, install_command, toolchain_status

    rows = []
    for name, spec in TOOLCHAINS.items():
        status = toolchain_status(name)
        size = f"{status.size_bytes / 1e6:.0f} MB" if status.size_bytes else "-"
        note = spec.description
        if status.state == "missing":
            note = f"install: {install_command(name)}"
        elif status.state == "broken":
            note = f"{(status.detail or '').splitlines()[0]}; repair: {install_command(name)}"
        rows.append((name, status.state, status.version or "-", size, note))
    header = ("toolchain", "state", "version", "size", "")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@toolchains.command(name="install")
@click.argument("names", nargs=-1)
@click.option("--force", is_flag=True, help="Reinstall even when healthy.")
def toolchains_install(names: tuple[str, ...], force: bool) -> None:
    """Install toolchains: ncnn, tflite, or all (the default)."""
    from edgebench.converters.toolchains import TOOLCHAINS, install_toolchain

    wanted = split_values(names) or ["all"]
    if "all" in wanted:
        wanted = list(TOOLCHAINS)
    unknown = [n for n in wanted if n not in TOOLCHAINS]
    if unknown:
        raise UserError(
            f"unknown toolchain {', '.join(unknown)}; choose from {', '.join(TOOLCHAINS)} or all"
        )
    broken = []
    for name in wanted:
        status = install_toolchain(
            name, progress=lambda line: click.echo(line, err=True), force=force
        )
        if status.state != "installed":
            broken.append(name)
            click.echo(f"{name}: {status.state}: {(status.detail or '').strip()}", err=True)
    if broken:
        sys.exit(1)


@cli.command(name="models")
def models_cmd() -> None:
    """List the built-in models: parameters, MACs, inputs."""

    rows = []
    for name, model in BUILTIN_MODELS.items():
        path = builtin_model_path(name, cache_dir() / "models")
        summary = summarize_model(onnx.load(str(path)))
        shapes = "; ".join(f"{i.name} {list(i.shape)} {i.dtype}" for i in summary.inputs)
        macs = f"{summary.macs / 1e9:.2f} G" + ("" if summary.macs_complete else "+")
        rows.append((name, f"{summary.params / 1e6:.2f} M", macs, shapes, model.description))
    header = ("model", "params", "MACs", "inputs", "description")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    try:
        cli(standalone_mode=False)
    except UserError as exc:
        click.echo(f"edgebench: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("edgebench: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # One line, like every other user error (click's default is a usage block).
        message = " ".join(exc.format_message().split())
        command = exc.ctx.command_path if exc.ctx else "edgebench"
        click.echo(f"edgebench: error: {message} (see `{command} --help`)", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"edgebench: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
