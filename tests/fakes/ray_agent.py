"""`edgebench agent` as a real process beside a loopback Ray cluster: its environment, its
stderr read line by line, and the processes it started."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from fakes.ray_cluster import LOOPBACK

SHIM = Path(__file__).resolve().parent / "ray_loopback"


class Lines:
    """A process's stderr, read as it comes (bounded waits for a line)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            with self._changed:
                self.lines.append(line.rstrip())
                self._changed.notify_all()

    def wait_for(self, text: str, limit_s: float = 120.0) -> str:
        deadline = time.monotonic() + limit_s
        with self._changed:
            while (left := deadline - time.monotonic()) > 0:
                found = [line for line in self.lines if text in line]
                if found:
                    return found[-1]
                self._changed.wait(left)
        raise AssertionError(f"no line with {text!r} in: {self.lines}")

    def count(self, text: str) -> int:
        with self._changed:
            return sum(text in line for line in self.lines)


def wait_until(condition, what: str, limit_s: float = 120.0) -> None:
    """Poll ``condition`` until it holds (bounded)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def agent_env(eb_env: dict[str, str], **extra: str) -> dict[str, str]:
    """The agent runs `ray start`, which refuses worker nodes under the loopback switch the
    rest of the tests use; the shim keeps its head address on 127.0.0.1 instead."""
    env = {k: v for k, v in eb_env.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env.update(
        EDGEBENCH_TEST_RAY_LOOPBACK="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(SHIM), eb_env.get("PYTHONPATH")])),
        **extra,
    )
    return env


def start_agent(
    env: dict[str, str], address: str, lab: Path, host: str
) -> tuple[subprocess.Popen, Lines]:
    argv = ["agent", "--cluster", address, "--lab", str(lab), "--host", host]
    agent = subprocess.Popen(
        [sys.executable, "-m", "edgebench", *argv, "--node-ip", LOOPBACK, "--poll", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    return agent, Lines(agent)


def stop_agent(agent: subprocess.Popen) -> None:
    if agent.poll() is None:
        agent.kill()
        agent.wait(timeout=30)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux's /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(child) for child in text.split()]
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []
