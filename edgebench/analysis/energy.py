"""Energy per inference, power and validity flags from a device's telemetry trace.

The trace (``edgebench.telemetry/1``) is sampled on the device by the runner, beside the timed
loop; everything here is recomputed on the host from the raw samples.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from edgebench.results.energy_part import EnergyResult

#: A pinned core running below this fraction of its max frequency counts as throttled.
DEFAULT_THROTTLE_FRACTION = 0.85
#: Fewer samples than this inside the timed window: too coarse to integrate.
MIN_WINDOW_SAMPLES = 5


def _interp(ts: Sequence[int], values: Sequence[float], at: int) -> float:
    """Linear interpolation of a sampled series at time ``at`` (clamped at the ends)."""
    if at <= ts[0]:
        return values[0]
    if at >= ts[-1]:
        return values[-1]
    lo, hi = 0, len(ts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ts[mid] <= at:
            lo = mid
        else:
            hi = mid
    span = ts[hi] - ts[lo]
    if span <= 0:
        return values[hi]
    return values[lo] + (values[hi] - values[lo]) * (at - ts[lo]) / span


def unwrap_counter(
    energy_j: Sequence[float | None], wrapped_at: Sequence[int], max_range_j: float | None
) -> list[float | None]:
    """A monotonic energy series: each wrap adds the counter's range to what follows."""
    offset = 0.0
    wraps = set(wrapped_at)
    out: list[float | None] = []
    for index, value in enumerate(energy_j):
        if index in wraps and max_range_j:
            offset += max_range_j
        out.append(None if value is None else value + offset)
    return out


def _window_energy(trace: dict[str, Any], start: int, end: int) -> tuple[float | None, int]:
    """Joules in [start, end] and the number of samples inside the window."""
    ts_all: list[int] = trace.get("t_perf_ns") or []
    inside = sum(1 for t in ts_all if start <= t <= end)
    energy = trace.get("energy_j") or []
    if any(e is not None for e in energy):
        series = unwrap_counter(
            energy, trace.get("wrapped_at") or [], trace.get("max_energy_range_j")
        )
        pairs = [(t, e) for t, e in zip(ts_all, series, strict=False) if e is not None]
        if len(pairs) >= 2:
            ts, values = zip(*pairs, strict=True)
            return _interp(ts, values, end) - _interp(ts, values, start), inside
    power = trace.get("power_w") or []
    pairs = [(t, p) for t, p in zip(ts_all, power, strict=False) if p is not None]
    if len(pairs) < 2:
        return None, inside
    ts, values = zip(*pairs, strict=True)
    # Trapezoids over the samples inside the window, with interpolated end points.
    points = [(start, _interp(ts, values, start))]
    points += [(t, p) for t, p in pairs if start < t < end]
    points.append((end, _interp(ts, values, end)))
    joules = 0.0
    for (t0, p0), (t1, p1) in itertools.pairwise(points):
        joules += (p0 + p1) / 2 * (t1 - t0) / 1e9
    return joules, inside


def _series_in_window(
    trace: dict[str, Any], key: str, start: int, end: int
) -> dict[str, list[float]]:
    ts: list[int] = trace.get("t_perf_ns") or []
    out: dict[str, list[float]] = {}
    for name, values in (trace.get(key) or {}).items():
        kept = [v for t, v in zip(ts, values, strict=False) if start <= t <= end and v is not None]
        if kept:
            out[name] = kept
    return out


