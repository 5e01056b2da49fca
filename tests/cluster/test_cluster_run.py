"""`edgebench run --cluster` on a Ray cluster of loopback nodes, each a lab host that owns
real peers: an sshd box on one, an emulated ADB phone on another."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("ray")

from fakes.adb_fixtures import connect_phone, disconnect_phone
from fakes.labs import write_lab, write_phone_lab
from fakes.models import save_conv_model
from fakes.ray_agent import Lines
from fakes.ray_cluster import LabCluster

from edgebench.cluster.naming import DeviceInfo

pytestmark = pytest.mark.load_sensitive

FAST = ["--iterations", "3", "--warmup", "1", "--min-time", "0", "--rounds", "1"]
#: Report lines that judge how noisy the samples were (warnings, advice): they depend on the load.
NOISE_LINE = re.compile(r"high variance|vary by more than|quiet the machine|noisy", re.IGNORECASE)


@dataclass
class Lab:
    cluster: LabCluster
    model: Path
    combined_lab: Path  # every device in one lab file: the single-host run of the same plan


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, adb_server, shared_sshd) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("cluster")
    box = shared_sshd
    phone = connect_phone(adb_server, root / "phone")
    cluster = LabCluster(root / "hosts")
    try:
        lab_a = write_lab(root / "lab-a.toml", box, root / "box-wd")
        lab_b = write_phone_lab(root / "lab-b.toml", phone)
        cluster.add_host(
            "lab-a", lab_a, [DeviceInfo("ssh-box", "lab-a", "x86-generic", "", "x86_64", "ssh")]
        )
        cluster.add_host("lab-b", lab_b, [DeviceInfo("emu-phone", "lab-b", "", "", "", "adb")])
        combined = root / "combined.toml"
        combined.write_text(lab_a.read_text() + "\n" + lab_b.read_text())
        model = save_conv_model(root / "tiny.onnx", [1, 3, 16, 16])
        yield Lab(cluster, model, combined)
    finally:
        cluster.shutdown()
        disconnect_phone(phone)


def edgebench(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "edgebench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def stored(env: dict[str, str]) -> list[dict]:
    runs = sorted(Path(env["EDGEBENCH_RESULTS"]).glob("*/records.jsonl"))
    assert runs, "no run was stored"
    return [json.loads(line) for line in runs[-1].read_text().splitlines() if line.strip()]


def test_a_cluster_run_gives_the_records_of_a_single_host_run(lab: Lab, eb_env, tmp_path):
    plan = ["--models", str(lab.model), "--frameworks", "onnxruntime,openvino", *FAST]
    done = edgebench(
        eb_env, "run", "--cluster", lab.cluster.address, "--devices", "ssh-box,emu-phone", *plan
    )
    assert done.returncode == 0, done.stderr
    assert "on lab host lab-a" in done.stderr and "on lab host lab-b" in done.stderr
    cluster_records = stored(eb_env)

    single_env = dict(eb_env, EDGEBENCH_RESULTS=str(tmp_path / "single-results"))
    single = edgebench(
        single_env, "run", "--lab", str(lab.combined_lab), "--devices", "ssh-box,emu-phone", *plan
    )
    assert single.returncode == 0, single.stderr
    single_records = stored(single_env)

    def summary(records: list[dict]) -> dict[str, tuple]:
        return {
            r["cell_id"]: (r["status"], (r.get("output_check") or {}).get("status"), r["n_samples"])
            for r in records
        }

    assert summary(cluster_records) == summary(single_records)
    assert len(cluster_records) == 4
    assert all(r["status"] == "ok" for r in cluster_records)
    # The records name the submitting host's files, not the lab host's copies.
    artifacts = {r["cell_id"]: (r["artifact"] or {}).get("path") for r in single_records}
    assert any(artifacts.values())
    for record in cluster_records:
        assert record["model_path"] == str(lab.model)
        assert (record["artifact"] or {}).get("path") == artifacts[record["cell_id"]]

    # The two reports say the same, figures and run ids aside.
    def report(env: dict[str, str], out: Path) -> str:
        made = edgebench(env, "report", "--format", "md", "--out", str(out))
        assert made.returncode == 0, made.stderr
        text = next(out.glob("*.md")).read_text()
        run_id = cluster_records[0]["run_id"] if env is eb_env else single_records[0]["run_id"]
        text = re.sub(r"[0-9]+(\.[0-9]+)?|[★≈*▲]", "#", text.replace(run_id, "RUN"))
        # Which device ranks first is a figure too: two devices this close swap between runs.
        # So is how noisy the samples were: on a loaded machine one run's cells may vary by
        # more than the high-variance bound and the other's not, which adds warning and advice
        # lines to one report only (the cause of an occasional failure under load).
        lines = re.sub(r"\| (ssh-box|emu-phone) \|", "| DEVICE |", text).splitlines()
        return "\n".join(sorted(line for line in lines if not NOISE_LINE.search(line)))

    assert report(eb_env, tmp_path / "cluster-report") == report(
        single_env, tmp_path / "single-report"
    )


def _records_of(results: Path) -> list[dict]:
    found = sorted(results.glob("*/records.jsonl"))
    if not found:
        return []
    lines = found[-1].read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _wait_for(condition, what: str, limit_s: float = 180.0, process=None) -> None:
    """Poll ``condition`` until it holds (bounded); fail early if ``process`` ended."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {process.communicate()[1]}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _start(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "edgebench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_lost_host_fails_its_remaining_cells_and_the_run_finishes_then_resumes(
    lab: Lab, eb_env, tmp_path, sshd
):
    box = sshd
    try:
        lab_c = write_lab(tmp_path / "lab-c.toml", box, tmp_path / "box-c-wd")
        lab_c.write_text(lab_c.read_text().replace("[devices.ssh-box]", "[devices.ssh-box-c]"))
        lab.cluster.add_host("lab-c", lab_c, [DeviceInfo("ssh-box-c", "lab-c")])
        plan = [
            "--devices", "ssh-box,ssh-box-c", "--models", str(lab.model),
            "--frameworks", "onnxruntime,openvino", "--threads", "1,2,3", *FAST,
        ]  # fmt: skip
        results = Path(eb_env["EDGEBENCH_RESULTS"])
        run = _start(eb_env, "run", "--cluster", lab.cluster.address, *plan)
        try:
            _wait_for(
                lambda: any(r["device"] == "ssh-box-c" for r in _records_of(results)),
                "the first record of ssh-box-c",
                process=run,
            )
            lab.cluster.remove_host("lab-c")
            _, stderr = run.communicate(timeout=300)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait(timeout=30)
        assert run.returncode == 1, stderr  # failed cells, and a finished run
        records = {r["cell_id"]: r for r in _records_of(results)}
        assert len(records) == 12
        kept = [r for r in records.values() if r["device"] == "ssh-box-c" and r["status"] == "ok"]
        lost = [r for r in records.values() if r["error_kind"] == "host_lost"]
        assert kept, "the record stored before the host was lost is kept"
        assert lost and all(r["device"] == "ssh-box-c" for r in lost)
        assert all("lab host lab-c lost" in r["error"] for r in lost), lost[0]["error"]
        assert len(kept) + len(lost) == 6
        assert all(r["status"] == "ok" for r in records.values() if r["device"] == "ssh-box")
        run_id = next(iter(records.values()))["run_id"]
        assert "host_lost" not in stderr.splitlines()[-1]  # the run ended on its summary

        # The host comes back (a new node for it); --resume measures only what was lost.
        lab.cluster.add_host("lab-c", lab_c, [DeviceInfo("ssh-box-c", "lab-c")])
        again = edgebench(
            eb_env, "run", "--cluster", lab.cluster.address, *plan, "--resume", run_id
        )
        assert again.returncode == 0, again.stderr
        assert f"{12 - len(lost)} of 12 cells already done" in again.stderr
        lines = (results / run_id / "records.jsonl").read_text().splitlines()
        assert len(lines) == 12 + len(lost)
        final = {}
        for line in lines:
            record = json.loads(line)
            final[record["cell_id"]] = record
        assert all(r["status"] == "ok" for r in final.values())
        for record in kept:
            assert final[record["cell_id"]]["started_at"] == record["started_at"]
    finally:
        if "lab-c" in lab.cluster.hosts:
            lab.cluster.remove_host("lab-c")


