"""A board whose SSH connection dies mid-run: retried, then its cells fail; others finish."""

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.adb_fixtures import (
    PhoneProcess,
    connect_phone,
    phone_process_fixture,  # noqa: F401 - registers the fixture
    start_adb_server,
)
from fakes.labs import write_lab, write_phone_and_board_lab, write_phone_lab
from fakes.ssh_fixtures import SshServer
from fakes.tcp_relay import TcpRelay

pytestmark = pytest.mark.load_sensitive


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


#: Longest a faulted run may take: three cells per device, the backoff, and slack for 2 cores.
RUN_LIMIT_S = 180.0


def wait_for_line(
    path: Path, found: Callable[[str], bool], proc: subprocess.Popen, err_path: Path
) -> None:
    """Until a complete line of the file ``path`` is one ``found`` accepts (bounded)."""
    deadline = time.monotonic() + RUN_LIMIT_S
    while time.monotonic() < deadline:
        # Whether it had ended is asked before the read, so an end is only reported once a
        # read made after it (which holds all it wrote) lacks the line.
        ended = proc.poll() is not None
        lines = path.read_text(errors="replace").splitlines(keepends=True)
        if any(line.endswith("\n") and found(line) for line in lines):
            return
        assert not ended, (
            f"edgebench ended first (exit {proc.returncode}): stdout {path.read_text()[-2000:]!r}, "
            f"stderr {err_path.read_text()[-3000:]!r}"
        )
        time.sleep(0.02)
    raise AssertionError(f"never saw the line to act on in {path}")


def run_and_drop(
    eb_env: dict[str, str],
    lab: Path,
    device: str,
    models: list[Path],
    drop: Callable[[], None],
    *,
    others: tuple[str, ...] = ("local",),
    on_stdout: bool = False,
) -> tuple[list[dict], str]:
    """Run ``device`` and ``others`` over ``models``; call ``drop`` when the device's first
    cell ends: seen on stderr (its progress line) or, with ``on_stdout``, as its first JSON
    record, which --format jsonl prints the moment it is stored. Returns the records printed
    and everything edgebench wrote on stderr. Both go to files: a pipe nobody reads while the
    link is dropped would fill and stall the run."""
    out_path, err_path = lab.parent / "stdout.jsonl", lab.parent / "stderr.txt"
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "edgebench",
                "run",
                "--lab",
                str(lab),
                "--devices",
                ",".join([device, *others]),
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
            stdout=out_file,
            stderr=err_file,
        )
    try:
        if on_stdout:
            wait_for_line(
                out_path, lambda line: json.loads(line)["device"] == device, proc, err_path
            )
        else:
            wait_for_line(
                err_path, lambda line: line.startswith("[") and device in line, proc, err_path
            )
        drop()
        proc.wait(timeout=RUN_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    err = err_path.read_text()
    assert proc.returncode == 1, err
    return [json.loads(line) for line in out_path.read_text().splitlines()], err


def assert_device_lost_after_first_cell(
    records: list[dict], log: str, device: str, others: tuple[str, ...] = ("local",)
) -> None:
    assert "Traceback" not in log and "aborted" not in log, log
    assert "connection lost" in log and "retrying" in log, log
    # Every cell has its record, printed once; none lost, none twice.
    assert len(records) == 3 * (1 + len(others)), records
    assert len({r["cell_id"] for r in records}) == len(records)
    remote = [r for r in records if r["device"] == device]
    for other in others:
        assert [r["status"] for r in records if r["device"] == other] == ["ok", "ok", "ok"]
    assert remote[0]["status"] == "ok"
    assert [r["status"] for r in remote[1:]] == ["failed", "failed"], remote
    assert all(r["error_kind"] == "transport" and r["error"] for r in remote[1:])
    assert f"device {device} lost" in remote[2]["error"]
    assert "2 cells failed" in log and "--resume" in log, log  # how to measure them again


def assert_run_complete(eb_env: dict[str, str], cells: int) -> None:
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert len((run_dir / "records.jsonl").read_text().splitlines()) == cells


def three_models(tmp_path: Path, conv_model: Path) -> list[Path]:
    from fakes.models import save_conv_model

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
    eb_env, emulated_phone, phone_lab, tmp_path, conv_model
):
    """The emulated phone dies mid-run: its listener, its connections and the commands it
    started (the runner) all go at once; the adb server then reports the device gone."""
    lab = phone_lab
    records, log = run_and_drop(
        eb_env, lab, "emu-phone", three_models(tmp_path, conv_model), emulated_phone.emulator.stop
    )
    assert_device_lost_after_first_cell(records, log, "emu-phone")


