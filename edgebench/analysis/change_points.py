"""Change points in one cell's nightly history: where its level moved, by how much, and how
sure (analysis/nightly.py applies it to each cell's nights).

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
#: The least weight a noisy night keeps (its spread ten times the typical one or more).
MIN_WEIGHT = 0.1


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


def energy_statistics(
    values: np.ndarray, min_size: int = MIN_SEGMENT, weights: np.ndarray | None = None
) -> np.ndarray:
    """Q(t) for every split t of ``values`` (NaN where a side is shorter than ``min_size``).

    With ``weights``, each pair's distance counts ``w_i w_j`` times and each side's averages
    are weighted ones; equal weights give the unweighted statistic exactly.
    """
    m = len(values)
    q = np.full(m + 1, np.nan)
    if m < 2 * min_size:
        return q
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    distances = np.abs(values[:, None] - values[None, :])
    distances *= w[:, None]
    distances *= w[None, :]
    # Each value's distances to the ones before it; the pairs within a prefix, and within a
    # suffix, are then running sums of these, and the pairs across a split what is left.
    earlier = np.tril(distances, -1).sum(axis=1)
    later = distances.sum(axis=1) - earlier
    within_prefix = np.concatenate([[0.0], np.cumsum(earlier)])  # pairs among the first a
    within_suffix = np.concatenate([np.cumsum(later[::-1])[::-1], [0.0]])  # among i >= a
    weight_sum = np.concatenate([[0.0], np.cumsum(w)])
    square_sum = np.concatenate([[0.0], np.cumsum(w * w)])
    t = np.arange(min_size, m - min_size + 1)
    w_left = weight_sum[t]
    w_right = weight_sum[m] - w_left
    left = 2 * within_prefix[t]  # every pair twice
    right = 2 * within_suffix[t]
    between = (2 * within_prefix[m] - left - right) / 2
    left_pairs = w_left**2 - square_sum[t]
    right_pairs = w_right**2 - (square_sum[m] - square_sum[t])
    energy = 2 * between / (w_left * w_right) - left / left_pairs - right / right_pairs
    q[t] = w_left * w_right / weight_sum[m] * energy
    return q


def _best_split(
    values: np.ndarray, min_size: int, weights: np.ndarray | None = None
) -> tuple[int, float]:
    q = energy_statistics(values, min_size, weights)
    if np.all(np.isnan(q)):
        return -1, float("-inf")
    t = int(np.nanargmax(q))
    return t, float(q[t])


def night_weights(spreads: Sequence[float | None]) -> np.ndarray:
    """Each night's weight from its within-run spread (the relative standard error of its
    median): 1 for a night as quiet as the typical one or quieter, less for a noisier one
    (``(typical / spread)^2``, at least ``MIN_WEIGHT``), 1 where the spread is unknown."""
    known = np.array([s for s in spreads if s is not None and s > 0], dtype=np.float64)
    if known.size == 0:
        return np.ones(len(spreads))
    typical = float(np.median(known))
    return np.array(
        [
            1.0 if s is None or s <= 0 else float(np.clip((typical / s) ** 2, MIN_WEIGHT, 1.0))
            for s in spreads
        ]
    )


def e_divisive(
    values: Sequence[float],
    *,
    weights: Sequence[float] | None = None,
    min_size: int = MIN_SEGMENT,
    permutations: int = PERMUTATIONS,
    significance: float = SIGNIFICANCE,
    seed: int = 0,
) -> list[tuple[int, float]]:
    """The significant splits of ``values`` as (index, p-value), in index order. ``weights``
    (one per value, ``night_weights``) makes noisier nights count less."""
    series = np.asarray(values, dtype=np.float64)
    if series.size == 0 or not np.all(np.isfinite(series)):
        raise ValueError("a history needs finite values")
    w = np.ones(series.size) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != series.shape or not np.all(w > 0):
        raise ValueError("a history needs one positive weight per night")
    scale = float(np.median(np.abs(series))) or 1.0
    series = series / scale
    rng = np.random.default_rng(seed)
    bounds = [0, len(series)]
    found: list[tuple[int, float]] = []
    # A split is kept when at most this many shuffles beat it: past it, the test has failed.
    allowed = int(significance * (permutations + 1)) - 1
    for _ in range(len(series) // min_size):  # each round adds a split or stops
        best = (-1, float("-inf"), 0, 0)
        for start, end in itertools.pairwise(bounds):
            t, q = _best_split(series[start:end], min_size, w[start:end])
            if t > 0 and q > best[1]:
                best = (start + t, q, start, end)
        index, q, start, end = best
        if index < 0:
            break
        order = np.arange(start, end)
        exceed = 0
        for _ in range(permutations):
            rng.shuffle(order)  # values move with their weights
            exceed += _best_split(series[order], min_size, w[order])[1] >= q
            if exceed > allowed:
                break
        if exceed > allowed:
            break
        found.append((index, (exceed + 1) / (permutations + 1)))
        bounds = sorted([*bounds, index])
    return sorted(found)


def change_points(
    values: Sequence[float],
    *,
    weights: Sequence[float] | None = None,
    min_effect: float = MIN_EFFECT,
    seed: int = 0,
    **options: float,
) -> list[ChangePoint]:
    """The level shifts in a cell's nightly values, each with its size and interval; splits
    whose change is under ``min_effect`` are left out."""
    series = np.asarray(values, dtype=np.float64)
    splits = e_divisive(series, weights=weights, seed=seed, **options)  # type: ignore[arg-type]  # options are e_divisive's own
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
