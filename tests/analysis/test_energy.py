"""Energy per inference from telemetry traces (edgebench.analysis.energy)."""

import pytest

from edgebench.analysis.energy import analyze, unwrap_counter

MS = 1_000_000


def power_trace(power_w, period_ms=10, n=201, start=50, end=150, **extra):
    ts = [i * period_ms * MS for i in range(n)]
    trace = {
        "schema": "edgebench.telemetry/1",
        "source": {"kind": "android_fuel_gauge"},
        "period_s": period_ms / 1000,
        "t_perf_ns": ts,
        "power_w": [power_w(i) for i in range(n)],
        "energy_j": [None] * n,
        "charging": [False] * n,
        "wrapped_at": [],
        "marks": {"window_start": ts[start], "window_end": ts[end]},
        "baseline": {"power_w": 0.5, "samples": 100, "seconds": 1.0},
    }
    trace.update(extra)
    return trace


def test_constant_extra_power_gives_exact_energy_per_inference():
    # 0.5 W idle, 2.5 W while the 1 s window runs: 2 W x 1 s over 100 inferences = 20 mJ.
    trace = power_trace(lambda i: 2.5 if 50 <= i <= 150 else 0.5)
    result = analyze(trace, 100)
    assert result.window_s == pytest.approx(1.0)
    assert result.avg_power_w == pytest.approx(2.5)
    assert result.active_power_w == pytest.approx(2.0)
    assert result.energy_mj_per_inf == pytest.approx(20.0)
    assert result.flags == []


def test_energy_counter_with_a_wrap_is_unwrapped():
    n = 201
    range_j = 2.0
    raw = []
    for i in range(n):  # 3 W -> 0.03 J per 10 ms sample, wrapping at 2 J
        raw.append((i * 0.03) % range_j)
    wraps = [i for i in range(1, n) if raw[i] < raw[i - 1]]
    trace = power_trace(
        lambda i: None,
        energy_j=raw,
        wrapped_at=wraps,
        max_energy_range_j=range_j,
        source={"kind": "rapl"},
    )
    trace["baseline"] = {"power_w": 1.0}
    result = analyze(trace, 50)
    assert wraps and result.avg_power_w == pytest.approx(3.0)
    assert result.energy_mj_per_inf == pytest.approx(2.0 * 1.0 / 50 * 1000)
    assert any("wrapped" in f for f in result.flags)
    assert unwrap_counter([9.0, 1.0, 2.0], [1], 10.0) == [9.0, 11.0, 12.0]


def test_flags_for_charging_coarse_sampling_throttling_and_heat():
    trace = power_trace(lambda i: 2.0, period_ms=300, n=8, start=1, end=3)
    trace["charging"] = [False, True] + [False] * 6
    trace["freq_khz"] = {"4": [3000000, 3000000, 1200000] + [3000000] * 5}
    trace["temp_c"] = {"cpu-1-0-usr": [40.0, 44.0, 47.5, 48.0] + [40.0] * 4}
    result = analyze(trace, 10, max_freq_khz={4: 3000000}, pinned_cpus=[4], temp_limit_c=45.0)
    text = " | ".join(result.flags)
    assert "charging" in text
    assert "coarse sampling" in text
    assert "throttled: cpu4 fell to 1200 MHz of 3000 MHz" in text
    assert "temperature 48.0 C over 45 C" in text
    assert result.temp_start_c == {"cpu-1-0-usr": 44.0}
    assert result.temp_end_c == {"cpu-1-0-usr": 48.0}


def test_no_source_is_unavailable_never_zero():
    trace = power_trace(lambda i: None, source={"kind": "none", "reason": "no RAPL here"})
    result = analyze(trace, 10)
    assert result.energy_mj_per_inf is None
    assert result.unavailable == "no RAPL here"
    assert analyze(None, 10).unavailable == "no telemetry was recorded"


def test_missing_baseline_is_flagged():
    trace = power_trace(lambda i: 1.5)
    trace["baseline"] = None
    result = analyze(trace, 100)
    assert result.energy_mj_per_inf == pytest.approx(15.0)
    assert any("no idle baseline" in f for f in result.flags)
