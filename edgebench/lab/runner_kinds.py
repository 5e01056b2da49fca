"""What measures on a device: the one list of runner kinds a lab entry or profile may name."""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class RunnerKind(StrEnum):
    """A lab entry's or profile's ``runner``; its order is the order messages list them in."""

    #: runners/runner.py under the device's Python.
    PYTHON = "python"
    #: The frameworks' own benchmark binaries (benchmark_model, benchncnn, ...), driven by the
    #: host adapters in edgebench.framework_tools.
    FRAMEWORK_TOOLS = "framework-tools"
    #: edgebench's own static C++ runner (runners/native_runner/).
    EDGEBENCH_NATIVE = "edgebench-native"
    #: Python when the device runs it, else edgebench-native when a build for the device's ABI
    #: exists, else the framework tools (lab/runner_choice.py decides).
    AUTO = "auto"


RUNNERS: tuple[str, ...] = tuple(kind.value for kind in RunnerKind)

#: Names older lab files and profiles use, and the kind each means now.
OLD_NAMES: dict[str, RunnerKind] = {"native": RunnerKind.FRAMEWORK_TOOLS}


def renamed_runner(value: Any, where: str) -> Any:
    """``value`` with an old name replaced by its kind, saying so in one warning line.

    ``where`` names the file and entry (``lab /x/lab.toml, device phone``); any other value is
    returned as it is, for the caller's own check against ``RUNNERS``."""
    new = OLD_NAMES.get(value) if isinstance(value, str) else None
    if new is None:
        return value
    warn_renamed(where, f'runner "{value}"', new.value)
    return new.value


def warn_renamed(where: str, old: str, new: str) -> None:
    """The one warning line for a name a lab file or profile still uses: ``old`` (as the
    file says it) is now ``new``."""
    log.warning(
        'warning: %s: %s is now called "%s"; it still works, but write "%s"', where, old, new, new
    )
