"""The lock on the device itself: runs from different hosts never measure on one device at once."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.errors import UserError
from edgebench.lab.device_lock import LOCK_NAME, DeviceLockFile, LockUnavailable
from edgebench.lab.transports.local import LocalTransport

pytestmark = pytest.mark.load_sensitive

QUICK = shlex.split(
    "--frameworks onnxruntime --warmup 1 --iterations 5 --min-time 0 --format jsonl"
)


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def device_clock() -> int:
    return int(subprocess.run(["date", "+%s"], capture_output=True, text=True).stdout)


def hold_as_another_host(lock_dir: Path, *, expires: int, boot: str, host="lab-host-b", pid=4242):
    """What a run on another host leaves on the device while it measures."""
    lock_dir.mkdir()
    line = f"token=feed expires={expires} boot={boot} host={host} pid={pid} run=20261130-0000-b"
    (lock_dir / "owner").write_text(line + "\n")


def lock_for(work_dir: Path, run_id="r1") -> DeviceLockFile:
    return DeviceLockFile("box", LocalTransport(), str(work_dir), lease_s=600, run_id=run_id)


def quiet(_: str) -> None:
    pass


def test_lock_is_taken_refused_to_a_second_holder_and_released(tmp_path):
    first, second = lock_for(tmp_path / "wd"), lock_for(tmp_path / "wd", "r2")
    first.acquire(wait=False, report=quiet, timeout_s=0)
    lock_dir = tmp_path / LOCK_NAME
    owner = (lock_dir / "owner").read_text()
    assert f"token={first.token} " in owner and f"pid={os.getpid()} " in owner
    assert f"boot={boot_id()} " in owner
    expires = int(owner.split("expires=")[1].split()[0])
    assert 590 <= expires - device_clock() <= 600
    with pytest.raises(UserError, match=r"device box is in use \(run r1 from host .*--no-wait"):
        second.acquire(wait=False, report=quiet, timeout_s=0)
    assert first.renew(force=True) is None
    first.release()
    assert not lock_dir.exists()
    second.acquire(wait=False, report=quiet, timeout_s=0)
    assert f"token={second.token} " in (lock_dir / "owner").read_text()
    second.release()


@pytest.mark.parametrize(
    ("holder", "reason"),
    [
        ({"expires": -30}, "its lease ended"),
        ({"boot": "0000-other-boot"}, "the device rebooted since it was taken"),
        ({"host": "SELF", "pid": "DEAD"}, "the edgebench process that took it (pid"),
    ],
)
def test_stale_locks_are_broken_with_the_reason(tmp_path, holder, reason):
    lock = lock_for(tmp_path / "wd")
    dead = subprocess.Popen(["true"])
    dead.wait()
    settings = {"expires": device_clock() + 600, "boot": boot_id(), **holder}
    if settings["expires"] < 0:
        settings["expires"] = device_clock() + settings["expires"]
    if settings.get("host") == "SELF":
        settings["host"], settings["pid"] = lock.host, dead.pid
    hold_as_another_host(tmp_path / LOCK_NAME, **settings)
    said = []
    lock.acquire(wait=False, report=said.append, timeout_s=0)
    assert said and reason in said[0] and said[0].startswith("device box: breaking a stale lock")
    assert f"token={lock.token} " in (tmp_path / LOCK_NAME / "owner").read_text()
    lock.release()


def test_a_live_lock_from_another_host_is_respected(tmp_path):
    hold_as_another_host(tmp_path / LOCK_NAME, expires=device_clock() + 600, boot=boot_id())
    with pytest.raises(UserError) as caught:
        lock_for(tmp_path / "wd").acquire(wait=False, report=quiet, timeout_s=0)
    assert "run 20261130-0000-b from host lab-host-b, pid 4242; lease ends in" in str(caught.value)
    assert (tmp_path / LOCK_NAME / "owner").read_text().startswith("token=feed ")


def test_renew_reports_a_lock_taken_over(tmp_path):
    lock = lock_for(tmp_path / "wd")
    lock.acquire(wait=False, report=quiet, timeout_s=0)
    shutil.rmtree(tmp_path / LOCK_NAME)  # our lease was broken by another host...
    hold_as_another_host(tmp_path / LOCK_NAME, expires=device_clock() + 600, boot=boot_id())
    assert lock.renew() is None  # just taken: no round trip, nothing learnt
    assert lock.renew(force=True).startswith("run 20261130-0000-b from host lab-host-b")
    overdue = DeviceLockFile("box", LocalTransport(), str(tmp_path / "wd"), 600, "r", 0.0)
    assert overdue.renew() is not None  # a renewal is due at once: it finds the new holder
    lock.release()  # not ours any more: left alone
    assert (tmp_path / LOCK_NAME / "owner").read_text().startswith("token=feed ")


def test_no_place_for_the_lock_is_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(LockUnavailable, match=r"could not create its lock folder .*file/"):
        lock_for(tmp_path / "file" / "wd").acquire(wait=False, report=quiet, timeout_s=0)


def run_edgebench(eb_env, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "edgebench", "run", *args],
        env=eb_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_phone_in_use_by_another_host_is_waited_for(eb_env, emulated_phone, phone_lab, conv_model):
    lab = phone_lab
    lock_dir = emulated_phone.sandbox / "data" / "local" / "tmp" / LOCK_NAME
    hold_as_another_host(lock_dir, expires=device_clock() + 600, boot=boot_id())
    args = ["--lab", str(lab), "--devices", "emu-phone", "--models", str(conv_model), *QUICK]

    refused = run_edgebench(eb_env, *args, "--no-wait")
    _, err = refused.communicate(timeout=120)
    assert refused.returncode == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("edgebench: error: device emu-phone is in use (run 20261130-0000-b")
    assert "Traceback" not in err

    waiting = run_edgebench(eb_env, *args)
    assert waiting.stderr is not None
    try:
        for line in waiting.stderr:  # event-driven: the other host finishes once we are waiting
            if "device emu-phone is in use" in line and "waiting for it" in line:
                shutil.rmtree(lock_dir)
                break
        out, err = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.send_signal(signal.SIGKILL)
            waiting.wait(timeout=10)
    assert waiting.returncode == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["status"] == "ok"
    assert not lock_dir.exists()  # released at the end of the run


def test_board_lock_is_held_during_the_run_and_released(eb_env, ssh_lab, conv_model):
    lab = ssh_lab.path
    lock_dir = ssh_lab.work_dir.parent / LOCK_NAME
    proc = run_edgebench(
        eb_env, "--lab", str(lab), "--devices", "ssh-box", "--models", str(conv_model), *QUICK
    )
    assert proc.stderr is not None
    owners = []
    for line in proc.stderr:  # while the cell runs, the lock names this run
        if line.startswith("run ") and "cells ->" in line:
            owners.append((lock_dir / "owner").read_text())
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert owners and f"run={record['run_id']}" in owners[0] and f"pid={proc.pid} " in owners[0]
    assert not lock_dir.exists()


def test_board_without_a_place_for_its_lock_fails_its_cells(eb_env, ssh_lab, conv_model):
    (ssh_lab.work_dir.parent / LOCK_NAME).write_text("a file where the lock folder goes")
    lab = ssh_lab.path
    proc = run_edgebench(
        eb_env, "--lab", str(lab), "--devices", "ssh-box,local", "--models", str(conv_model), *QUICK
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    records = {r["device"]: r for r in map(json.loads, out.splitlines())}
    assert records["local"]["status"] == "ok"
    board = records["ssh-box"]
    assert board["status"] == "failed" and board["error_kind"] == "lock", board["error"]
    assert "could not create its lock folder" in board["error"] and "work_dir" in board["error"]
