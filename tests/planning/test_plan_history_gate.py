"""The history gate through `edgebench run --plan`: with enough good nights of the plan stored,
tonight's cells are judged against them (not against the last run alone); a far slower build
fails the gate, in the JUnit XML too, until `edgebench accept` makes it the new normal;
`gate = "last-run"` in the plan keeps the old test; accept refuses a run of no plan."""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path
from xml.etree import ElementTree

import pytest
from fakes.models import save_conv_model
from test_plans import write_plan as write_gate_plan

NIGHTS = 6


def write_plan(folder: Path, model: Path) -> Path:
    """test_plans' gate plan with fewer samples: the verdicts here are several times apart."""
    plan = write_gate_plan(folder, model)
    text = plan.read_text().replace("iterations = 150", "iterations = 40")
    plan.write_text(text.replace("min_time = 0.5", "min_time = 0.2"))
    return plan


def add_earlier_nights(
    results: Path, seed_run: Path, count: int, older: tuple[int, float, str] | None = None
) -> None:
    """``count`` copies of a real run of the plan as its earlier good nights, one a day back,
    each record's samples scaled by a seeded factor within 1%. ``older`` = (nights back,
    factor, framework version): the nights from that many back on are that factor slower and
    ran that framework version (a step that many nights ago)."""
    meta = json.loads((seed_run / "run.json").read_text())
    lines = (seed_run / "records.jsonl").read_text().splitlines()
    start = datetime.fromisoformat(meta["created_at"])
    rng = random.Random(3)
    for night in range(1, count + 1):
        when = start - timedelta(days=night)
        run_id = when.strftime("%Y%m%d-%H%M%S-") + f"{night:04x}"
        folder = results / run_id
        folder.mkdir()
        night_meta = dict(meta, run_id=run_id, created_at=when.isoformat(), good=True)
        (folder / "run.json").write_text(json.dumps(night_meta))
        factor = 1.0 + rng.uniform(-0.01, 0.01)
        stepped = older is not None and night >= older[0]
        factor *= older[1] if stepped else 1.0
        records = []
        for line in lines:
            record = json.loads(line)
            record["run_id"] = run_id
            if stepped:
                record["framework_version"] = older[2]
            record["samples_ns"] = [int(s * factor) for s in record["samples_ns"]]
            record["latency_ms"] = {k: v * factor for k, v in record["latency_ms"].items()}
            records.append(json.dumps(record))
        (folder / "records.jsonl").write_text("\n".join(records) + "\n")


@pytest.mark.alone
def test_the_history_gate_judges_tonight_against_the_recent_nights(run_cli, eb_env, tmp_path):
    model = save_conv_model(tmp_path / "net.onnx", [1, 3, 96, 96], channels=32)
    plan = write_plan(tmp_path, model)
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    first = run_cli(["run", "--plan", str(plan)])
    assert first.returncode == 0, first.stderr
    (seed_run,) = [p for p in results.iterdir() if p.is_dir()]
    add_earlier_nights(results, seed_run, NIGHTS)

    same = run_cli(["run", "--plan", str(plan)])
    assert same.returncode == 0, same.stdout + same.stderr
    assert "judged against their recent good nights" in same.stderr
    assert "regressed" not in same.stdout
    assert "within the recent nights" in same.stdout or "improved" in same.stdout

    save_conv_model(model, [1, 3, 96, 96], channels=256)  # the far slower "new build"
    junit = tmp_path / "gate.xml"
    slow = run_cli(["run", "--plan", str(plan), "--junit", str(junit)])
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "regressed" in slow.stdout
    assert "outside the recent nights" in slow.stdout or "change point" in slow.stdout
    assert f"of {NIGHTS + 2} nights" in slow.stdout  # every good night, tonight's excluded
    (failure,) = ElementTree.parse(junit).getroot().findall(".//failure")
    assert "recent nights" in failure.get("message", "") + (failure.text or "")
    newest = max(results.glob("*/run.json"), key=lambda p: json.loads(p.read_text())["created_at"])
    meta = json.loads(newest.read_text())
    assert meta["good"] is False and meta["gate"] == "history"
    assert meta["gate_history_nights"] == NIGHTS + 2

    # The slower build is right after all: accepted, it is the plan's new normal.
    accepted = run_cli(["accept", meta["run_id"]])
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith(f"accepted {meta['run_id']}: plan gate's gate")
    after = run_cli(["run", "--plan", str(plan)])
    assert after.returncode == 0, after.stdout + after.stderr
    assert "recent good nights" not in after.stderr  # one night since the accepted one
    assert f"compared with {meta['run_id']}" in after.stderr


