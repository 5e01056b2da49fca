"""The transport interface every device connection implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None when the command was killed for timing out
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0


class Transport(ABC):
    """Runs commands and moves files on one device."""

    kind = ""

    @abstractmethod
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """Run ``argv`` on the device (no shell), wait at most ``timeout`` seconds."""

    @abstractmethod
    def read_text(self, path: str) -> str | None:
        """A small file's text, or None when it is missing or unreadable."""

    def describe(self) -> str:
        return self.kind
