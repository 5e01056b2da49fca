"""`edgebench runners`: build the native C++ runner for a target, list the built ones, print
the runners' result schema."""

from __future__ import annotations

import json
from pathlib import Path

import click

from edgebench.builds import BuildError
from edgebench.builds.gpu_builds import GPU_DEVICES
from edgebench.builds.libraries import CPU_FEATURES
from edgebench.builds.native_runner import build_runner, list_runners
from edgebench.builds.sources import (
    FETCHED_SDISTS,
    FRAMEWORKS,
    fetch_sdist,
    find_source,
    sources_dir,
)
from edgebench.builds.targets import TARGETS, host_target, parse_target
from edgebench.cli.app import cli
from edgebench.runners.protocol.run_result import json_schema

BUILD_COMMAND = "edgebench runners build"


@cli.group()
def runners() -> None:
    """edgebench-native, the C++ runner: one static binary per target, built on this machine
    from the frameworks' sources and copied to devices that have no Python. See
    docs/edgebench-native.md.
    """


def parse_sources(values: tuple[str, ...]) -> dict[str, Path]:
    """``NAME=PATH`` values as a dict; BuildError in one line for a malformed one."""
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        name = name.strip().lower()
        if not sep or not name or not path.strip():
            raise BuildError(f"--source {value!r}: write NAME=PATH, e.g. ncnn=ncnn.tar.gz")
        if name not in FRAMEWORKS:
            raise BuildError(
                f"--source {value!r}: unknown framework {name!r} (one of {', '.join(FRAMEWORKS)})"
            )
        out[name] = Path(path.strip()).expanduser()
    return out


@runners.command(name="build")
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    help=f"What to build for, repeatable: {', '.join(TARGETS)} [default: this machine's].",
)
@click.option(
    "--framework",
    "frameworks",
    multiple=True,
    type=click.Choice(list(FRAMEWORKS)),
    help="A framework to link in, repeatable [default: ncnn, and every other framework given "
    "by --source or found in the sources folder].",
)
@click.option(
    "--source",
    "source_values",
    multiple=True,
    metavar="NAME=PATH",
    help="A framework's source: a .tar.gz/.tgz/.zip archive or a folder "
    "[default: the newest <name>-<version> archive in the cache's sources/ folder].",
)
@click.option(
    "--ndk",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Android NDK for aarch64-android [default: $ANDROID_NDK_HOME, $ANDROID_NDK_ROOT].",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel compile jobs [default: all cores].",
)
@click.option(
    "--cpu-features",
    "features",
    type=click.Choice(list(CPU_FEATURES)),
    default="all",
    show_default=True,
    help="all: every instruction-set variant the frameworks choose from at run time (runs on "
    "any device of the target's architecture); lean: only x86_64 with this host's AVX2/FMA, or "
    "ARMv8.2-A with fp16 and dot product (builds several times faster; for tests and CI).",
)
@click.option(
    "--gpu-devices",
    type=click.Choice(list(GPU_DEVICES)),
    default="hardware",
    show_default=True,
    help="hardware: the GPU runtimes take the devices their framework allows; any: MNN's OpenCL "
    "also takes a CPU-type device (pocl), for tests on a machine without a GPU (such cells are "
    "recorded as software).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Relink the runner even when an identical one is built (the frameworks' libraries "
    "are kept).",
)
def runners_build(
    targets: tuple[str, ...],
    frameworks: tuple[str, ...],
    source_values: tuple[str, ...],
    ndk: Path | None,
    jobs: int | None,
    features: str,
    gpu_devices: str,
    force: bool,
) -> None:
    """Build the native runner for each target.

    A framework's first build for a target takes minutes; later builds reuse its library.
    Progress goes to stderr, each target's binary to stdout."""
    chosen = [parse_target(t) for t in targets] or [host_target()]
    sources = parse_sources(source_values)
    frameworks = frameworks or default_frameworks(sources)
    for target in dict.fromkeys(chosen):
        runner = build_runner(
            target,
            frameworks=frameworks,
            sources=sources,
            ndk=ndk,
            jobs=jobs,
            force=force,
            progress=lambda line: click.echo(line, err=True),
            features=features,
            gpu_devices=gpu_devices,
        )
        click.echo(f"{target.name}: {runner.path}  ({runner.describe()})")


def default_frameworks(sources: dict[str, Path]) -> tuple[str, ...]:
    """ncnn (its source is on PyPI) and every other framework whose source is at hand, so a
    plain rebuild never drops a framework the last build had."""
    chosen = ["ncnn"]
    for framework in FRAMEWORKS:
        if framework in chosen:
            continue
        if framework in sources:
            chosen.append(framework)
            continue
        try:
            find_source(framework)
        except BuildError:
            continue
        chosen.append(framework)
    return tuple(chosen)


@runners.command(name="fetch-sources")
def runners_fetch_sources() -> None:
    """Download the pinned ncnn source (the sdist of the package ncnn) and llama-cpp-python's
    (the qwen2 vocabulary of the built-in generative models) with pip into the sources folder,
    each checked against its sha256. pip uses its own configuration (index, proxy); MNN and TNN
    are not on the package index: put their archives there yourself."""
    for pin in FETCHED_SDISTS:
        click.echo(f"fetching {pin.requirement} (sdist) with pip into {sources_dir()}/", err=True)
        path = fetch_sdist(pin, progress=lambda line: click.echo(line, err=True))
        click.echo(str(path))


@runners.command(name="list")
def runners_list() -> None:
    """The current runner of each target, with what it holds."""
    built = list_runners()
    if not built:
        click.echo(f"no native runner is built: {BUILD_COMMAND} [--target TARGET]")
        return
    for runner in built:
        click.echo(f"{runner.target.name}: {runner.path}  ({runner.describe()})")


@runners.command(name="schema")
def runners_schema() -> None:
    """Print the JSON Schema of a runner's result (edgebench.result/1), derived from the
    protocol's RunResult: what the Python runner and edgebench-native must both write."""
    click.echo(json.dumps(json_schema(), indent=2))
