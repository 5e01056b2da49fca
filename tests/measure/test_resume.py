"""Ctrl-C stops after the current cell; --resume completes the run without redoing cells."""

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench.errors import UserError
from edgebench.measure.resume import check_same_settings
from edgebench.planning.config import RunConfig
from edgebench.results.store import ResultsStore

pytestmark = pytest.mark.load_sensitive


def test_interrupt_then_resume_completes_the_run(eb_env, conv_model, tmp_path):
    from fakes.models import save_conv_model

    second = save_conv_model(tmp_path / "second.onnx", [1, 3, 16, 16])
    third = save_conv_model(tmp_path / "third.onnx", [1, 3, 24, 24])
    args = [
        "run",
        "--models",
        f"{conv_model},{second},{third}",
        "--frameworks",
        "onnxruntime",
        "--warmup",
        "1",
        "--iterations",
        "5",
        "--min-time",
        "0.5",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgebench", *args],
        env=eb_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    # Event-driven: Ctrl-C goes in when cell 1 reports; cell 2 may already be measuring, and
    # the CLI must finish it rather than lose it.
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("[1/3]"):
            proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, ("".join(seen) + err)[-1500:]
    assert "Traceback" not in err
    stopped = err.strip().splitlines()[-1]
    assert stopped.startswith("edgebench: error: stopped: ")
    done = int(stopped.split("stopped: ")[1].split()[0])
    assert done in (1, 2) and "--resume" in stopped

    results = Path(eb_env["EDGEBENCH_RESULTS"])
    (run_dir,) = list(results.iterdir())
    first = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]
    assert [r["model"] for r in first] == ["conv", "second"][:done]
    assert all(r["status"] == "ok" for r in first)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"

    resumed = subprocess.run(
        [sys.executable, "-m", "edgebench", *args, "--resume", run_dir.name, "--format", "jsonl"],
        env=eb_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {run_dir.name}: {done} of 3 cells already done" in resumed.stderr
    printed = [json.loads(x) for x in resumed.stdout.splitlines()]
    assert sorted(r["model"] for r in printed) == ["conv", "second", "third"]
    stored = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]
    assert [r["model"] for r in stored] == ["conv", "second", "third"]  # none measured twice
    assert stored[:done] == first  # the earlier records are untouched
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def runner_processes(edgebench_pid: int, remote_runner: Path) -> dict[str, int]:
    """The runners measuring now: the local one (a child of edgebench) and the board's."""
    found = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if len(argv) > 1 and argv[1] == str(remote_runner).encode():
            found["ssh-box"] = int(entry.name)
        elif parent == edgebench_pid and argv[1:3] == [b"-m", b"edgebench.runners"]:
            found["local"] = int(entry.name)
    return found