def runner_measuring(sandbox: Path, model: str) -> bool:
    """Whether a runner started from the phone's ``sandbox`` is measuring ``model`` now."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(sandbox) in argv and "runner.py" in argv and f"{model}.onnx" in argv:
            return True
    return False


def while_measuring(sandbox: Path, model: str, fault: Callable[[], None]) -> Callable[[], None]:
    """``fault`` once the phone's runner measures ``model``: the link dies mid-command, with
    a stream open (bounded wait on the observable runner process)."""

    def drop() -> None:
        deadline = time.monotonic() + RUN_LIMIT_S
        while not runner_measuring(sandbox, model):
            assert time.monotonic() < deadline, f"the phone never measured {model}"
            time.sleep(0.02)
        fault()

    return drop


def kill_phone(phone: PhoneProcess, sig: int) -> Callable[[], None]:
    """The phone dies by ``sig`` (not a graceful stop) while its second cell measures: its
    connections drop as the kernel closes them, and the runner it started outlives it (the
    fixture reaps it by PID)."""
    return while_measuring(phone.sandbox, "m1", lambda: phone.kill(sig))


def test_phone_killed_with_sigkill_fails_its_remaining_cells(
    eb_env, phone_process, tmp_path, conv_model
):
    lab = write_phone_lab(tmp_path / "lab.toml", phone_process)
    models = three_models(tmp_path, conv_model)
    drop = kill_phone(phone_process, signal.SIGKILL)
    records, log = run_and_drop(eb_env, lab, "emu-phone", models, drop)
    assert_device_lost_after_first_cell(records, log, "emu-phone")
    assert_run_complete(eb_env, 6)


def test_phone_killed_with_sigterm_beside_a_board_every_cell_accounted_for(
    eb_env, phone_process, shared_sshd, tmp_path, conv_model
):
    """The issue's run: a phone and an SSH board; the phone's emulator gets SIGTERM after the
    run's first stored record of the phone (seen on stdout, as --format jsonl streams it)."""
    lab = write_phone_and_board_lab(tmp_path, phone_process, shared_sshd)
    models = three_models(tmp_path, conv_model)
    drop = kill_phone(phone_process, signal.SIGTERM)
    records, log = run_and_drop(
        eb_env, lab, "emu-phone", models, drop, others=("ssh-box",), on_stdout=True
    )
    assert_device_lost_after_first_cell(records, log, "emu-phone", others=("ssh-box",))
    assert_run_complete(eb_env, 6)


def test_adb_server_killed_fails_the_phones_remaining_cells(eb_env, tmp_path, conv_model):
    """The adb server itself dies (SIGKILL): edgebench reports it gone, and starts none."""
    server = start_adb_server(tmp_path / "adb")  # its own: the session's server stays up
    try:
        phone = connect_phone(server, tmp_path / "phone")
        try:
            lab = write_phone_lab(tmp_path / "lab.toml", phone)

            def kill_server() -> None:
                os.killpg(server.proc.pid, signal.SIGKILL)  # it leads its own session
                server.proc.wait(timeout=10)

            models = three_models(tmp_path, conv_model)
            drop = while_measuring(phone.sandbox, "m1", kill_server)
            records, log = run_and_drop(eb_env, lab, "emu-phone", models, drop, on_stdout=True)
        finally:
            phone.emulator.stop()  # no `adb disconnect`: adb would start a new server
    finally:
        server.stop()
    assert_device_lost_after_first_cell(records, log, "emu-phone")
    phone = [r for r in records if r["device"] == "emu-phone"]
    assert all("no adb server" in r["error"] for r in phone[1:]), phone
    assert_run_complete(eb_env, 6)
