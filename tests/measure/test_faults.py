"""A board whose SSH connection dies mid-run: retried, then its cells fail; others finish."""

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from fakes.labs import write_lab, write_phone_lab
from fakes.ssh_fixtures import SshServer
from fakes.tcp_relay import TcpRelay


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


def pull_the_cable(relay: TcpRelay, server: SshServer) -> None:
    """Drop the link (the relay closes every connection at once), then stop sshd and the
    sessions it still serves, so reconnecting finds nobody."""
    relay.cut()
    for pid in descendants(server.process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.stop()


def behind_relay(server: SshServer, relay: TcpRelay, folder: Path) -> SshServer:
    """The same server as the client sees it through ``relay``: its port and host key entry."""
    known_hosts = folder / "known_hosts_relay"
    known_hosts.write_text(f"[{server.host}]:{relay.port} {server.host_public_key}\n")
    return dataclasses.replace(server, port=relay.port, known_hosts=known_hosts)


def run_and_drop(
    eb_env: dict[str, str], lab: Path, device: str, models: list[Path], drop: Callable[[], None]
) -> tuple[list[dict], str]:
    """Run ``device`` and local over ``models``; call ``drop`` when the device's first cell ends.
    Returns the records and everything edgebench printed on stderr."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edgebench",
            "run",
            "--lab",
            str(lab),
            "--devices",
            f"{device},local",
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
    for line in proc.stderr:  # event-driven: drop the link when the device's first cell ends
        seen.append(line)
        if f"{device} ·" in line and line.startswith("["):
            drop()
            break
    out, err = proc.communicate(timeout=180)
    log = "".join(seen) + err
    assert proc.returncode == 1, log
    return [json.loads(line) for line in out.splitlines()], log


def assert_device_lost_after_first_cell(records: list[dict], log: str, device: str) -> None:
    assert "Traceback" not in log
    assert "connection lost" in log and "retrying" in log, log
    assert len(records) == 6  # every cell has its record; none lost
    remote = [r for r in records if r["device"] == device]
    local = [r for r in records if r["device"] == "local"]
    assert [r["status"] for r in local] == ["ok", "ok", "ok"]
    assert remote[0]["status"] == "ok"
    assert [r["status"] for r in remote[1:]] == ["failed", "failed"], remote
    assert all(r["error_kind"] == "transport" for r in remote[1:])
    assert f"device {device} lost" in remote[2]["error"]


def three_models(tmp_path: Path, conv_model: Path) -> list[Path]:
    from conftest import save_conv_model

    extra = [save_conv_model(tmp_path / f"m{i}.onnx", [1, 3, 16 + 8 * i, 16]) for i in (1, 2)]
    return [conv_model, *extra]


def test_lost_board_fails_its_remaining_cells_and_local_finishes(
    eb_env, sshd, tmp_path, conv_model, request
):
    relay = TcpRelay(sshd.port)
    request.addfinalizer(relay.cut)
    lab = write_lab(tmp_path / "lab.toml", behind_relay(sshd, relay, tmp_path), tmp_path / "wd")
    records, log = run_and_drop(
        eb_env,
        lab,
        "ssh-box",
        three_models(tmp_path, conv_model),
        lambda: pull_the_cable(relay, sshd),
    )
    assert_device_lost_after_first_cell(records, log, "ssh-box")


def test_killed_phone_fails_its_remaining_cells_and_local_finishes(
    eb_env, emulated_phone, tmp_path, conv_model
):
    """The emulated phone dies mid-run: its listener, its connections and the commands it
    started (the runner) all go at once; the adb server then reports the device gone."""
    lab = write_phone_lab(tmp_path / "lab.toml", emulated_phone)
    records, log = run_and_drop(
        eb_env, lab, "emu-phone", three_models(tmp_path, conv_model), emulated_phone.emulator.stop
    )
    assert_device_lost_after_first_cell(records, log, "emu-phone")
