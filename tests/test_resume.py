"""Ctrl-C stops after the current cell; --resume completes the run without redoing cells."""

import json
import signal
import subprocess
import sys
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
