"""The record's ``nvidia`` part (a runner's key read, stored, read back; old records without
it) and compare's refusal across Jetson power modes and clock locks, and its driver note."""

from __future__ import annotations

import json
from dataclasses import replace

from fakes.records import sampled_record

from edgebench.analysis.compare import DIFFERENT_CLOCK_REGIMES, compare_runs
from edgebench.results.nvidia_part import NvidiaState
from edgebench.results.records import Record

#: What runners/nvidia_cell.py writes for a TensorRT cell on an Orin Nano (JetPack 6).
RUNNER_KEY = {
    "source": "jetson",
    "cuda_runtime": "12.6",
    "cuda_driver": "12.6",
    "cudnn": "9.3.0",
    "tensorrt": "10.3.0",
    "l4t": "36.4.7",
    "jetpack": "6.2.1+b38",
    "power_mode": "MAXN",
    "power_mode_id": 0,
    "clocks_locked": True,
    "clocks_source": "jetson_clocks --show",
    "gpu": "Orin (nvgpu)",
    "uuid": None,
    "type": "integrated",
    "compute_capability": "8.7",
    "memory_mb": None,
    "sm_clock_max_mhz": 624.8,
    "gpu_memory_source": "/sys/kernel/debug/nvmap/iovmm/clients not readable",
    "sm_clock_mhz": {"min": 624.8, "mean": 624.8, "max": 624.8},
    "load_pct": {"min": 12.0, "mean": 80.5, "max": 99.0},
    "samples": 41,
    "unavailable": {"gpu_memory_mb": "debugfs needs root"},
}


def jetson_record(seed: int, median_ms: float = 10.0, **nvidia) -> Record:
    record = sampled_record("orin", "tensorrt", median_ms, seed, backend="cuda")
    return record.with_part("nvidia", {**RUNNER_KEY, **nvidia})


def test_the_part_round_trips_and_old_records_load():
    record = jetson_record(1)
    assert isinstance(record.nvidia, NvidiaState)
    assert record.nvidia.describe() == (
        "Orin (nvgpu) (sm 8.7), CUDA 12.6, cuDNN 9.3.0, TensorRT 10.3.0, JetPack 6.2.1+b38, "
        "power mode MAXN, clocks locked, GPU load 80%, clock 625 MHz"
    )
    again = Record.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again.nvidia == record.nvidia
    assert again.to_dict()["nvidia"] == record.to_dict()["nvidia"]
    old = record.to_dict()
    del old["nvidia"]
    assert Record.from_dict(old).nvidia is None


def test_a_wrong_type_leaves_the_part_out():
    record = jetson_record(2, power_mode_id="zero")
    assert record.nvidia is None


def test_compare_refuses_across_power_modes():
    (verdict,) = compare_runs([jetson_record(3)], [jetson_record(4, power_mode="15W")])
    assert verdict.verdict == "not_comparable"
    assert verdict.reason == (
        f"{DIFFERENT_CLOCK_REGIMES}: power mode MAXN -> 15W; measure both in one clock regime "
        "to compare them"
    )
    assert verdict.regime_changes == ["power mode MAXN -> 15W"]


def test_compare_refuses_when_only_one_side_locked_the_clocks():
    (verdict,) = compare_runs([jetson_record(5)], [jetson_record(6, clocks_locked=False)])
    assert verdict.verdict == "not_comparable"
    assert verdict.reason.startswith(
        f"{DIFFERENT_CLOCK_REGIMES}: clocks locked -> free (jetson_clocks)"
    )


def test_same_mode_compares_and_a_new_driver_is_noted():
    base, same = jetson_record(7), jetson_record(8, median_ms=13.0)
    (verdict,) = compare_runs([base], [same])
    assert verdict.verdict == "regressed"
    assert "warning" not in verdict.reason
    newer = jetson_record(9, median_ms=13.0, driver="540.4.0")
    base.nvidia.driver = "540.3.0"
    (verdict,) = compare_runs([base], [newer])
    assert verdict.verdict == "regressed"
    assert verdict.reason.endswith("; warning: NVIDIA driver 540.3.0 in base, 540.4.0 in new")


def test_records_without_the_part_compare_as_before():
    base = sampled_record("orin", "tensorrt", 10.0, 10, backend="cuda")
    (verdict,) = compare_runs([base], [jetson_record(11, power_mode="15W")])
    assert verdict.verdict == "unchanged"


def test_the_matrix_shows_the_gpu_and_power_mode_beside_a_tensorrt_figure():
    from edgebench.reporting.matrix import format_details, format_matrix

    graphs = replace(jetson_record(2, median_ms=8.0), cuda_graph=True)
    text = format_matrix([jetson_record(1), graphs])
    header = next(line for line in text.splitlines() if line.startswith("device"))
    assert header.split() == ["device", "tensorrt", "tensorrt+graphs"]
    details = format_details([jetson_record(1), graphs]).splitlines()
    note = next(line for line in details if "power mode MAXN" in line)
    assert "TensorRT 10.3.0" in note and "clocks locked" in note