def test_a_plan_can_keep_the_last_run_gate(run_cli, eb_env, tmp_path):
    model = save_conv_model(tmp_path / "net.onnx", [1, 3, 64, 64], channels=16)
    plan = write_plan(tmp_path, model)
    plan.write_text(plan.read_text() + 'gate = "last-run"\n')
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    assert run_cli(["run", "--plan", str(plan)]).returncode == 0
    (seed_run,) = [p for p in results.iterdir() if p.is_dir()]
    add_earlier_nights(results, seed_run, NIGHTS)
    second = run_cli(["run", "--plan", str(plan)])
    assert second.returncode == 0, second.stdout + second.stderr
    assert "recent good nights" not in second.stderr
    assert f"compared with {seed_run.name}" in second.stderr


def test_accept_refuses_a_run_that_is_no_plans_night(run_cli, eb_env):
    run = Path(eb_env["EDGEBENCH_RESULTS"]) / "20261201-020000-ab12"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "status": "complete"}))
    (run / "records.jsonl").write_text("")
    refused = run_cli(["accept", run.name])
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"run {run.name} was not run from a plan; accept marks a plan's night "
            "(edgebench run --plan FILE)"
        )
    )
    assert "Traceback" not in refused.stderr
    assert "accepted" not in json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({"plan": "nightly", "status": "running"}))
    refused = run_cli(["accept", run.name])
    assert refused.returncode == 2 and f"run {run.name} is running; accept a run" in refused.stderr


def test_accept_refuses_an_empty_run_id(run_cli, eb_env):
    """A nightly script's unset $RUN gives `accept ""`: refused, never the newest night."""
    run = Path(eb_env["EDGEBENCH_RESULTS"]) / "20261201-020000-ab12"
    run.mkdir(parents=True)
    night = {"run_id": run.name, "plan": "nightly", "status": "complete", "good": False}
    (run / "run.json").write_text(json.dumps(night))
    (run / "records.jsonl").write_text("")
    for empty in ("", "  "):
        refused = run_cli(["accept", empty])
        assert refused.returncode == 2, refused.stdout
        (line,) = refused.stderr.strip().splitlines()
        assert line.startswith(f"edgebench: error: accept: RUN is empty ({empty!r}); name")
        assert json.loads((run / "run.json").read_text()) == night
    assert run_cli(["accept", run.name]).returncode == 0  # named, the same night is accepted
    assert json.loads((run / "run.json").read_text())["accepted"] is True


def test_history_says_where_a_cell_stepped_and_what_changed(run_cli, eb_env, tmp_path):
    """Twelve nights 25% slower on an older framework version, then six at today's level:
    `edgebench history` of the cell names the change point, its night and the version."""
    model = save_conv_model(tmp_path / "net.onnx", [1, 3, 32, 32], channels=8)
    plan = write_plan(tmp_path, model)
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    assert run_cli(["run", "--plan", str(plan)]).returncode == 0
    (seed_run,) = [p for p in results.iterdir() if p.is_dir()]
    version = json.loads((seed_run / "records.jsonl").read_text().splitlines()[0])[
        "framework_version"
    ]
    add_earlier_nights(results, seed_run, 18, older=(6, 1.25, "0.9"))
    shown = run_cli(
        ["history", "--device", "local", "--model", "net", "--framework", "onnxruntime",
         "--plot", str(tmp_path / "h.svg")]
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.startswith("  better since")]
    assert f"framework_version 0.9 -> {version}" in line
    change = float(re.search(r"\(([-+][\d.]+)%, 95% CI", line).group(1))
    assert -23 < change < -17  # 25% slower before: 20% faster since
