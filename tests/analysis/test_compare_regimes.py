"""compare across clock regimes: two real runs on a synthetic cpufreq tree (the runner reads it
through EDGEBENCH_SYSFS_ROOT), the second with --set-governor performance, are not comparable,
and the text table says why once; the reasons of records that differ in several parts."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.cpufreq_tree import write_phone_cpus
from fakes.records import sampled_record

from edgebench.analysis.compare import DIFFERENT_CLOCK_REGIMES, compare_runs
from edgebench.reporting.text import format_comparison

QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0", "--format", "jsonl"]


def measure(run_cli, eb_env, model: Path, *extra: str) -> str:
    result = run_cli(
        [
            "run",
            "--models",
            str(model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            "--threads",
            "1,2",
            "--energy-source",
            "none",
            *extra,
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])["run_id"]


def test_runs_under_another_governor_are_not_comparable(run_cli, eb_env, tmp_path, conv_model):
    write_phone_cpus(tmp_path / "sysfs")
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(tmp_path / "sysfs")
    base = measure(run_cli, eb_env, conv_model)
    new = measure(run_cli, eb_env, conv_model, "--set-governor", "performance")
    result = run_cli(["compare", base, new])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = [line for line in lines if line.startswith("local/")]
    assert len(rows) == 2
    assert all(
        "not_comparable" in row and f"{DIFFERENT_CLOCK_REGIMES} (below)" in row for row in rows
    )
    assert "2 not_comparable" in lines
    said = [line for line in lines if "governor schedutil -> performance" in line]
    assert said == [
        f"2 cells not comparable, {DIFFERENT_CLOCK_REGIMES}: governor schedutil -> performance; "
        "measure both in one clock regime to compare them"
    ]


def test_each_change_is_named_and_the_same_regime_compares():
    regime = {"cpus": {"4": {"governor": "schedutil", "scaling_max_khz": 2400000}}}
    capped = {"cpus": {"4": {"governor": "schedutil", "scaling_max_khz": 1800000}}}
    base = sampled_record("phone", "ncnn", 10.0, 1, fixed_performance=False)
    base = base.with_part("telemetry", {"state_before": regime})
    same = sampled_record("phone", "ncnn", 10.0, 2, fixed_performance=False)
    same = same.with_part("telemetry", {"state_before": regime})
    moved = sampled_record("phone", "ncnn", 10.0, 3, fixed_performance=True)
    moved = moved.with_part("telemetry", {"state_before": capped})
    (unchanged,) = compare_runs([base], [same])
    assert unchanged.verdict == "unchanged" and unchanged.regime_changes == []
    (verdict,) = compare_runs([base], [moved])
    assert verdict.verdict == "not_comparable"
    assert verdict.regime_changes == [
        "fixed-performance off -> on",
        "max freq 2.4 -> 1.8 GHz on cpu4",
    ]
    assert verdict.reason == (
        f"{DIFFERENT_CLOCK_REGIMES}: fixed-performance off -> on; max freq 2.4 -> 1.8 GHz on "
        "cpu4; measure both in one clock regime to compare them"
    )
    text = format_comparison([verdict])
    assert text.endswith(f"1 not_comparable\n1 cell not comparable, {verdict.reason}")
