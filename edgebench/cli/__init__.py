"""The `edgebench` command line: ``app`` holds the group and ``main``; each module beside it
declares one family of commands."""

from edgebench.cli import (  # noqa: F401  (registers the commands)
    board,
    cluster,
    lab,
    publish,
    results,
    run,
    runners,
    tools,
)
from edgebench.cli.app import cli, main

__all__ = ["cli", "main"]
