"""Latency statistics from raw per-iteration samples (warm-up is never part of them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

#: Below this many samples p99 is an interpolation between the last few points, not a tail.
MIN_SAMPLES_FOR_P99 = 100
#: Coefficient of variation above which a result is flagged as noisy.
HIGH_CV = 0.10


@dataclass(frozen=True)
class LatencyStats:
    """Milliseconds; percentiles use linear interpolation between order statistics."""

    n: int
    min: float
    p50: float
    p90: float
    p95: float
    p99: float
    mean: float
    std: float
    cv: float

    def as_record(self) -> dict[str, float]:
        fields = asdict(self)
        fields.pop("n")
        return fields


def latency_stats(samples_ns: Sequence[int]) -> LatencyStats | None:
    """Summarise raw samples; None when there are none."""
    if len(samples_ns) == 0:
        return None
    ms = np.asarray(samples_ns, dtype=np.float64) / 1e6
    p50, p90, p95, p99 = np.percentile(ms, [50, 90, 95, 99])
    mean = float(ms.mean())
    std = float(ms.std(ddof=1)) if ms.size > 1 else 0.0
    return LatencyStats(
        n=int(ms.size),
        min=float(ms.min()),
        p50=float(p50),
        p90=float(p90),
        p95=float(p95),
        p99=float(p99),
        mean=mean,
        std=std,
        cv=std / mean if mean > 0 else 0.0,
    )


def stats_warnings(stats: LatencyStats | None) -> list[str]:
    """Human-readable reasons not to trust a result blindly."""
    if stats is None:
        return []
    warnings = []
    if stats.n < MIN_SAMPLES_FOR_P99:
        warnings.append(
            f"only {stats.n} samples: p99 is not a real tail (raise --iterations or --min-time)"
        )
    if stats.cv > HIGH_CV:
        warnings.append(
            f"high variance (CV {stats.cv:.0%}): pin cores, close other load, or raise --min-time"
        )
    return warnings


def throughput_ips(count: int, wall_ns: int | None) -> float | None:
    """Completed inferences per second over the timed window."""
    if not count or not wall_ns:
        return None
    return count / (wall_ns / 1e9)