def _identity(lab_file: Path, name: str) -> str:
    from edgebench.lab.inventory import open_device
    from edgebench.lab.lab_file import load_lab

    return open_device(load_lab(lab_file).devices[name]).transport.describe()


def test_device_locks_hold_between_cluster_and_plain_runs_and_ctrl_c_frees_them(
    lab: Lab, eb_env, monkeypatch
):
    from edgebench.lab.host_lock import DeviceLock, held_elsewhere

    host_a, host_b = lab.cluster.hosts["lab-a"], lab.cluster.hosts["lab-b"]
    box, phone = _identity(host_a.lab, "ssh-box"), _identity(host_b.lab, "emu-phone")
    devices = ["--devices", "ssh-box,emu-phone", "--models", str(lab.model)]

    # A plain run on lab-a holds ssh-box: with --no-wait the cluster run fails only its cells.
    monkeypatch.setenv("EDGEBENCH_CACHE", str(host_a.cache))
    plain_lock = DeviceLock("ssh-box", box)
    plain_lock.acquire(wait=False, report=print, timeout_s=1.0)
    try:
        done = edgebench(
            eb_env, "run", "--cluster", lab.cluster.address, *devices,
            "--frameworks", "onnxruntime", *FAST, "--no-wait",
        )  # fmt: skip
    finally:
        plain_lock.release()
    assert done.returncode == 1, done.stderr
    by_device = {r["device"]: r for r in stored(eb_env)}
    assert by_device["ssh-box"]["error_kind"] == "lock"
    assert "device ssh-box is busy" in by_device["ssh-box"]["error"]
    assert by_device["emu-phone"]["status"] == "ok"

    # While a cluster run measures (cells of at least 120 s, so it is surely still measuring),
    # a plain run on lab-a finds ssh-box busy. Ctrl-C twice on the submitting host aborts the
    # run and every actor with it, and the locks are free at once.
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    runs_before = set(results.glob("*/run.json"))
    run = _start(
        eb_env, "run", "--cluster", lab.cluster.address, *devices, "--frameworks", "onnxruntime",
        "--iterations", "3", "--warmup", "0", "--min-time", "120", "--max-time", "200",
        "--rounds", "1",
    )  # fmt: skip
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(run.stderr), daemon=True)
    reader.start()
    try:
        _wait_for(
            lambda: (
                set(results.glob("*/run.json")) - runs_before and held_elsewhere("ssh-box", box)
            ),
            "the cluster run to measure on ssh-box",
            process=run,
        )
        plain = edgebench(
            dict(eb_env, EDGEBENCH_CACHE=str(host_a.cache)),
            "run", "--lab", str(host_a.lab), "--devices", "ssh-box", "--models", str(lab.model),
            "--frameworks", "onnxruntime", *FAST, "--no-wait",
        )  # fmt: skip
        assert plain.returncode == 2, plain.stderr
        last = plain.stderr.strip().splitlines()[-1]
        assert last.startswith("edgebench: error: device ssh-box is busy"), last
        run.send_signal(signal.SIGINT)
        _wait_for(lambda: any("stopping after" in line for line in said), "the first Ctrl-C")
        run.send_signal(signal.SIGINT)
        run.wait(timeout=120)
        reader.join(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=30)
    stderr = "".join(said)
    assert run.returncode == 130, stderr
    assert "aborted" in stderr and "resume with" in stderr
    assert not held_elsewhere("ssh-box", box)
    monkeypatch.setenv("EDGEBENCH_CACHE", str(host_b.cache))
    assert not held_elsewhere("emu-phone", phone)


