"""`edgebench board`: the emulated aarch64 board (build it, see its state, run in it)."""

from __future__ import annotations

import shlex
import sys

import click

from edgebench.cli.app import cli
from edgebench.lab import emulated_board as boards
from edgebench.lab.board_host import emulation_problem
from edgebench.paths import tree_size


@cli.group()
def board() -> None:
    """The emulated arm64 board: a Debian root with the frameworks' ARM wheels, run by qemu.

    Its outputs show what the frameworks' ARM kernels compute (NEON, fp16 arithmetic); its
    latencies mean nothing. Reach it over SSH or ADB as a lab device: docs/arm-board.md.
    """


@board.command(name="build")
@click.option("--force", is_flag=True, help="Rebuild even when the board is healthy.")
def board_build(force: bool) -> None:
    """Build the board into the cache (about 2 minutes and 500 MB; needs root, mmdebstrap
    and qemu-user-static)."""
    status = boards.build_board(progress=lambda line: click.echo(line, err=True), force=force)
    if status.state != "installed":
        click.echo(f"{boards.NAME}: {status.state}: {status.detail}", err=True)
        sys.exit(1)
    click.echo(str(status.root))


@board.command(name="status")
def board_status() -> None:
    """Where the board is, what it holds, and whether this machine can run it."""
    status = boards.board_status()
    click.echo(f"{status.name}: {status.state}")
    if status.state == "missing":
        click.echo(f"  build it: {boards.build_command()}")
    elif status.state == "building":
        click.echo(f"  {status.detail}")
    elif status.state == "broken":
        click.echo(f"  {status.detail}; rebuild: {boards.build_command()} --force")
    elif status.state == "installed":
        info = status.info
        click.echo(f"  root: {status.root}")
        click.echo(
            f"  debian {info.get('suite')} {info.get('architecture')}, "
            f"python {info.get('python')}, "
            f"{(info.get('size_bytes') or 0) / 1e6:.0f} MB, built in "
            f"{info.get('build_seconds')} s on {info.get('built_at')}"
        )
        frameworks = info.get("frameworks") or {}
        click.echo("  frameworks: " + ", ".join(f"{k} {v}" for k, v in frameworks.items()))
        for version, why in (info.get("onnxruntime_rejected") or {}).items():
            click.echo(f"  onnxruntime {version} left out: {why}")
    for left in status.leftovers:  # "half-built" says no more than these lines
        click.echo(
            f"  left half-built by an interrupted build: {left} ({tree_size(left) / 1e6:.0f} MB); "
            f"remove it: rm -rf {shlex.quote(str(left))} (or {boards.build_command()}, which "
            "removes it first)"
        )
    problem = emulation_problem()
    click.echo(f"  emulation: {problem or 'aarch64 programs run here (binfmt_misc + qemu)'}")
