"""The shell loop's RAPL samples beside a native tool, read back as a trace: joules per
sample, and the samples where the counter wrapped (fell below the one before it)."""

from __future__ import annotations

from edgebench.measure.native_telemetry import ShellSampler, build_trace


def loop_file(energy_uj: list[str]) -> str:
    """What the device loop writes: a ``t <ns>`` line, then one line per sampled file."""
    return "".join(f"t {1000 * i}\n{value}\n" for i, value in enumerate(energy_uj))


def test_a_counter_that_wraps_is_marked_where_it_fell_and_unreadable_samples_are_none():
    sampler = ShellSampler("rapl", files=[("energy_uj", "/rapl/energy_uj")])
    samples = ["1000000", "3000000", "500000", "?", "250000", "900000"]

    trace = build_trace(sampler, loop_file(samples), "", period_s=0.01)

    assert trace["t_perf_ns"] == [0, 1000, 2000, 3000, 4000, 5000]
    energy = trace["energy_j"]
    assert energy[3] is None
    assert [e for e in energy if e is not None] == [1.0, 3.0, 0.5, 0.25, 0.9]
    # 3.0 -> 0.5 wrapped; 0.5 -> unreadable -> 0.25 is no comparison across the gap.
    assert trace["wrapped_at"] == [2]
