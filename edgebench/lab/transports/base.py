"""The transport interface every device connection implements."""

from __future__ import annotations

import posixpath
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from edgebench.lab.runner_kinds import RunnerKind

#: Called with each chunk of stdout as it arrives (for long native runs and live progress).
OutputCallback = Callable[[str], None]


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None when the command was killed for timing out
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0


class TransportError(Exception):
    """The device could not be reached or stopped answering; the message says which and why."""


def link_error_reason(exc: BaseException) -> str:
    """What a dying link raised, as a reason: its message, or its kind when it has none (the
    libraries raise a bare EOFError when a stream ends mid-message)."""
    text = str(exc).strip()
    if isinstance(exc, EOFError):
        return f"the stream ended early ({text})" if text else "the stream ended early"
    return text or type(exc).__name__


def quote_argv(argv: Sequence[str]) -> str:
    """One shell command line in which every argument stays one argument, whatever it holds."""
    return " ".join(shlex.quote(str(a)) for a in argv)


@dataclass(frozen=True)
class Command:
    """What ``Transport.run`` was asked to run, as handed to a transport's ``_run``."""

    argv: tuple[str, ...]
    timeout: float
    stdin: str | None = None
    #: Local: the whole environment (None inherits edgebench's). Remote: variables to add.
    env: dict[str, str] | None = None
    on_output: OutputCallback | None = None

    def shell_line(self) -> str:
        """The line a remote shell runs: argv quoted, behind ``env K=V ...`` when env is set."""
        line = quote_argv(self.argv)
        if self.env:
            line = quote_argv(["env", *(f"{k}={v}" for k, v in self.env.items())]) + " " + line
        return line


