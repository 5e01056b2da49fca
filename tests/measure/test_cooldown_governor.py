"""Cool-down, governor switching and sustained mode, on a synthetic sysfs tree with the real
layout (the runner reads it through EDGEBENCH_SYSFS_ROOT)."""

import json

import pytest

from edgebench.analysis.sustained import summarize

QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0", "--format", "jsonl"]


def make_sysfs(root, governor="schedutil", temp_mc=40000):
    cpufreq = root / "sys" / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    cpufreq.mkdir(parents=True)
    (cpufreq / "scaling_governor").write_text(f"{governor}\n")
    (cpufreq / "scaling_cur_freq").write_text("1800000\n")
    (cpufreq / "cpuinfo_max_freq").write_text("1800000\n")
    zone = root / "sys" / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("cpu-1-0-usr\n")
    (zone / "temp").write_text(f"{temp_mc}\n")
    return cpufreq / "scaling_governor"


def run_one(run_cli, eb_env, root, conv_model, *extra):
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(root)
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            "--energy-source",
            "none",
            *extra,
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    return record


def test_governor_is_set_for_the_cell_and_restored(run_cli, eb_env, tmp_path, conv_model):
    governor = make_sysfs(tmp_path / "sysfs")
    record = run_one(
        run_cli, eb_env, tmp_path / "sysfs", conv_model, "--set-governor", "performance"
    )
    trace = record["telemetry"]
    assert trace["state_before"]["cpus"]["0"]["governor"] == "performance"
    assert trace["governor"]["previous"] == {"0": "schedutil"}
    assert trace["governor"]["restored"] is True
    assert governor.read_text().strip() == "schedutil"
    assert not any(w.startswith("governor schedutil") for w in record["warnings"])


def test_a_governor_other_than_performance_is_a_warning(run_cli, eb_env, tmp_path, conv_model):
    make_sysfs(tmp_path / "sysfs")
    record = run_one(run_cli, eb_env, tmp_path / "sysfs", conv_model)
    assert any(w.startswith("governor schedutil on the pinned cores") for w in record["warnings"])


def test_governor_that_cannot_be_set_is_a_warning(run_cli, eb_env, tmp_path, conv_model):
    root = tmp_path / "sysfs"
    governor = make_sysfs(root)
    governor.unlink()
    governor.mkdir()  # unwritable as a file whoever we are: stands in for "needs root"
    record = run_one(run_cli, eb_env, root, conv_model, "--set-governor", "performance")
    assert record["status"] == "ok"
    assert any(w.startswith("governor: cpu0: cannot set governor") for w in record["warnings"])


def test_cooldown_waits_only_while_too_hot(run_cli, eb_env, tmp_path, conv_model):
    make_sysfs(tmp_path / "cool", temp_mc=40000)
    cool = run_one(run_cli, eb_env, tmp_path / "cool", conv_model, "--cooldown-temp", "45")
    assert cool["telemetry"]["cooldown"]["reached"] is True
    assert cool["telemetry"]["cooldown"]["waited_s"] < 1
    assert cool["telemetry"]["cooldown"]["start_c"] == pytest.approx(40.0)

    make_sysfs(tmp_path / "hot", temp_mc=60000)
    hot = run_one(
        run_cli,
        eb_env,
        tmp_path / "hot",
        conv_model,
        "--cooldown-temp",
        "45",
        "--cooldown-max-wait",
        "1",
    )
    cooldown = hot["telemetry"]["cooldown"]
    assert cooldown["reached"] is False and 1 <= cooldown["waited_s"] < 5
    assert any(f.startswith("cool-down: hottest zone still 60.0 C") for f in hot["energy_flags"])


def test_sustained_summary_compares_first_and_last_tenth():
    samples = [1_000_000] * 100 + [1_200_000] * 100  # slows down by 20% half way
    ts = [i * 10_000_000 for i in range(23)]
    trace = {
        "marks": {"window_start": ts[1], "window_end": ts[21]},
        "t_perf_ns": ts,
        "power_w": [2.0] * 12 + [1.5] * 11,
        "temp_c": {"cpu": [40.0 + i for i in range(23)]},
    }
    summary = summarize(samples, trace)
    assert summary.first_p50_ms == pytest.approx(1.0)
    assert summary.last_p50_ms == pytest.approx(1.2)
    assert summary.latency_change_pct == pytest.approx(20.0)
    assert summary.first_power_w == pytest.approx(2.0)
    assert summary.last_power_w == pytest.approx(1.5)
    assert summary.power_change_pct == pytest.approx(-25.0)
    assert summary.last_temp_c > summary.first_temp_c
    assert "p50 1.00 -> 1.20 ms (+20.0%)" in summary.describe()
    assert summarize([1_000_000] * 5, None) is None


def test_sustained_run_records_the_summary(run_cli, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--sustained",
            "1",
            "--format",
            "jsonl",
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["sustained"]["seconds"] == pytest.approx(1.0, rel=0.2)
    assert record["measure_wall_s"] >= 1.0
    assert record["n_samples"] > 20
