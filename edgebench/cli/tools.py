"""Commands around models and converters: convert, toolchains, models."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path

import click
import onnx

from edgebench.cli.app import cli
from edgebench.cli.options import comma_list
from edgebench.converters import (
    CONVERTER_CHOICES,
    CONVERTERS,
    ArtifactCache,
    ConversionError,
    ConversionOptions,
    get_converter,
)
from edgebench.converters.base import CALIBRATED_PRECISIONS
from edgebench.errors import UserError
from edgebench.models import BUILTIN_MODELS, builtin_model_path, summarize_model
from edgebench.models.llm_shapes import GENERATIVE_MODELS, WEIGHT_TYPES
from edgebench.models.llm_writer import weight_bytes
from edgebench.paths import cache_dir
from edgebench.planning.config import PRECISIONS
from edgebench.planning.modelref import input_shapes, parse_shape_overrides, resolve_models
from edgebench.reporting.tables import format_table

log = logging.getLogger(__name__)


@cli.command()
@click.argument("model")
@click.option(
    "--to",
    "targets",
    default=None,
    callback=comma_list,
    help=f"Formats to produce, from {', '.join(CONVERTERS)} [default: each that can be made in "
    "the precision].",
)
@click.option("--precision", type=click.Choice(list(PRECISIONS)), default="fp32", show_default=True)
@click.option(
    "--calibration",
    type=click.Path(path_type=Path),
    default=None,
    help="int8: calibration set (folder of images, .npy or .npz files, or one stacked .npz) "
    "[default: a seeded synthetic set].",
)
@click.option("--calibration-samples", type=click.IntRange(1), default=32, show_default=True)
@click.option("--preprocess", default=None, help="How calibration images become tensors.")
@click.option(
    "--shape",
    multiple=True,
    help="Input shape for dynamic models: 1,3,640,640 or name=1,3,640,640.",
)
@click.option("--force", is_flag=True, help="Reconvert even when the cache has the artifact.")
@click.option(
    "--tflite-converter",
    type=click.Choice(list(CONVERTER_CHOICES["tflite"])),
    default="edgebench",
    show_default=True,
    help="edgebench's own TFLite writer, or onnx2tf (its toolchain) for comparison.",
)
def convert(
    model: str,
    targets: list[str],
    precision: str,
    shape: tuple[str, ...],
    force: bool,
    tflite_converter: str,
    calibration: Path | None,
    calibration_samples: int,
    preprocess: str | None,
) -> None:
    """Convert MODEL (built-in name or .onnx path) to other formats, through the cache."""
    formats = targets or [f for f in CONVERTERS if precision in get_converter(f).precisions]
    unknown = [f for f in formats if f not in CONVERTERS]
    if unknown:
        raise UserError(f"--to {','.join(targets)}: choose from {', '.join(CONVERTERS)}")
    (ref,) = resolve_models([model], cache_dir())
    if ref.error or ref.path is None or ref.sha256 is None:
        raise UserError(ref.error or f"model {model} could not be read")
    if ref.format != "onnx":
        raise UserError(f"{model} is already a {ref.format} model; convert takes an ONNX model")
    inputs = input_shapes(ref, parse_shape_overrides(shape))
    options = ConversionOptions(
        precision=precision, input_shapes={i["name"]: list(i["shape"]) for i in inputs}
    )
    preprocess = _checked_preprocess(preprocess)
    if precision in CALIBRATED_PRECISIONS:
        options = _with_calibration(options, inputs, calibration, calibration_samples, preprocess)
    else:
        unused = (
            ("--calibration", calibration, "the calibration set"),
            ("--preprocess", preprocess, "how calibration images become tensors"),
        )
        for option, value, what in unused:
            if value is not None:
                log.warning(
                    "warning: %s has no effect at %s: it is %s, and only %s conversions calibrate",
                    option,
                    precision,
                    what,
                    " and ".join(CALIBRATED_PRECISIONS),
                )
    cache = ArtifactCache(cache_dir() / "artifacts")
    failures = 0
    for fmt in formats:
        try:
            converter = get_converter(fmt, tflite_converter if fmt == "tflite" else None)
            artifact = cache.convert(converter, ref.path, ref.sha256, options, force=force)
        except ConversionError as exc:
            failures += 1
            click.echo(f"{fmt}: {exc.kind}: {exc.message}")
            continue
        how = "cached" if artifact.cached else f"converted in {artifact.manifest['time_s']:.2f} s"
        click.echo(f"{fmt}: {how} -> {artifact.path} ({', '.join(artifact.files)})")
    if failures:
        sys.exit(1)


def _checked_preprocess(preprocess: str | None) -> str | None:
    from edgebench.planning.checks import preprocessing

    try:
        return preprocessing(preprocess) if preprocess is not None else None
    except ValueError as exc:
        raise UserError(f"--preprocess: {exc}") from None


def _with_calibration(
    options: ConversionOptions,
    inputs: list[dict],
    source: Path | None,
    samples: int,
    preprocess: str | None,
) -> ConversionOptions:
    """``options`` with the calibration set of ``--calibration`` (or the synthetic one)."""
    from edgebench.planning.checks import calibration_source
    from edgebench.quantization.calibration import (
        CalibrationConfig,
        CalibrationSets,
        CalibrationUnavailable,
    )

    try:
        checked = calibration_source(source) if source is not None else None
        config = CalibrationConfig(checked, None, preprocess, samples)
        calibration = CalibrationSets(config).prepared(inputs).calibration
    except ValueError as exc:
        raise UserError(f"--calibration {source}: {exc}") from None
    except CalibrationUnavailable as exc:
        raise UserError(str(exc)) from None
    click.echo(
        f"calibration: {calibration.n} samples from {calibration.source}, "
        f"sha256 {calibration.sha256[:12]}"
    )
    return replace(options, calibration=calibration.path, calibration_sha256=calibration.sha256)


@cli.group()
def toolchains() -> None:
    """Converter toolchains that live in their own environments (ncnn: pnnx; tflite: onnx2tf,
    only for --tflite-converter onnx2tf; TFLite's default is edgebench's own writer)."""


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
    for line in format_table(("toolchain", "state", "version", "size", ""), rows, underline=False):
        click.echo(line)


@toolchains.command(name="install")
@click.argument("names", nargs=-1, callback=comma_list)
@click.option("--force", is_flag=True, help="Reinstall even when healthy.")
def toolchains_install(names: list[str], force: bool) -> None:
    """Install toolchains: ncnn (the default: what the default routes need), tflite (onnx2tf,
    only for --tflite-converter onnx2tf), or all."""
    from edgebench.converters.toolchains import TOOLCHAINS, install_toolchain

    wanted = names or [n for n, spec in TOOLCHAINS.items() if spec.default]
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
    for line in format_table(header, rows, underline=False):
        click.echo(line)
    llm_rows = [
        (
            name,
            f"{shape.parameter_count() / 1e6:.2f} M",
            *(f"{weight_bytes(shape, w) / 1e6:.1f} MB" for w in WEIGHT_TYPES),
            shape.description,
        )
        for name, shape in GENERATIVE_MODELS.items()
    ]
    click.echo("")
    weights = [f"{w} weights" for w in WEIGHT_TYPES]
    llm_header = ["generative model (GGUF)", "params", *weights, "description"]
    for line in format_table(llm_header, llm_rows, underline=False):
        click.echo(line)
