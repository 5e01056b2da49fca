"""The `edgebench` command group and ``main`` (the options several commands share are
generated in ``cli/options.py``)."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from edgebench import __version__, process_group
from edgebench.errors import UserError
from edgebench.terminal import printable

#: The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


#: The module of ``edgebench.cli`` that declares each command. A module is imported when one
#: of its commands runs or is listed, so `edgebench show` never pays for the lab, the builds
#: and the converters (ONNX) that the other commands import.
COMMAND_MODULES: dict[str, str] = {
    "accept": "nightly",
    "agent": "cluster",
    "board": "board",
    "clean": "lab",
    "compare": "results",
    "convert": "tools",
    "devices": "lab",
    "export": "results",
    "history": "results",
    "models": "tools",
    "publish": "publish",
    "recommend": "results",
    "report": "results",
    "run": "run",
    "runners": "runners",
    "show": "results",
    "toolchains": "tools",
}


class _Commands(dict):
    """A group's commands by name; asking for one whose module is not imported yet imports
    it (the module registers its commands on the group)."""

    def __missing__(self, name: str) -> click.Command:
        module = COMMAND_MODULES.get(name)
        if module is not None:
            importlib.import_module(f"edgebench.cli.{module}")
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
        raise KeyError(name)


class LazyGroup(click.Group):
    """A group whose commands' modules are imported on first use (``COMMAND_MODULES``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        try:
            return self.commands[cmd_name]
        except KeyError:
            return None


class _PrintableFormatter(logging.Formatter):
    """Log lines (warnings name models, whose file names may hold escape sequences or line
    breaks) are escaped: each message stays one line and sends the terminal nothing."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="edgebench")
@click.option("-v", "--verbose", is_flag=True, help="Log what edgebench does.")
def cli(verbose: bool) -> None:
    """Compare on-device inference frameworks with numbers you can trust."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("edgebench: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler])
    # paramiko logs its own tracebacks (e.g. a banner read cut short by a dropped link) from
    # its transport thread; edgebench reports those failures itself, in one line.
    logging.getLogger("paramiko").setLevel(logging.WARNING if verbose else logging.CRITICAL)


def main() -> None:
    # SIGTERM and SIGHUP unwind like Ctrl-C: the children stop, half-built folders go.
    process_group.raise_on_terminate()
    try:
        _main()
    finally:
        process_group.shutdown()


def _main() -> None:
    try:
        cli(standalone_mode=False)
    except UserError as exc:
        click.echo(f"edgebench: error: {printable(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        # Ctrl-C or a signal outside a run's own handling: the shell's code for the signal
        # (130, 143, 129), never 2 (usage). click turns an interrupt into Abort.
        cause = exc if isinstance(exc, KeyboardInterrupt) else exc.__cause__
        if isinstance(cause, process_group.Terminated):
            click.echo(f"edgebench: terminated by {cause}", err=True)
            sys.exit(128 + cause.signum)
        click.echo("edgebench: aborted", err=True)
        sys.exit(INTERRUPTED)
    except click.UsageError as exc:
        # One line, like every other user error (click's default is a usage block).
        message = printable(" ".join(exc.format_message().split()))
        command = exc.ctx.command_path if exc.ctx else "edgebench"
        click.echo(f"edgebench: error: {message} (see `{command} --help`)", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        message = printable(" ".join(exc.format_message().split()))
        click.echo(f"edgebench: error: {message}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
