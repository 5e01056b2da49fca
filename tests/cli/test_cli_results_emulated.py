"""show, report, compare, recommend and export on a stored run with an emulated device."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
from fakes.records import sampled_record

from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

QEMU = "qemu-aarch64 user mode: boot_id equals the host's"


def cell(run_id: str, device: str, framework: str, median_ms: float, seed: int) -> Record:
    emulated = device == "qemu"
    return sampled_record(
        device,
        framework,
        median_ms,
        seed,
        run_id=run_id,
        emulated=emulated,
        emulation=QEMU if emulated else None,
    )


def store_run(results: Path, medians: dict[tuple[str, str], float], seed: int) -> str:
    run = ResultsStore(results).create_run({"edgebench_version": "test"})
    for i, ((device, framework), median) in enumerate(medians.items()):
        run.append(cell(run.run_id, device, framework, median, seed + i))
    return run.run_id


#: On the board onnxruntime is the clear best; on the emulated qemu tflite would be.
BASE = {
    ("board", "onnxruntime"): 10.0,
    ("board", "tflite"): 20.0,
    ("qemu", "onnxruntime"): 900.0,
    ("qemu", "tflite"): 100.0,
}


def test_show_and_report_mark_the_emulated_device(run_cli, eb_env, tmp_path):
    run_id = store_run(Path(eb_env["EDGEBENCH_RESULTS"]), BASE, seed=1)
    show = run_cli(["show", run_id])
    assert show.returncode == 0, show.stderr
    rows = {
        line.split()[0]: line
        for line in show.stdout.splitlines()
        if line.startswith(("board ", "qemu "))
    }
    assert re.search(r"^board\s+\S+\*\s+\S+$", rows["board"]), rows["board"]
    assert rows["qemu"].count("(emulated)") == 2 and "*" not in rows["qemu"]
    assert f"emulated: qemu runs on an emulated CPU ({QEMU})" in show.stdout

    out = tmp_path / "reports"
    report = run_cli(["report", run_id, "--format", "html,md,csv,json", "--out", str(out)])
    assert report.returncode == 0, report.stderr
    page = (out / f"{run_id}.html").read_text()
    # Two emulated cells in each heatmap drawn: p50 and p99 (the records have no throughput,
    # memory or energy figure, and a metric no cell measured is named, not drawn).
    assert page.count('class="cell emu"') == 2 * 2
    assert "Not measured in this run: throughput, peak RSS, energy per inference" in page
    assert "(emulated)" in (out / f"{run_id}.md").read_text()
    csv = pd.read_csv(out / f"{run_id}.csv")
    assert dict(zip(csv["device"] + "/" + csv["framework"], csv["emulated"], strict=True)) == {
        "board/onnxruntime": False,
        "board/tflite": False,
        "qemu/onnxruntime": True,
        "qemu/tflite": True,
    }
    data = json.loads((out / f"{run_id}.json").read_text())
    assert {d["device"]: d["emulation"] for d in data if d["emulated"]} == {"qemu": QEMU}

    export = tmp_path / "flat.csv"
    done = run_cli(["export", run_id, "--out", str(export)])
    assert done.returncode == 0, done.stderr
    assert pd.read_csv(export)["emulated"].sum() == 2


def test_recommend_refuses_emulated_devices(run_cli, eb_env):
    store_run(Path(eb_env["EDGEBENCH_RESULTS"]), BASE, seed=1)
    both = run_cli(["recommend", "--devices", "board,qemu", "--model", "net"])
    assert both.returncode == 0, both.stderr
    assert "recommendation: onnxruntime" in both.stdout
    assert "refusing qemu: its CPU is emulated" in both.stdout

    only = run_cli(["recommend", "--devices", "qemu", "--model", "net"])
    assert only.returncode == 0, only.stderr
    assert "recommendation: none, refused: every listed device has an emulated CPU" in only.stdout
    assert f"refusing qemu: its CPU is emulated ({QEMU})" in only.stdout
    assert "correctness only" in only.stdout and "Traceback" not in only.stderr


def test_compare_never_gates_on_an_emulated_cell(run_cli, eb_env, tmp_path):
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    base = store_run(results, BASE, seed=1)
    # The emulated cells got three times slower; the board's are unchanged (same samples).
    slower = {k: v * 3 if k[0] == "qemu" else v for k, v in BASE.items()}
    new = store_run(results, slower, seed=1)
    junit = tmp_path / "cmp.xml"
    result = run_cli(["compare", base, new, "--junit", str(junit)])
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if "/net/" in line}
    for framework in ("onnxruntime", "tflite"):
        line = lines[f"qemu/net/{framework}/fp32/t4/call/s1"]
        assert "not_comparable" in line and "emulated CPU (base and new)" in line
    assert "2 unchanged, 2 not_comparable" in result.stdout
    assert 'failures="0"' in junit.read_text() and 'skipped="2"' in junit.read_text()
