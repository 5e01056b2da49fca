"""The clock regime of a record: read from the runner's snapshots of a synthetic cpufreq tree
with the kernel's layout, worded as differences, written as a label and read back from it."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.cpufreq_tree import set_limit, write_phone_cpus
from fakes.records import sampled_record

from edgebench.results.clock_regime import (
    ClockRegime,
    CoreLimits,
    clock_regime,
    cpu_ranges,
    limits_moved,
)
from edgebench.results.records import Record
from runners.device_state import read_state


def phone_record(root: Path, seed: int, **fields) -> Record:
    """A cell pinned to every core of the phone, its snapshot read from ``root``."""
    record = sampled_record("phone", "ncnn", 10.0, seed, **fields)
    state = read_state(str(root), None, [])
    return record.with_part("telemetry", {"state_before": state, "state_after": state})


def test_the_regime_comes_from_the_snapshot_of_the_pinned_cores(tmp_path):
    write_phone_cpus(tmp_path)
    regime = clock_regime(phone_record(tmp_path, 1, fixed_performance=True))
    assert regime.governors == "schedutil"
    assert regime.fixed_performance is True
    assert regime.limits == (
        CoreLimits((0, 1, 2, 3), 300000, 1804800),
        CoreLimits((4, 5, 6, 7), 600000, 2400000),
    )
    assert regime.label() == (
        "governor=schedutil fixed_perf=on limits=cpu0-3:300-1804.8,cpu4-7:600-2400"
    )
    assert ClockRegime.from_json(json.loads(json.dumps(regime.to_json()))) == regime


def test_a_record_without_snapshots_falls_back_to_the_probed_governors():
    record = sampled_record("phone", "ncnn", 10.0, 2, device_info={"governors": ["performance"]})
    assert clock_regime(record) == ClockRegime(governors="performance")
    assert clock_regime(sampled_record("old", "ncnn", 10.0, 3)).label() == ""
    assert ClockRegime.from_json({}) == ClockRegime()


def test_differences_name_each_change_from_base_to_new(tmp_path):
    write_phone_cpus(tmp_path / "night1")
    base = clock_regime(phone_record(tmp_path / "night1", 4, fixed_performance=False))
    policies = write_phone_cpus(tmp_path / "night2", governor="performance")
    set_limit(policies["big"], "scaling_max_freq", 1800000)
    set_limit(policies["little"], "scaling_min_freq", 1804800)
    new = clock_regime(phone_record(tmp_path / "night2", 5, fixed_performance=True))
    assert base.differences(new) == [
        "governor schedutil -> performance",
        "fixed-performance off -> on",
        "min freq 0.3 -> 1.805 GHz on cpu0-3",
        "max freq 2.4 -> 1.8 GHz on cpu4-7",
    ]
    assert new.differences(new) == []
    # Read back from the index's data, the regimes differ in the same words.
    stored = [ClockRegime.from_json(json.loads(json.dumps(r.to_json()))) for r in (base, new)]
    again = stored[0].differences(stored[1])
    assert again == base.differences(new)


def test_jetson_parts_and_unknown_sides():
    maxn = ClockRegime(power_mode="MAXN", clocks_locked=True)
    fifteen = ClockRegime(power_mode="15W", clocks_locked=False)
    assert maxn.differences(fifteen) == [
        "power mode MAXN -> 15W",
        "clocks locked -> free (jetson_clocks)",
    ]
    # A part one side does not know (an older record, a board without it) is no difference.
    assert ClockRegime(governors="schedutil").differences(ClockRegime(fixed_performance=True)) == []
    assert ClockRegime(fixed_performance=False).differences(ClockRegime()) == []


def test_a_limit_that_moved_over_the_window_is_named(tmp_path):
    policies = write_phone_cpus(tmp_path)
    before = read_state(str(tmp_path), [4, 5, 6, 7], [])
    set_limit(policies["big"], "scaling_max_freq", 1500000)  # a thermal cap mid-window
    after = read_state(str(tmp_path), [4, 5, 6, 7], [])
    assert limits_moved(before, after) == ["max freq 2.4 -> 1.5 GHz on cpu4-7"]
    assert limits_moved(before, before) == []
    assert limits_moved(before, None) == []


def test_cpu_ranges():
    assert cpu_ranges([4, 5, 6, 7]) == "cpu4-7"
    assert cpu_ranges([0, 2, 3, 6]) == "cpu0,2-3,6"
    assert cpu_ranges([1]) == "cpu1"


def test_a_stored_regime_of_the_wrong_shape_reads_as_unknown_parts():
    damaged = {
        "governors": 3,
        "fixed_performance": "yes",
        "limits": [{"cpus": ["a"]}, "x", {"cpus": [4, 5], "min_khz": "low", "max_khz": 2400000}],
        "power_mode": "",
        "clocks_locked": True,
        "from_a_newer_version": {"anything": 1},
    }
    assert ClockRegime.from_json(damaged) == ClockRegime(
        limits=(CoreLimits((4, 5), None, 2400000),), clocks_locked=True
    )
