"""Android's fixed-performance mode around one device's cells (``--fixed-performance``).

``cmd power set-fixed-performance-mode-enabled true`` (Android 11 and later) asks the Power HAL
to hold the CPU and GPU clocks between fixed bounds, so runs on different nights meet the same
clocks. Where the Power HAL lacks the mode the command says so (``Failed to set
FIXED_PERFORMANCE mode``, exit 255); before Android 11 the power service does not know the
command. Either way the cells still run, each with a warning naming what the device said.

Android has no command that reads the mode back, and it is off after boot: edgebench turns it
off again after the device's last cell (also after a failure, Ctrl-C or SIGTERM), and a cell's
record says ``fixed_performance: true`` only when edgebench turned it on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import TracebackType

from edgebench.lab.device import Device
from edgebench.lab.transports.base import TransportError, quote_argv
from edgebench.results.record_warnings import FIXED_PERFORMANCE_NOT_SET
from edgebench.results.records import Record

log = logging.getLogger(__name__)

COMMAND = ("cmd", "power", "set-fixed-performance-mode-enabled")
TIMEOUT_S = 30.0


def set_fixed_performance(device: Device, enabled: bool) -> str | None:
    """Turn the mode on or off; None when the device took it, else what it said, in one line."""
    argv = [*COMMAND, "true" if enabled else "false"]
    try:
        result = device.transport.run(argv, timeout=TIMEOUT_S)
    except TransportError as exc:
        return f"`{quote_argv(argv)}` did not run: {exc}"
    if result.returncode == 0:
        return None
    said = " ".join((result.stderr + "\n" + result.stdout).split()) or "no output"
    code = "timed out" if result.returncode is None else f"exit {result.returncode}"
    return f"`{quote_argv(argv)}` failed ({code}): {said}"


@dataclass
class FixedPerformance:
    """The mode on one device while its cells run: turned on when entered (if ``wanted`` and
    the device is an Android one over ADB), off again when left, whatever ended the cells."""

    device: Device | None
    wanted: bool
    report: Callable[[str], None] | None = None
    #: Turned on by edgebench, so turned off on leaving.
    on: bool = False
    #: Why it was asked for and is not on (shown on every cell of the device).
    problem: str | None = None

    def __enter__(self) -> FixedPerformance:
        device = self.device
        if device is None or not self.wanted or device.unreachable:
            return self
        kind = device.transport.kind
        if kind != "adb":
            where = "its lab host runs it" if kind == "cluster" else f"it is reached over {kind}"
            self.problem = f"Android's fixed-performance mode is set over ADB only; {where}"
            return self
        self.on = True  # from here it may be on: a signal during the command still ends it
        try:
            self.problem = set_fixed_performance(device, True)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.on = self.problem is None
        self._say("on" if self.on else f"not set: {self.problem}")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self.on or self.device is None:
            return
        self.on = False
        problem = set_fixed_performance(self.device, False)
        if problem is None:
            self._say("off again")
        else:
            self._say(
                f"could not be turned off ({problem}); turn it off with `adb shell "
                f"{quote_argv([*COMMAND, 'false'])}` or a reboot"
            )

    def mark(self, record: Record) -> Record:
        """A measured cell's record saying whether the mode was on, and why not if asked."""
        if self.device is not None and self.device.transport.kind == "adb":
            record = replace(record, fixed_performance=self.on)
        if self.problem is not None:
            record = record.with_warnings(FIXED_PERFORMANCE_NOT_SET.make(reason=self.problem))
        return record

    def _say(self, what: str) -> None:
        name = self.device.name if self.device is not None else "?"
        line = f"  {name}: fixed-performance mode {what}"
        if self.report is not None:
            self.report(line)
        else:
            log.info("%s", line.strip())