def test_devices_are_chosen_by_selector_across_hosts(lab: Lab, eb_env):
    common = ["--models", str(lab.model), "--frameworks", "onnxruntime", *FAST]
    done = edgebench(
        eb_env, "run", "--cluster", lab.cluster.address, "--devices", "host=lab-b", *common
    )
    assert done.returncode == 0, done.stderr
    assert {r["device"] for r in stored(eb_env)} == {"emu-phone"}
    wrong = edgebench(
        eb_env, "run", "--cluster", lab.cluster.address, "--devices", "profile=kirin-9000", *common
    )
    assert wrong.returncode == 2
    line = wrong.stderr.strip().splitlines()[-1]
    assert line.startswith(
        "edgebench: error: no device in the cluster matches 'profile=kirin-9000'"
    )
    assert "ssh-box on lab-a (profile x86-generic" in line and "emu-phone on lab-b" in line
    unnamed = edgebench(eb_env, "run", "--cluster", lab.cluster.address, *common)
    assert unnamed.returncode == 2
    assert (
        unnamed.stderr.strip()
        .splitlines()[-1]
        .startswith("edgebench: error: --cluster: name the devices to measure with --devices")
    )


def test_a_device_another_cluster_run_holds_is_refused_with_no_wait(lab: Lab, eb_env):
    import ray

    from edgebench.cluster.runtime import ActorLink

    ray.init(address=lab.cluster.address, logging_level="ERROR", log_to_driver=False)
    holder = None
    try:
        # Another submitting host's actor owns ssh-box (its one unit of the device resource).
        holder = ActorLink(DeviceInfo("ssh-box", "lab-a"))
        assert holder.call("ping", timeout=120) == "ssh-box"
        done = edgebench(
            eb_env, "run", "--cluster", lab.cluster.address, "--devices", "ssh-box,emu-phone",
            "--models", str(lab.model), "--frameworks", "onnxruntime", *FAST, "--no-wait",
        )  # fmt: skip
    finally:
        if holder is not None:
            holder.kill()
        ray.shutdown()
    assert done.returncode == 1, done.stderr
    by_device = {r["device"]: r for r in stored(eb_env)}
    assert by_device["ssh-box"]["error_kind"] == "lock"
    assert "taken on lab-a (another cluster run)" in by_device["ssh-box"]["error"]
    assert by_device["emu-phone"]["status"] == "ok"


