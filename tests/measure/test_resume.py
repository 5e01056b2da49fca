"""Ctrl-C stops after the current cell; --resume completes the run without redoing cells."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def test_interrupt_then_resume_completes_the_run(eb_env, conv_model, tmp_path):
    from conftest import save_conv_model

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
    assert proc.returncode == 2, ("".join(seen) + err)[-1500:]
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
        elif parent == edgebench_pid and len(argv) > 1 and argv[1].endswith(b"runner.py"):
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


def test_second_interrupt_kills_the_cells_running_on_every_device(
    eb_env, shared_sshd, conv_model, tmp_path
):
    from fakes.labs import write_lab

    work_dir = tmp_path / "wd"
    lab = write_lab(tmp_path / "lab.toml", shared_sshd, work_dir)
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
            "100000000",
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
    assert proc.returncode == 2, log
    assert elapsed < 60  # not the 300 s the cells would have measured
    assert "Traceback" not in log
    assert err.strip().splitlines()[-1].startswith("edgebench: error: aborted: 0 finished cells")
    (run_dir,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    records = run_dir / "records.jsonl"
    assert not records.exists() or records.read_text() == ""  # nothing half-measured is kept
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
