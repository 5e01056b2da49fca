"""Running one build command with its output appended to a log, and finding the line of that
output that says what went wrong."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from pathlib import Path


def run_logged(argv: list[str], log_path: Path, timeout: float) -> tuple[int | None, int]:
    """Run ``argv`` with its output appended to the log, after a ``$ command`` line. Returns
    its exit code (None when it ran over ``timeout`` and was killed, with its children) and
    the log offset where its output starts."""
    with open(log_path, "a") as out:
        out.write(f"\n$ {shlex.join(argv)}\n")
        out.flush()
        start = out.tell()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, LC_ALL="C"),
            start_new_session=True,  # so a timeout stops make's children too
        )
        try:
            return proc.wait(timeout=timeout), start
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return None, start
        except BaseException:
            _kill_group(proc)
            raise


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def first_error(
    log_path: Path, start: int = 0, limit: int = 200, pattern: str = r"\b[Ee]rror\b"
) -> str | None:
    """The first line from byte ``start`` of the log that matches ``pattern`` (a CMake Error
    header joined with the line after it), trimmed to ``limit`` characters."""
    with open(log_path, "rb") as handle:
        handle.seek(start)
        lines = handle.read().decode(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            text = line.strip()
            if text.startswith("CMake Error") and text.endswith(":"):
                following = next((ln.strip() for ln in lines[i + 1 :] if ln.strip()), "")
                text = f"{text} {following}".strip()
            return text[:limit]
    return None
