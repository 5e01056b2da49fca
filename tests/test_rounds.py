"""--rounds: each device's cells visited in interleaved rounds, samples pooled."""

import json

import pytest

from edgebench.execute import merge_rounds
from edgebench.records import Record


def test_rounds_interleave_cells_and_pool_samples(run_cli, eb_env, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime,openvino",
            "--rounds",
            "3",
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
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    for record in records.values():
        assert record["status"] == "ok"
        assert record["rounds"] == 3 and len(record["round_p50_ms"]) == 3
        assert record["n_samples"] == len(record["samples_ns"]) >= 30
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
