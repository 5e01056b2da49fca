"""The host itself as a device."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from edgebench import process_group
from edgebench.lab.transports.base import (
    Command,
    CommandResult,
    OutputCallback,
    Transport,
    TransportKind,
)


class LocalTransport(Transport):
    kind = "local"

    def __init__(self) -> None:
        self._running: set[subprocess.Popen] = set()
        self._running_lock = threading.Lock()

    def abort(self) -> None:
        with self._running_lock:
            running = list(self._running)
        process_group.stop_many(running)

    def _run(self, command: Command) -> CommandResult:
        started = time.monotonic()
        stdin, timeout = command.stdin, command.timeout
        # Its own process group, so a timeout or an abort stops the runner and every
        # thread and child it started; process_group also stops it if edgebench exits.
        with process_group.child(
            list(command.argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=command.env,
        ) as proc:
            with self._running_lock:
                self._running.add(proc)
            try:
                if command.on_output is None:
                    out, err = proc.communicate(stdin, timeout=timeout)
                else:
                    out, err = _communicate_streaming(proc, stdin, timeout, command.on_output)
            except subprocess.TimeoutExpired:
                process_group.stop(proc)
                out, err = proc.communicate()
                return CommandResult(None, out or "", err or "", True, time.monotonic() - started)
            finally:
                with self._running_lock:
                    self._running.discard(proc)
        return CommandResult(proc.returncode, out, err, False, time.monotonic() - started)

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def make_folders(self, folders: Sequence[str]) -> None:
        for folder in folders:
            Path(folder).mkdir(parents=True, exist_ok=True)

    def copy_in(self, local: Path, remote: str) -> None:
        target = Path(remote)
        if target.resolve() != local.resolve():
            shutil.copyfile(local, target)

    def pull(self, remote: str, local: Path) -> bool:
        source = Path(remote)
        if not source.is_file():
            return False
        local.parent.mkdir(parents=True, exist_ok=True)
        if source.resolve() != local.resolve():
            shutil.copyfile(source, local)
        return True


def _communicate_streaming(
    proc: subprocess.Popen, stdin: str | None, timeout: float, on_output: OutputCallback
) -> tuple[str, str]:
    """Like communicate(), but hands stdout lines to ``on_output`` as they arrive."""
    out_parts: list[str] = []
    err_parts: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out_parts.append(line)
            on_output(line)

    def pump_err() -> None:
        assert proc.stderr is not None
        err_parts.append(proc.stderr.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
    for reader in readers:
        reader.start()
    if stdin is not None and proc.stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    proc.wait(timeout=timeout)  # TimeoutExpired propagates; the caller kills the group
    for reader in readers:
        reader.join(timeout=5)
    return "".join(out_parts), "".join(err_parts)


#: The host itself. Its work dir defaults to a folder in edgebench's cache (lab_file.py).
KIND = TransportKind(
    name="local",
    keys=(),
    read_endpoint=lambda entry: {},
    address=lambda endpoint: "local",
    open=lambda name, endpoint: LocalTransport(),
    default_work_dir="",
    identity=lambda endpoint: "this machine",
)
