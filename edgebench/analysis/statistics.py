"""The host's statistics on raw per-iteration samples (warm-up is never part of them).

Per cell: latency percentiles, spread and warnings (``latency_stats``). Between two runs: the
Mann-Whitney U test and the seeded bootstrap CI of a ratio of statistics, used by compare.
(The on-device runner keeps its own stdlib median-CI: it cannot import the host.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from edgebench.results.record_warnings import (
    FEW_SAMPLES,
    FEW_TOKEN_SAMPLES,
    HIGH_VARIANCE,
    RecordWarning,
)

#: Samples as a list of numbers or a numpy array of them.
Samples = Sequence[float] | np.ndarray

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


def stats_warnings(stats: LatencyStats | None, generative: bool = False) -> list[RecordWarning]:
    """Reasons not to trust a result blindly: too few samples for a tail (``generative``: the
    samples are per generated token), too much spread."""
    if stats is None:
        return []
    warnings = []
    if stats.n < MIN_SAMPLES_FOR_P99:
        few = FEW_TOKEN_SAMPLES if generative else FEW_SAMPLES
        warnings.append(few.make(samples=stats.n))
    if stats.cv > HIGH_CV:
        warnings.append(HIGH_VARIANCE.make(cv=stats.cv))
    return warnings


def throughput_ips(count: int, wall_ns: int | None) -> float | None:
    """Completed inferences per second over the timed window."""
    if not count or not wall_ns:
        return None
    return count / (wall_ns / 1e9)


# --------------------------------------------------------------------------- two-sample tests

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
#: Upper bound on resample-matrix elements held in memory at once.
_BOOTSTRAP_CHUNK_ELEMENTS = 4_000_000


def sample_statistic(
    values: np.ndarray, quantile: float | None, axis: int | None = None
) -> np.ndarray:
    """The mean (``quantile=None``) or a quantile (numpy's default linear interpolation)."""
    if quantile is None:
        return np.mean(values, axis=axis)
    return np.quantile(values, quantile, axis=axis)


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties sharing their average rank, and the tie group sizes."""
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    del uniq
    ends = np.cumsum(counts)
    starts = ends - counts
    avg = (starts + 1 + ends) / 2.0
    return avg[inverse], counts


def mann_whitney_u(x: Samples, y: Samples) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test, normal approximation with tie and continuity correction.

    Returns ``(U, p)`` where U is the statistic of ``x`` (as scipy.stats.mannwhitneyu with
    ``method="asymptotic"``, ``use_continuity=True``).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u needs samples on both sides")
    ranks, ties = _average_ranks(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    u2 = n1 * n2 - u1
    n = n1 + n2
    mu = n1 * n2 / 2.0
    tie_term = float((ties.astype(np.float64) ** 3 - ties).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u1, 1.0
    z = (max(u1, u2) - mu - 0.5) / math.sqrt(var)
    p = math.erfc(z / math.sqrt(2.0))  # 2 * survival function of the standard normal
    return u1, float(min(max(p, 0.0), 1.0))


def _bootstrap_stat(
    values: np.ndarray, quantile: float | None, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """The statistic over ``resamples`` bootstrap resamples (vectorized, in bounded chunks)."""
    n = values.size
    per_chunk = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // max(n, 1))
    out = np.empty(resamples, dtype=np.float64)
    done = 0
    while done < resamples:
        k = min(per_chunk, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        out[done : done + k] = sample_statistic(values[idx], quantile, axis=1)
        done += k
    return out


def bootstrap_ratio_ci(
    base: Samples,
    new: Samples,
    *,
    quantile: float | None = 0.5,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Ratio statistic(new)/statistic(base) and its percentile bootstrap CI (seeded)."""
    b = np.asarray(base, dtype=np.float64)
    a = np.asarray(new, dtype=np.float64)
    rng = np.random.default_rng(seed)
    point = float(sample_statistic(a, quantile)) / float(sample_statistic(b, quantile))
    boot_b = _bootstrap_stat(b, quantile, rng, resamples)
    boot_a = _bootstrap_stat(a, quantile, rng, resamples)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_a / boot_b
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return point, float(lo), float(hi)
