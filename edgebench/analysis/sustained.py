"""How a cell behaves over a long continuous run: first 10% of the window vs the last 10%."""

from __future__ import annotations

import statistics
from typing import Any

from edgebench.results.sustained_part import SustainedSummary

__all__ = ["EDGE_FRACTION", "SustainedSummary", "summarize"]

EDGE_FRACTION = 0.10


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
