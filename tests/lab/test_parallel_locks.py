"""Devices measured in parallel; one edgebench run per device at a time."""

import json
from pathlib import Path

import pytest

from edgebench.errors import UserError
from edgebench.lab.host_lock import DeviceLock

pytestmark = pytest.mark.load_sensitive


@pytest.mark.alone
def test_devices_run_in_parallel(run_cli, eb_env, phone_and_board_lab, conv_model):
    lab = phone_and_board_lab
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "emu-phone,ssh-box",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--warmup",
            "1",
            "--iterations",
            "5",
            "--min-time",
            "1.5",
            "--format",
            "jsonl",
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {r["device"]: r for r in map(json.loads, result.stdout.splitlines())}
    phone, board = records["emu-phone"], records["ssh-box"]
    assert phone["status"] == "ok" and board["status"] == "ok"
    # Each cell measures for 1.5 s; run one after the other they could not overlap.
    assert phone["started_at"] < board["ended_at"] and board["started_at"] < phone["ended_at"]
    stored = Path(eb_env["EDGEBENCH_RESULTS"]).glob("*/records.jsonl")
    lines = next(stored).read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["status"] == "ok" for line in lines)


def test_a_busy_device_fails_at_once_with_no_wait(run_cli, conv_model):
    lock = DeviceLock("local", "local")
    lock.acquire(wait=False, report=lambda _: None, timeout_s=0)
    try:
        busy = run_cli(
            [
                "run",
                "--models",
                str(conv_model),
                "--frameworks",
                "onnxruntime",
                "--no-wait",
                "--iterations",
                "3",
                "--min-time",
                "0",
            ]
        )
    finally:
        lock.release()
    assert busy.returncode == 2
    line = busy.stderr.strip().splitlines()[-1]
    assert line.startswith("edgebench: error: device local is busy (pid ")
    free = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--no-wait",
            "--iterations",
            "3",
            "--min-time",
            "0",
        ]
    )
    assert free.returncode == 0, free.stderr


def test_a_process_never_waits_for_its_own_device_lock():
    """Two names for one device in one process: the second lock is refused at once, naming
    both, instead of waiting for the first (held by this very process)."""
    messages: list[str] = []
    first = DeviceLock("box", "local")
    first.acquire(wait=False, report=messages.append, timeout_s=0)
    try:
        with pytest.raises(UserError) as refused:
            DeviceLock("local", "local").acquire(wait=True, report=messages.append, timeout_s=5)
    finally:
        first.release()
    assert "devices box and local are the same device (local)" in str(refused.value)
    assert messages == []  # no "busy ... waiting for it"
    again = DeviceLock("local", "local")
    again.acquire(wait=False, report=messages.append, timeout_s=0)
    again.release()
