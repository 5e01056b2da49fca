"""A board whose SSH connection dies mid-run: retried, then its cells fail; others finish."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from test_devices_ssh import write_lab


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (sshd forks per connection, and again per session)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def pull_the_cable(server) -> None:
    """Kill sshd and every connection it serves, as a dropped link would end them."""
    for pid in descendants(server.process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.stop()


def test_lost_board_fails_its_remaining_cells_and_local_finishes(
    eb_env, sshd, tmp_path, conv_model
):
    from conftest import save_conv_model

    models = [conv_model]
    models += [save_conv_model(tmp_path / f"m{i}.onnx", [1, 3, 16 + 8 * i, 16]) for i in (1, 2)]
    lab = write_lab(tmp_path / "lab.toml", sshd, tmp_path / "wd")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edgebench",
            "run",
            "--lab",
            str(lab),
            "--devices",
            "ssh-box,local",
            "--models",
            ",".join(map(str, models)),
            "--frameworks",
            "onnxruntime",
            "--iterations",
            "5",
            "--min-time",
            "0.3",
            "--warmup",
            "1",
            "--format",
            "jsonl",
        ],
        env=eb_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # event-driven: pull the cable when the board's first cell ends
        seen.append(line)
        if "ssh-box ·" in line and line.startswith("["):
            pull_the_cable(sshd)
            break
    out, err = proc.communicate(timeout=180)
    log = "".join(seen) + err
    assert proc.returncode == 1, log
    assert "Traceback" not in log
    assert "connection lost" in log and "retrying" in log
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 6  # every cell has its record; none lost
    board = [r for r in records if r["device"] == "ssh-box"]
    local = [r for r in records if r["device"] == "local"]
    assert [r["status"] for r in local] == ["ok", "ok", "ok"]
    assert board[0]["status"] == "ok"
    assert [r["status"] for r in board[1:]] == ["failed", "failed"]
    assert all(r["error_kind"] == "transport" for r in board[1:])
    assert "lost" in board[2]["error"]
