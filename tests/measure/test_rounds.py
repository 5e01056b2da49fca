"""--rounds: each device's cells visited in interleaved rounds, samples pooled."""

import json
from types import SimpleNamespace

import pytest

from edgebench.measure.scheduler import merge_rounds
from edgebench.planning.cells import DEFAULT_ROUNDS, auto_rounds
from edgebench.planning.config import TimingConfig
from edgebench.results.record_warnings import HIGH_VARIANCE, NO_OUTPUT_CHECK, RecordWarning
from edgebench.results.records import Record


def test_rounds_interleave_cells_and_pool_samples(run_cli, eb_env, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime,openvino",
            "--iterations",
            "30",
            "--min-time",
            "0",
            "--warmup",
            "1",
            "--format",
            "jsonl",
        ]
    )
    assert result.returncode == 0, result.stderr
    # Two frameworks share the device: interleaving is on without being asked for.
    assert "interleaving: 3 rounds per cell" in result.stderr
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    for record in records.values():
        assert record["status"] == "ok"
        assert record["rounds"] == 3 and len(record["round_p50_ms"]) == 3
        assert record["n_samples"] == len(record["samples_ns"]) == 30  # 10 + 10 + 10
        assert record["output_check"]["passed"]
    ort, ov = records["onnxruntime"], records["openvino"]
    # A B A B A B: openvino's first round starts before onnxruntime's last round ends.
    assert ort["started_at"] < ov["started_at"] < ort["ended_at"] < ov["ended_at"]


def make(status="ok", samples=(), wall=None, **extra):
    return Record(
        run_id="r",
        cell_id="d/m/f",
        device="d",
        model="m",
        framework="f",
        precision="fp32",
        threads=1,
        cores="all",
        status=status,
        samples_ns=list(samples),
        measure_wall_s=wall,
        **extra,
    )


def test_merge_pools_samples_and_a_bad_round_decides_the_status():
    parts = [
        make(samples=[1_000_000] * 50, wall=0.05),
        make(samples=[2_000_000] * 50, wall=0.1),
    ]
    merged = merge_rounds(parts)
    assert merged.n_samples == 100 and merged.round_p50_ms == [1.0, 2.0]
    assert merged.latency_ms["p50"] == 1.5
    assert merged.throughput_ips == pytest.approx(100 / 0.15)
    failed = merge_rounds([parts[0], make(status="failed", error="runner timed out")])
    assert failed.status == "failed" and failed.error == "runner timed out"


def fake_cell(
    device="d", model="m", framework="onnxruntime", verdict=None, correctness_only=False, **timing
):
    return SimpleNamespace(
        device=SimpleNamespace(name=device),
        model=SimpleNamespace(name=model),
        framework=framework,
        engine=framework,
        verdict=verdict,
        timing=TimingConfig(**timing),
        correctness_only=correctness_only,
        software_device=False,
    )


def test_rounds_default_on_only_where_frameworks_share_a_device():
    assert auto_rounds([fake_cell(), fake_cell(framework="mnn")]) == DEFAULT_ROUNDS == 3
    assert auto_rounds([fake_cell(), fake_cell(model="other")]) == 1
    assert auto_rounds([fake_cell(), fake_cell(device="phone", framework="mnn")]) == 1
    unsupported = ("unsupported", "framework", "no mnn here")
    assert auto_rounds([fake_cell(), fake_cell(framework="mnn", verdict=unsupported)]) == 1
    sustained = [fake_cell(sustained_s=60.0), fake_cell(framework="mnn", sustained_s=60.0)]
    assert auto_rounds(sustained) == 1
    adaptive = [fake_cell(target_ci_pct=1.0), fake_cell(framework="mnn", target_ci_pct=1.0)]
    assert auto_rounds(adaptive) == 1


def test_explicit_rounds_one_turns_interleaving_off(run_cli, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime,openvino",
            "--rounds",
            "1",
            "--iterations",
            "10",
            "--min-time",
            "0",
            "--format",
            "jsonl",
        ]
    )
    assert result.returncode == 0, result.stderr
    assert "interleaving" not in result.stderr
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    ort, ov = records["onnxruntime"], records["openvino"]
    assert ort["rounds"] in (None, 1) and ov["rounds"] in (None, 1)
    assert ort["ended_at"] <= ov["started_at"]  # one after the other, not interleaved


def high_cv(pct: int) -> RecordWarning:
    return HIGH_VARIANCE.make(cv=pct / 100)


NO_REFERENCE = NO_OUTPUT_CHECK.make(reason="no reference")


def test_merge_keeps_one_warning_per_kind_with_the_worst_figure():
    steady = [1_000_000] * 50  # the pooled samples add no warning of their own
    parts = [
        make(samples=steady, wall=0.05, warnings=[high_cv(12), NO_REFERENCE]),
        make(samples=steady, wall=0.05, warnings=[high_cv(15)]),
        make(samples=steady, wall=0.05, warnings=[high_cv(9), NO_REFERENCE]),
    ]
    merged = merge_rounds(parts)
    assert merged.warnings == [high_cv(15), NO_REFERENCE]


def test_merge_counts_the_pooled_variance_too():
    noisy = [1_000_000, 3_000_000] * 25  # CV about 50% once pooled
    parts = [make(samples=noisy, wall=0.1, warnings=[high_cv(20)]) for _ in range(3)]
    (variance,) = [w for w in merge_rounds(parts).warnings if w.is_a(HIGH_VARIANCE)]
    assert variance != high_cv(20)  # the pooled figure is the worst here


def test_cells_on_an_emulated_cpu_never_ask_for_rounds():
    emulated = [fake_cell(correctness_only=True), fake_cell(framework="mnn", correctness_only=True)]
    assert auto_rounds(emulated) == 1
    assert (
        auto_rounds([*emulated, fake_cell(device="real"), fake_cell("real", framework="mnn")]) == 3
    )


def test_correctness_timing_is_one_inference_without_warm_up():
    from edgebench.planning.cells import correctness_timing, max_iterations

    timing = correctness_timing(
        TimingConfig(warmup=10, iterations=100, min_time_s=2.0, target_ci_pct=1.0)
    )
    assert (timing.warmup, timing.iterations, max_iterations(timing, True)) == (0, 1, 1)
    assert timing.min_time_s == 0 and timing.target_ci_pct is None
    assert timing.timeout_s == TimingConfig().timeout_s  # an emulated inference is slow
