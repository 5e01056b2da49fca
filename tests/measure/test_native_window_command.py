"""The shell line that runs a native tool between its telemetry loop's start and stop: its
clean-up of the previous window's files finishes before the loop starts, so a slow ``rm``
can neither delete the new window's marks nor the stop file (the loop would then sample until
its bound while the host waits)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.measure.native_telemetry import wrap_command

pytestmark = pytest.mark.load_sensitive


class NoReads:
    """A sampler with nothing to read: the loop only stamps the time (and the clock-state
    snapshots read every core of this machine)."""

    cpus: tuple[int, ...] = ()

    def paths(self) -> list[str]:
        return []


def slow_rm(folder: Path) -> Path:
    """An ``rm`` that takes half a second before doing its work, first on PATH."""
    folder.mkdir()
    script = folder / "rm"
    script.write_text(
        f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(0.5)'\nexec /bin/rm \"$@\"\n"
    )
    script.chmod(0o755)
    return folder


def run_line(line: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The line in its own process group, which is killed whole if it overruns (the loop in
    the background would outlive its shell)."""
    with subprocess.Popen(
        ["sh", "-c", line],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_the_window_marks_and_stop_survive_a_slow_clean_up(tmp_path: Path):
    work = tmp_path / "telemetry"
    work.mkdir()
    for name in ("trace.txt", "marks.txt", "stop"):  # the previous window's files
        (work / name).write_text("old\n")
    line = wrap_command("true", NoReads(), str(work), period_s=0.01, baseline_s=0, sync_marker=None)
    env = dict(os.environ, PATH=f"{slow_rm(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    done = run_line(line, env)
    assert done.returncode == 0, done.stderr
    marks = (work / "marks.txt").read_text().split()
    assert marks[0] == "window_start" and marks[2] == "window_end"
    assert (work / "stop").exists()
    assert "old" not in (work / "trace.txt").read_text()


def test_the_tools_exit_status_comes_through(tmp_path: Path):
    line = wrap_command(
        "exit 3", NoReads(), str(tmp_path / "w"), period_s=0.01, baseline_s=0, sync_marker=None
    )
    assert run_line(line).returncode == 3