def wait_for(condition, what: str, limit_s: float = 60.0):
    """Poll an observable state with a deadline (the runners are other processes)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_second_interrupt_kills_the_cells_running_on_every_device(eb_env, ssh_lab, conv_model):
    work_dir = ssh_lab.work_dir
    lab = ssh_lab.path
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edgebench",
            "run",
            "--lab",
            str(lab),
            "--devices",
            "local,ssh-box",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--warmup",
            "1",
            # Far more than could run before the test interrupts: only --max-time ends it.
            "--iterations",
            "2000000",
            "--max-time",
            "300",
        ],
        env=eb_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    running: dict[str, int] = {}
    try:
        remote_runner = work_dir / "runner" / "runner.py"
        running = wait_for(
            lambda: (
                (found := runner_processes(proc.pid, remote_runner)).keys() == {"local", "ssh-box"}
                and found
            ),
            "both runners to start",
        )
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        seen = []
        for line in proc.stderr:  # the first Ctrl-C is acknowledged before the second goes in
            seen.append(line)
            if line.startswith("stopping after the cells that are running"):
                break
        assert runner_processes(proc.pid, remote_runner) == running  # the first one waits
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - started
        for device, pid in running.items():
            gone = Path(f"/proc/{pid}")
            wait_for(lambda gone=gone: not gone.exists(), f"the {device} runner to end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pid in running.values():  # only if edgebench failed to: never left measuring
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    log = "".join(seen) + err
    assert proc.returncode == 130, log
    assert elapsed < 60  # not the 300 s the cells would have measured
    assert "Traceback" not in log
    assert err.strip().splitlines()[-1].startswith("edgebench: error: aborted: 0 finished cells")
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    records = run_dir / "records.jsonl"
    assert not records.exists() or records.read_text() == ""  # nothing half-measured is kept
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


def edgebench(args: list[str], eb_env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "edgebench", "run", *args],
        env=eb_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def local_runners(edgebench_pid: int) -> set[int]:
    found = runner_processes(edgebench_pid, Path("/-")).get("local")
    return {found} if found else set()


def read_until_measuring(proc: subprocess.Popen, limit_s: float = 120.0) -> str:
    """stderr up to the line that announces the cells (device probes, which also start the
    runner, are over by then). Bounded; read from the descriptor, not through a buffer that
    could hold lines select() no longer reports."""
    assert proc.stderr is not None
    deadline = time.monotonic() + limit_s
    fd, text = proc.stderr.fileno(), b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            text += chunk
            if re.search(rb"^run \S+: \d+ cells -> ", text, re.MULTILINE):
                return text.decode()
    raise AssertionError(f"the run never started measuring: {text.decode()[-2000:]}")


def loaded(pid: int, library: str) -> bool:
    """Whether process ``pid`` has mapped a file whose path names ``library``."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_kills_the_runner_and_marks_the_run(eb_env, conv_model, sig):
    """Like a second Ctrl-C: the runner is killed by its PID, the run is marked interrupted,
    and the exit code is the shell's for that signal. No runner is left measuring."""
    long_cell = ["--warmup", "1", "--iterations", "2000000", "--max-time", "300"]
    proc = edgebench(
        ["--models", str(conv_model), "--frameworks", "onnxruntime", *long_cell], eb_env
    )
    runner = None
    try:
        before = read_until_measuring(proc)
        (runner,) = wait_for(lambda: local_runners(proc.pid), "the runner to start")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        err = before + err
        wait_for(lambda: not Path(f"/proc/{runner}").exists(), "the runner to end", 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if runner is not None and Path(f"/proc/{runner}").exists():
            os.kill(runner, signal.SIGKILL)  # only if edgebench left it measuring
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    name = signal.Signals(sig).name
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(f"edgebench: error: terminated by {name}: 0 finished cells")
    ), err
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


def test_ctrl_c_between_rounds_keeps_the_rounds_that_finished(eb_env, conv_model):
    """Two frameworks share the device, so each cell is measured in 3 interleaved rounds.
    Ctrl-C once the first cell's first round is done: both cells keep what they measured."""
    args = ["--models", str(conv_model), "--frameworks", "onnxruntime,openvino", "--warmup", "1"]
    proc = edgebench(
        [*args, "--iterations", "300", "--min-time", "1.5", "--format", "jsonl"], eb_env
    )
    try:
        before = read_until_measuring(proc)
        # The cells take turns, a round each: once the second cell's runner has loaded
        # OpenVINO, the first cell has a finished round (and the second one starts its own).
        wait_for(
            lambda: any(loaded(pid, "openvino") for pid in local_runners(proc.pid)),
            "the second cell's first round",
        )
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        err = before + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("edgebench: error: stopped: 2 finished cells (2 pooled"), err
    records = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["framework"] for r in records) == ["onnxruntime", "openvino"]
    for record in records:
        assert record["status"] == "ok"
        assert 1 <= record["rounds"] < 3 and len(record["round_p50_ms"] or [0]) == record["rounds"]
        assert record["n_samples"] == len(record["samples_ns"]) > 0
        assert any(
            w.startswith(f"stopped after {record['rounds']} of 3 rounds")
            for w in record["warnings"]
        )
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert len((run_dir / "records.jsonl").read_text().splitlines()) == 2


