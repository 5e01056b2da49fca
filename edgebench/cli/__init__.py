"""The `edgebench` command line: ``app`` holds the group and ``main``; each module beside it
declares one family of commands."""

from edgebench.cli import board, lab, results, run, runners, tools  # noqa: F401  (registers the commands)
from edgebench.cli.app import cli, main

__all__ = ["cli", "main"]