def analyze(
    trace: dict[str, Any] | None,
    inferences: int,
    *,
    max_freq_khz: dict[int, int] | None = None,
    pinned_cpus: Sequence[int] | None = None,
    temp_limit_c: float | None = None,
    throttle_fraction: float = DEFAULT_THROTTLE_FRACTION,
) -> EnergyResult:
    """Energy per inference = (window energy - baseline power x window) / inferences."""
    result = EnergyResult()
    if not trace:
        result.unavailable = "no telemetry was recorded"
        return result
    source = trace.get("source") or {}
    result.source = source.get("kind")
    marks = trace.get("marks") or {}
    start, end = marks.get("window_start"), marks.get("window_end")
    if start is None or end is None or end <= start:
        result.unavailable = "the timed window was not marked"
        return result
    result.window_s = (end - start) / 1e9

    temps = _series_in_window(trace, "temp_c", start, end)
    result.temp_start_c = {k: v[0] for k, v in temps.items()}
    result.temp_end_c = {k: v[-1] for k, v in temps.items()}
    hottest = [max(v) for v in temps.values()]
    result.temp_max_c = max(hottest) if hottest else None
    too_hot = temp_limit_c is not None and (result.temp_max_c or 0.0) > temp_limit_c
    if too_hot:
        result.flags.append(f"temperature {result.temp_max_c:.1f} C over {temp_limit_c:g} C")
    freqs = _series_in_window(trace, "freq_khz", start, end)
    result.freq_min_khz = {k: int(min(v)) for k, v in freqs.items()}
    result.freq_max_khz = {k: int(max(v)) for k, v in freqs.items()}
    watched = [str(c) for c in pinned_cpus] if pinned_cpus else list(freqs)
    for cpu in watched:
        top = (max_freq_khz or {}).get(int(cpu))
        low = result.freq_min_khz.get(cpu)
        if top and low is not None and low < throttle_fraction * top:
            result.flags.append(
                f"throttled: cpu{cpu} fell to {low / 1000:.0f} MHz of {top / 1000:.0f} MHz"
            )

    if source.get("kind") in (None, "none"):
        reasons = source.get("reasons") or {}
        if reasons:
            tried = ", ".join(reasons)
            last = list(reasons.values())[-1]
            result.unavailable = f"no readable energy source (tried {tried}); {last}"
        else:
            result.unavailable = source.get("reason") or "the device has no energy source"
        return result
    joules, inside = _window_energy(trace, start, end)
    if joules is None:
        result.unavailable = "the energy source returned no usable readings"
        return result
    period = trace.get("period_s") or 0
    if inside < MIN_WINDOW_SAMPLES:
        result.flags.append(
            f"coarse sampling: {inside} samples in a {result.window_s:.2f} s window "
            f"(period {period:g} s); raise --min-time"
        )
    ts = trace.get("t_perf_ns") or []
    if any(start <= ts[i] <= end for i in trace.get("wrapped_at") or [] if i < len(ts)):
        result.flags.append("energy counter wrapped in the window (corrected)")
    charging = trace.get("charging") or []
    if any(c for t, c in zip(ts, charging, strict=False) if start <= t <= end):
        result.flags.append("charging: the reading includes charger current")
    result.avg_power_w = joules / result.window_s
    baseline = (trace.get("baseline") or {}).get("power_w")
    result.baseline_power_w = baseline
    active_j = joules - (baseline or 0.0) * result.window_s
    result.active_power_w = active_j / result.window_s
    if baseline is None:
        result.flags.append("no idle baseline: energy includes idle power")
    if inferences > 0:
        result.energy_mj_per_inf = active_j / inferences * 1000.0
    return result


def spans_active_energy_j(
    trace: dict[str, Any] | None, spans: Sequence[Sequence[int]]
) -> float | None:
    """Joules above the idle baseline over ``spans`` ([start, end] on the trace's clock, inside
    its timed window): ``analyze``'s window arithmetic for parts of the window (a generative
    cell's prefill and decode repetitions). None without an energy source, readings or spans."""
    source = (trace or {}).get("source") or {}
    if not trace or not spans or source.get("kind") in (None, "none"):
        return None
    baseline = (trace.get("baseline") or {}).get("power_w") or 0.0
    total = 0.0
    for start, end in spans:
        joules, _ = _window_energy(trace, start, end)
        if joules is None:
            return None
        total += joules - baseline * (end - start) / 1e9
    return total