def test_resume_with_other_settings_is_refused(run_cli, eb_env, conv_model):
    """A run measured with --max-time 30 is not resumed with --max-time 3, nor given another
    framework; how the results are shown (--format) may differ."""
    config = RunConfig()
    config.sweep.models = [str(conv_model)]
    config.sweep.frameworks = ["onnxruntime"]
    config.timing.max_time_s = 30.0
    store = ResultsStore(Path(eb_env["EDGEBENCH_RESULTS"]))
    run = store.create_run({"status": "interrupted", "config": config.as_dict()})
    base = ["run", "--models", str(conv_model), "--resume", run.run_id, "--format", "jsonl"]
    shorter = run_cli([*base, "--frameworks", "onnxruntime", "--max-time", "3"])
    assert shorter.returncode == 2, shorter.stderr
    (line,) = shorter.stderr.strip().splitlines()
    assert line.startswith(f"edgebench: error: --resume {run.run_id}: settings differ"), line
    assert "--max-time 30 (run) vs 3 (now)" in line
    assert "--models" not in line and "--format" not in line
    wider = run_cli([*base, "--frameworks", "onnxruntime,openvino", "--max-time", "30"])
    assert wider.returncode == 2, wider.stderr
    (line,) = wider.stderr.strip().splitlines()
    assert "--frameworks onnxruntime (run) vs onnxruntime,openvino (now)" in line
    assert "--max-time" not in line
    assert run.records_path.read_text() == ""  # nothing was measured
    assert run.metadata()["status"] == "interrupted"


def test_resume_after_a_crash_mid_write_keeps_every_cell(run_cli, eb_env, conv_model, tmp_path):
    """A crash tore the last line of records.jsonl; --resume measures the cell again and its
    record gets a line of its own, so `show` has both cells."""
    from fakes.models import save_conv_model

    second = save_conv_model(tmp_path / "second.onnx", [1, 3, 16, 16])
    args = ["run", "--models", f"{conv_model},{second}", "--frameworks", "onnxruntime"]
    args += ["--warmup", "1", "--iterations", "5", "--min-time", "0"]
    first = run_cli(args)
    assert first.returncode == 0, first.stderr
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    done, lost = (run_dir / "records.jsonl").read_text().splitlines()
    # What a crash in the middle of storing the second cell leaves: half a line, no newline.
    (run_dir / "records.jsonl").write_text(done + "\n" + lost[: len(lost) // 2])
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps(meta | {"status": "running"}))
    resumed = run_cli([*args, "--resume", run_dir.name])
    assert resumed.returncode == 0, resumed.stderr
    assert "1 of 2 cells already done" in resumed.stderr
    shown = run_cli(["show", run_dir.name, "--format", "jsonl"])
    assert sorted(json.loads(line)["model"] for line in shown.stdout.splitlines()) == [
        "conv",
        "second",
    ]
    stored = (run_dir / "records.jsonl").read_text().splitlines()
    assert len(stored) == 2 and stored[0] == done


def test_resume_compares_with_a_run_stored_before_settings_carried_their_units(tmp_path):
    """A run.json written before the timing and telemetry fields carried their units stores
    them under the names users type (``max_time``, ``cooldown_temp``): still compared."""
    old_timing = {
        "warmup": 10,
        "iterations": 100,
        "min_time": 2.0,
        "max_time": 30.0,
        "timeout": 600.0,
        "rounds": None,
        "target_ci": None,
        "sustained": None,
    }
    old_config = {**RunConfig().as_dict(), "timing": old_timing}
    old_config["telemetry"] = {"cooldown_temp": 45.0, "cooldown_max_wait": 120.0}
    run = ResultsStore(tmp_path).create_run({"status": "interrupted", "config": old_config})
    same = RunConfig()
    same.timing.max_time_s = 30.0
    same.telemetry.cooldown_temp_c = 45.0
    check_same_settings(run, same)  # nothing differs
    shorter = RunConfig()
    shorter.timing.max_time_s = 3.0
    with pytest.raises(UserError) as refused:
        check_same_settings(run, shorter)
    message = str(refused.value)
    assert "--max-time 30 (run) vs 3 (now)" in message
    assert "--cooldown-temp 45 (run) vs unset (now)" in message
    assert "--min-time" not in message
