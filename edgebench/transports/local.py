"""The host itself as a device."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence

from .base import CommandResult, Transport


class LocalTransport(Transport):
    kind = "local"

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        # Own session so a timeout kills the runner and every thread/child it started.
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return CommandResult(None, out, err, True, time.monotonic() - started)
        except BaseException:
            # Ctrl-C or similar: never leave an orphaned runner measuring on the device.
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
        return CommandResult(proc.returncode, out, err, False, time.monotonic() - started)

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None
