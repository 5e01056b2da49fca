"""The `edgebench` command line: ``app`` holds the group and ``main``; each module beside it
declares one family of commands, imported when one of them is used (``app.COMMAND_MODULES``)."""

from edgebench.cli.app import cli, main

__all__ = ["cli", "main"]