class Transport(ABC):
    """Runs commands and moves files on one device."""

    kind = ""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        """Run ``argv`` on the device, every argument quoted; wait at most ``timeout`` s."""
        return self._run(Command(tuple(argv), timeout, stdin, env, on_output))

    @abstractmethod
    def _run(self, command: Command) -> CommandResult:
        """Carry out one ``run``; ``on_output`` sees stdout as it arrives (or all at once)."""

    def shell(self, script: str, *, timeout: float) -> CommandResult:
        """Run a shell snippet written by edgebench itself (callers quote what they embed)."""
        return self.run(["sh", "-c", script], timeout=timeout)

    @abstractmethod
    def read_text(self, path: str) -> str | None:
        """A small file's text, or None when it is missing or unreadable."""

    def read_many(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Several small files; remote transports do it in one round trip."""
        return {p: self.read_text(p) for p in paths}

    def push(self, local: Path, remote: str) -> None:
        """Copy a host file to the device, creating parent folders."""
        self.push_many([(local, remote)])

    def push_many(self, pairs: Sequence[tuple[Path, str]]) -> None:
        """Copy host files to the device: the folders they go in are made first, all in one
        command (a command per file cost a round trip each: fifty for the Python runner)."""
        folders = sorted({posixpath.dirname(remote) for _, remote in pairs})
        if folders:
            self.make_folders(folders)
        for local, remote in pairs:
            self.copy_in(local, remote)

    def make_folders(self, folders: Sequence[str]) -> None:
        self.run(["mkdir", "-p", "--", *folders], timeout=30.0)

    @abstractmethod
    def copy_in(self, local: Path, remote: str) -> None:
        """Copy a host file into a device folder that exists."""

    @abstractmethod
    def pull(self, remote: str, local: Path) -> bool:
        """Copy a device file to the host; False when it does not exist."""

    def sha256(self, paths: Sequence[str], timeout: float = 120.0) -> dict[str, str]:
        """sha256 of the device files that exist (one command for all of them)."""
        if not paths:
            return {}
        result = self.shell(f"sha256sum {quote_argv(paths)} 2>/dev/null; true", timeout=timeout)
        digests = {}
        for line in result.stdout.splitlines():
            digest, _, name = line.partition("  ")
            if len(digest) == 64 and name:
                digests[name] = digest
        return digests

    def exists(self, path: str, timeout: float = 30.0) -> bool:
        return self.run(["test", "-e", path], timeout=timeout).returncode == 0

    def remove(self, path: str, timeout: float = 60.0) -> None:
        self.run(["rm", "-rf", "--", path], timeout=timeout)

    def mkdir(self, path: str, timeout: float = 30.0) -> None:
        self.run(["mkdir", "-p", "--", path], timeout=timeout)

    def close(self) -> None:  # noqa: B027 - optional hook, most transports hold nothing
        """Release the connection; optional."""

    def abort(self) -> None:  # noqa: B027 - optional hook
        """Kill the commands this transport is running now (called from another thread)."""

    def describe(self) -> str:
        return self.kind


_MARK = "@@edgebench-file@@"


def read_many_by_shell(transport: Transport, paths: Sequence[str]) -> dict[str, str | None]:
    """Read many small files with one remote command: each preceded by a marker line."""
    if not paths:
        return {}
    script = "; ".join(
        f"echo {_MARK}{i}; cat {quote_argv([p])} 2>/dev/null || echo {_MARK}missing"
        for i, p in enumerate(paths)
    )
    result = transport.shell(script, timeout=60.0)
    found: dict[str, str | None] = dict.fromkeys(paths)
    current: int | None = None
    chunks: dict[int, list[str]] = {}
    for line in result.stdout.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if stripped.startswith(_MARK):
            tag = stripped[len(_MARK) :]
            if tag == "missing":
                if current is not None:
                    chunks.pop(current, None)
                current = None
            elif tag.isdigit():
                current = int(tag)
                chunks[current] = []
            continue
        if current is not None:
            chunks[current].append(line)
    for index, lines in chunks.items():
        found[paths[index]] = "".join(lines)
    return found


#: A host name or address in a lab file.
HOST_RE = re.compile(r"[A-Za-z0-9_.:%\[\]-]{1,253}")


class EntryFields(Protocol):
    """The checked readers a transport uses on its own keys of a lab entry
    (``edgebench.lab.lab_file``); each error names the file, the device and the key."""

    def fail(self, key: str, problem: str) -> Exception: ...

    def text(self, key: str, example: str) -> str | None: ...

    def pattern(self, key: str, regex: re.Pattern[str], example: str, what: str) -> str | None: ...

    def number(self, key: str, default: int) -> int: ...

    def host_path(self, key: str, example: str) -> Path | None: ...

    def raw(self, key: str) -> Any: ...


@dataclass(frozen=True)
class TransportKind:
    """One kind of transport as a lab file and the inventory see it.

    Each transport module declares one as ``KIND``; ``edgebench.lab.transports`` lists them.
    """

    name: str
    #: Lab keys only this transport takes (its endpoint).
    keys: tuple[str, ...]
    #: Reads and checks those keys from a lab entry; returns the endpoint.
    read_endpoint: Callable[[EntryFields], dict[str, Any]]
    #: Where the device is, for listings ("adb R5CT..", "ssh bench@orin:22").
    address: Callable[[Mapping[str, Any]], str]
    #: Opens the transport for device ``name`` at ``endpoint``.
    open: Callable[[str, Mapping[str, Any]], Transport]
    #: Work dir when neither the lab entry nor the profile gives one.
    default_work_dir: str = "/tmp/edgebench"
    #: Runner when neither the lab entry nor the profile says (phones rarely have Python).
    default_runner: RunnerKind = RunnerKind.PYTHON
    #: Whether a work dir may start with ~/ (resolved on the device by its shell).
    home_relative_work_dir: bool = True
    #: Which device an endpoint reaches: two lab entries with equal identities are one device
    #: (an ssh login's user does not make another machine). None: the address.
    identity: Callable[[Mapping[str, Any]], str] | None = None

    def device_identity(self, endpoint: Mapping[str, Any]) -> str:
        return (self.identity or self.address)(endpoint)
