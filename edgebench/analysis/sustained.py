"""How a cell behaves over a long continuous run: first 10% of the window vs the last 10%."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

EDGE_FRACTION = 0.10


@dataclass
class SustainedSummary:
    """First vs last tenth of the timed window: median latency, mean power (None without a
    power trace) and the hottest thermal zone's peak (None without temperatures)."""

    seconds: float
    first_p50_ms: float
    last_p50_ms: float
    #: Change of the median from the first to the last tenth, in percent.
    latency_change_pct: float = 0.0
    first_power_w: float | None = None
    last_power_w: float | None = None
    power_change_pct: float | None = None
    first_temp_c: float | None = None
    last_temp_c: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        text = (
            f"sustained {self.seconds:.0f} s: p50 {self.first_p50_ms:.2f} -> "
            f"{self.last_p50_ms:.2f} ms ({self.latency_change_pct:+.1f}%)"
        )
        if self.first_power_w is not None and self.last_power_w is not None:
            text += (
                f", power {self.first_power_w:.2f} -> {self.last_power_w:.2f} W "
                f"({self.power_change_pct:+.1f}%)"
            )
        if self.first_temp_c is not None and self.last_temp_c is not None:
            text += f", hottest zone {self.first_temp_c:.1f} -> {self.last_temp_c:.1f} C"
        return text


def _pct(first: float, last: float) -> float:
    return (last - first) / first * 100.0 if first else 0.0


def summarize(samples_ns: list[int], trace: dict[str, Any] | None) -> SustainedSummary | None:
    """Samples are in completion order, so cumulative time places each in the window."""
    if len(samples_ns) < 20:
        return None
    total = float(sum(samples_ns))
    elapsed = 0.0
    first: list[int] = []
    last: list[int] = []
    for sample in samples_ns:
        position = elapsed / total
        if position < EDGE_FRACTION:
            first.append(sample)
        elif position >= 1 - EDGE_FRACTION:
            last.append(sample)
        elapsed += sample
    if not first or not last:
        return None
    summary = SustainedSummary(
        seconds=total / 1e9,
        first_p50_ms=statistics.median(first) / 1e6,
        last_p50_ms=statistics.median(last) / 1e6,
    )
    summary.latency_change_pct = _pct(summary.first_p50_ms, summary.last_p50_ms)
    if trace:
        _add_trace_edges(summary, trace)
    return summary


def _edges(ts: list[int], values: list[Any], start: int, end: int) -> tuple[list, list]:
    span = end - start
    first = [
        v
        for t, v in zip(ts, values, strict=False)
        if v is not None and t < start + span * EDGE_FRACTION and t >= start
    ]
    last = [
        v
        for t, v in zip(ts, values, strict=False)
        if v is not None and t >= end - span * EDGE_FRACTION and t <= end
    ]
    return first, last


def _add_trace_edges(summary: SustainedSummary, trace: dict[str, Any]) -> None:
    marks = trace.get("marks") or {}
    start, end = marks.get("window_start"), marks.get("window_end")
    ts = trace.get("t_perf_ns") or []
    if start is None or end is None or not ts:
        return
    power = trace.get("power_w")
    if power:
        first, last = _edges(ts, power, start, end)
        if first and last:
            summary.first_power_w = statistics.fmean(first)
            summary.last_power_w = statistics.fmean(last)
            summary.power_change_pct = _pct(summary.first_power_w, summary.last_power_w)
    hottest = []
    for values in (trace.get("temp_c") or {}).values():
        first, last = _edges(ts, values, start, end)
        if first and last:
            hottest.append((max(first), max(last)))
    if hottest:
        summary.first_temp_c = max(h[0] for h in hottest)
        summary.last_temp_c = max(h[1] for h in hottest)
