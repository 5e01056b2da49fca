"""Running one build command with its output appended to a log, and finding the line of that
output that says what went wrong."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from edgebench import process_group
from edgebench.builds import BuildError


def run_logged(argv: list[str], log_path: Path, timeout: float) -> tuple[int | None, int]:
    """Run ``argv`` with its output appended to the log, after a ``$ command`` line. Returns
    its exit code (None when it ran over ``timeout`` and was stopped, with its children) and
    the log offset where its output starts. Interrupted, it stops make's children too."""
    with open(log_path, "a") as out:
        out.write(f"\n$ {shlex.join(argv)}\n")
        out.flush()
        start = out.tell()
        try:
            done = process_group.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, LC_ALL="C"),
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return None, start
        return done.returncode, start


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


def compile_into(argv: list[str], binary: Path, log_path: Path, timeout: float, what: str) -> None:
    """Run the compiler line ``argv`` (without ``-o``) into a file beside ``binary``, then move
    it to ``binary``, so a half-written one is never found; BuildError naming the first error
    line and the log when it fails."""
    tmp = binary.with_name(f".{binary.name}.{os.getpid()}.tmp")
    code, start = run_logged([*argv, "-o", str(tmp)], log_path, timeout)
    if code != 0:
        tmp.unlink(missing_ok=True)
        why = "timed out" if code is None else first_error(log_path, start) or f"exit {code}"
        raise BuildError(f"compiling {what} failed ({why}); full log: {log_path}")
    os.replace(tmp, binary)
