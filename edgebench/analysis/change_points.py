"""Change points in one cell's nightly history: where its level moved, by how much, and how
sure (issue 31; not yet wired into the nightly gate or the store).

E-Divisive means (Matteson and James, 2014), the method behind MongoDB's change-point
detection and Hunter: the split of a segment that maximises the energy statistic

    Q(t) = t (m - t) / m * [ 2/(t (m - t)) sum|x_i - y_j| - 1/C(t, 2) sum|x_i - x_k|
                             - 1/C(m - t, 2) sum|y_j - y_k| ]

(x the first t values, y the other m - t), found recursively: each round the best split over
every current segment is tested against ``permutations`` random shuffles of that segment, and
kept when its p-value is at most ``significance``. So in a history with no change, a round
finds a false change with probability about ``significance``; the false-alarm rate per night
is measured by benchmarks/change_points.py and reported in its output.

Distances are taken between relative values (each night's median over the history's median),
so a 2% wobble weighs the same on a 1 ms and a 100 ms cell. Pure numpy, O(m^2) per segment.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Nights on each side of a change point, at least: a one-night spike is not a level shift.
MIN_SEGMENT = 5
PERMUTATIONS = 199
SIGNIFICANCE = 0.01
#: Relative level changes smaller than this are not reported, however significant.
MIN_EFFECT = 0.01
BOOTSTRAP = 500


@dataclass(frozen=True)
class ChangePoint:
    """A level shift: ``index`` is the first night at the new level."""

    index: int
    before: float  # median of the segment before
    after: float  # median of the segment after
    #: (after - before) / before, with a bootstrap 95% interval.
    change: float
    change_low: float
    change_high: float
    p_value: float

    def describe(self) -> str:
        return (
            f"night {self.index}: {self.before:.4g} -> {self.after:.4g} "
            f"({self.change:+.1%}, 95% CI {self.change_low:+.1%} to {self.change_high:+.1%}, "
            f"p = {self.p_value:.3f})"
        )


def energy_statistics(values: np.ndarray, min_size: int = MIN_SEGMENT) -> np.ndarray:
    """Q(t) for every split t of ``values`` (NaN where a side is shorter than ``min_size``)."""
    m = len(values)
    q = np.full(m + 1, np.nan)
    if m < 2 * min_size:
        return q
    distances = np.abs(values[:, None] - values[None, :])
    # 2-D prefix sums: P[a, b] sums distances[:a, :b], so every block's sum is four lookups.
    prefix = np.zeros((m + 1, m + 1))
    prefix[1:, 1:] = distances.cumsum(0).cumsum(1)
    t = np.arange(min_size, m - min_size + 1)
    u = m - t
    left = prefix[t, t]  # every pair twice
    between = prefix[t, m] - left
    right = prefix[m, m] - prefix[t, m] - prefix[m, t] + left
    energy = 2 * between / (t * u) - left / (t * (t - 1)) - right / (u * (u - 1))
    q[t] = t * u / m * energy
    return q


def _best_split(values: np.ndarray, min_size: int) -> tuple[int, float]:
    q = energy_statistics(values, min_size)
    if np.all(np.isnan(q)):
        return -1, float("-inf")
    t = int(np.nanargmax(q))
    return t, float(q[t])


def e_divisive(
    values: Sequence[float],
    *,
    min_size: int = MIN_SEGMENT,
    permutations: int = PERMUTATIONS,
    significance: float = SIGNIFICANCE,
    seed: int = 0,
) -> list[tuple[int, float]]:
    """The significant splits of ``values`` as (index, p-value), in index order."""
    series = np.asarray(values, dtype=np.float64)
    if series.size == 0 or not np.all(np.isfinite(series)):
        raise ValueError("a history needs finite values")
    scale = float(np.median(np.abs(series))) or 1.0
    series = series / scale
    rng = np.random.default_rng(seed)
    bounds = [0, len(series)]
    found: list[tuple[int, float]] = []
    for _ in range(len(series) // min_size):  # each round adds a split or stops
        best = (-1, float("-inf"), 0, 0)
        for start, end in itertools.pairwise(bounds):
            t, q = _best_split(series[start:end], min_size)
            if t > 0 and q > best[1]:
                best = (start + t, q, start, end)
        index, q, start, end = best
        if index < 0:
            break
        segment = series[start:end].copy()
        exceed = 0
        for _ in range(permutations):
            rng.shuffle(segment)
            exceed += _best_split(segment, min_size)[1] >= q
        p_value = (exceed + 1) / (permutations + 1)
        if p_value > significance:
            break
        found.append((index, p_value))
        bounds = sorted([*bounds, index])
    return sorted(found)


def change_points(
    values: Sequence[float],
    *,
    min_effect: float = MIN_EFFECT,
    seed: int = 0,
    **options: float,
) -> list[ChangePoint]:
    """The level shifts in a cell's nightly values, each with its size and interval; splits
    whose change is under ``min_effect`` are left out."""
    series = np.asarray(values, dtype=np.float64)
    splits = e_divisive(series, seed=seed, **options)  # type: ignore[arg-type]
    bounds = [0, *(i for i, _ in splits), len(series)]
    rng = np.random.default_rng(seed)
    points = []
    for k, (index, p_value) in enumerate(splits):
        before = series[bounds[k] : index]
        after = series[index : bounds[k + 2]]
        low, high = _bootstrap_change(before, after, rng)
        b, a = float(np.median(before)), float(np.median(after))
        change = (a - b) / b if b else float("inf")
        if abs(change) < min_effect:
            continue
        points.append(ChangePoint(index, b, a, change, low, high, p_value))
    return points


def _bootstrap_change(
    before: np.ndarray, after: np.ndarray, rng: np.random.Generator
) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the relative change of the medians."""
    b = np.median(rng.choice(before, (BOOTSTRAP, before.size)), axis=1)
    a = np.median(rng.choice(after, (BOOTSTRAP, after.size)), axis=1)
    ratios = (a - b) / np.where(b == 0, np.nan, b)
    low, high = np.nanpercentile(ratios, [2.5, 97.5])
    return float(low), float(high)