def test_a_device_that_could_be_opened_twice_is_refused_before_any_actor(
    lab: Lab, eb_env, tmp_path
):
    from edgebench.cluster.naming import identity_label
    from edgebench.lab.lab_file import load_lab

    # One lab host whose lab file names this machine twice, and which also offers ssh-box,
    # as lab-a's node does (a node that outlived its agent, beside the agent's new one).
    twins = tmp_path / "lab-twins.toml"
    twins.write_text(
        '[devices.twin-1]\ntransport = "local"\n[devices.twin-2]\ntransport = "local"\n'
    )
    entries = load_lab(twins).devices
    devices = [
        DeviceInfo(
            name, "lab-twins", transport="local", identity=identity_label(entries[name].identity())
        )
        for name in ("twin-1", "twin-2")
    ]
    lab.cluster.add_host("lab-twins", twins, [*devices, DeviceInfo("ssh-box", "lab-twins")])
    common = ["--models", str(lab.model), "--frameworks", "onnxruntime", *FAST]
    try:
        same = edgebench(
            eb_env, "run", "--cluster", lab.cluster.address, "--devices", "twin-1,twin-2",
            *common, timeout=120,
        )  # fmt: skip
        offered_twice = edgebench(
            eb_env, "run", "--cluster", lab.cluster.address, "--devices", "ssh-box",
            *common, timeout=120,
        )  # fmt: skip
    finally:
        lab.cluster.remove_host("lab-twins")
    assert same.returncode == 2, same.stderr
    assert same.stderr.strip().splitlines()[-1] == (
        "edgebench: error: devices twin-1 and twin-2 are the same device on lab host lab-twins "
        "(this-machine); a run measures a device under one name: keep one of them in --devices"
    )
    assert "placing" not in same.stderr
    assert offered_twice.returncode == 2, offered_twice.stderr
    last = offered_twice.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "edgebench: error: device ssh-box is offered by 2 live Ray nodes (hosts "
    ), last
    assert "lab-a" in last and "lab-twins" in last


def test_a_run_waiting_for_a_device_says_what_it_waits_for(lab: Lab, eb_env, monkeypatch):
    from edgebench.lab.host_lock import DeviceLock

    host_a = lab.cluster.hosts["lab-a"]
    monkeypatch.setenv("EDGEBENCH_CACHE", str(host_a.cache))
    plain_lock = DeviceLock("ssh-box", _identity(host_a.lab, "ssh-box"))
    plain_lock.acquire(wait=False, report=print, timeout_s=1.0)
    run = _start(
        eb_env, "run", "--cluster", lab.cluster.address, "--devices", "ssh-box",
        "--models", str(lab.model), "--frameworks", "onnxruntime", *FAST,
    )  # fmt: skip
    try:
        lines = Lines(run)
        waiting = lines.wait_for("waiting for it on lab host lab-a", 180)
        assert waiting.startswith("device ssh-box is busy (pid "), waiting
        assert waiting.endswith(" s so far)"), waiting
        plain_lock.release()
        run.wait(timeout=300)
    finally:
        plain_lock.release()
        if run.poll() is None:
            run.kill()
            run.wait(timeout=30)
    assert run.returncode == 0, lines.lines
    assert all(r["status"] == "ok" for r in stored(eb_env))


def test_waiting_for_an_actor_to_be_placed_is_said_again_while_it_lasts(lab: Lab):
    import ray

    from edgebench.cluster.runtime import ActorLink

    ray.init(address=lab.cluster.address, logging_level="ERROR", log_to_driver=False)
    holder = waiter = None
    said: list[str] = []
    try:
        holder = ActorLink(DeviceInfo("emu-phone", "lab-b"))
        assert holder.call("ping", timeout=120) == "emu-phone"
        waiter = ActorLink(DeviceInfo("emu-phone", "lab-b"))
        answer: list[str] = []
        calling = threading.Thread(
            target=lambda: answer.append(
                waiter.call_waiting("ping", timeout=300, report=said.append, every_s=1.0)
            ),
            daemon=True,
        )
        calling.start()
        _wait_for(lambda: len(said) >= 2, "the wait to be said twice", 120)
        holder.kill()
        calling.join(timeout=120)
        assert answer == ["emu-phone"]
    finally:
        for link in (holder, waiter):
            if link is not None:
                link.kill()
        ray.shutdown()
    assert said[0].startswith(
        "device emu-phone: waiting for its actor to be placed and started on lab host lab-b "
        "(Ray resource edgebench-device:emu-phone) ("
    ), said[0]
