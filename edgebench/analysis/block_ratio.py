"""The ratio of two measurers' medians, measured in alternating blocks, with a bootstrap interval.

Two measurers A and B (edgebench and a framework's own tool) run in turns, A B A B ..., each
turn a *block* of samples (milliseconds). The figure is the ratio of medians: the median of all
of A's samples over the median of all of B's.

Its 95% interval is a percentile bootstrap. ``resample="blocks"`` (the default) draws whole
block *pairs* with replacement, the same pair indices for both sides, and pools the samples of
the drawn blocks. A machine drifts (another process, the clock, the cache) from one block to
the next, so samples within a block are not independent of each other: a block that ran on a
slow stretch is slow throughout. Drawing whole blocks keeps that, and the interval widens by
as much as the blocks disagree; drawing single samples (``resample="samples"``, independent
draws from each side's pool, as
``statistics.bootstrap_ratio_ci``) treats thousands of samples as independent and gives an interval
far too narrow when blocks drift. Drawing pairs keeps each A block with the B block that ran
beside it, so drift that hits both (the two ran seconds apart) cancels in the ratio.

A block may hold a single figure: a tool that prints only its median (or mean) gives one per
block, and the other side's block is then reduced to the same statistic of its samples.

``estimator="paired"`` is the figure that uses the alternation fully: each pair of blocks gives
one ratio (A's block median over B's), and the figure is the median of those ratios (taken on
their logarithms, so A/B and B/A agree). Drift that moves both blocks of a pair, the machine
getting slower for a minute, cancels inside each ratio instead of only on average, so on a
drifting machine its interval is narrower than the pooled ratio of medians' for the same blocks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgebench.analysis.statistics import bootstrap_ratio_ci

RESAMPLE_KINDS = ("blocks", "samples")
ESTIMATORS = ("pooled", "paired")
#: Bootstrap draws evaluated at once (bounds the memory of a draw matrix).
_CHUNK = 256


@dataclass(frozen=True)
class RatioInterval:
    """A ratio of medians (A / B) and its bootstrap interval."""

    ratio: float
    low: float
    high: float
    blocks: int
    confidence: float
    estimator: str = "pooled"

    @property
    def half_width(self) -> float:
        """Half the interval's width, relative to the ratio (0.01: +-1%)."""
        return (self.high - self.low) / 2.0 / self.ratio

    def meets(self, tolerance: float = 0.02, max_half_width: float = 0.01) -> bool:
        """Whether the whole interval lies within 1 +- ``tolerance`` and it is no wider than
        +-``max_half_width``."""
        inside = 1.0 - tolerance <= self.low and self.high <= 1.0 + tolerance
        return inside and self.half_width <= max_half_width


def ratio_of_medians(
    a_blocks: Sequence[Sequence[float]], b_blocks: Sequence[Sequence[float]]
) -> float:
    """The median of all of A's samples over the median of all of B's."""
    a = np.concatenate([np.asarray(block, dtype=float) for block in a_blocks])
    b = np.concatenate([np.asarray(block, dtype=float) for block in b_blocks])
    return float(np.median(a) / np.median(b))


def pair_ratios(
    a_blocks: Sequence[Sequence[float]], b_blocks: Sequence[Sequence[float]]
) -> np.ndarray:
    """Each pair's ratio: A's block median over B's."""
    return np.array(
        [float(np.median(a)) / float(np.median(b)) for a, b in zip(a_blocks, b_blocks, strict=True)]
    )


def paired_ratio(a_blocks: Sequence[Sequence[float]], b_blocks: Sequence[Sequence[float]]) -> float:
    """The median of the pairs' ratios (see the module docs)."""
    return float(np.exp(np.median(np.log(pair_ratios(a_blocks, b_blocks)))))


def bootstrap_ratio(
    a_blocks: Sequence[Sequence[float]],
    b_blocks: Sequence[Sequence[float]],
    *,
    resample: str = "blocks",
    draws: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    estimator: str = "pooled",
) -> RatioInterval:
    """The ratio of medians of A over B and its percentile bootstrap interval (see the module
    docs for ``resample`` and ``estimator``). ``a_blocks[i]`` and ``b_blocks[i]`` are the i-th
    pair of blocks; the same ``seed`` gives the same interval."""
    if resample not in RESAMPLE_KINDS:
        raise ValueError(f"resample must be one of {RESAMPLE_KINDS}, got {resample!r}")
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "paired" and resample != "blocks":
        raise ValueError("the paired estimator resamples block pairs (resample='blocks')")
    if len(a_blocks) != len(b_blocks) or not a_blocks:
        raise ValueError(
            f"need the same number (>= 1) of blocks on both sides, got {len(a_blocks)} "
            f"and {len(b_blocks)}"
        )
    if any(len(block) == 0 for block in (*a_blocks, *b_blocks)):
        raise ValueError("every block needs at least one sample")
    if not 0.0 < confidence < 1.0 or draws < 1:
        raise ValueError("confidence must be in (0, 1) and draws >= 1")
    tail = (1.0 - confidence) / 2.0
    if estimator == "paired":
        logs = np.log(pair_ratios(a_blocks, b_blocks))
        picks = np.random.default_rng(seed).integers(0, len(logs), size=(draws, len(logs)))
        low, high = np.exp(np.quantile(np.median(logs[picks], axis=1), [tail, 1.0 - tail]))
        ratio = paired_ratio(a_blocks, b_blocks)
    elif resample == "blocks":
        rng = np.random.default_rng(seed)
        ratios = _block_draws(_padded(a_blocks), _padded(b_blocks), draws, rng)
        low, high = np.quantile(ratios, [tail, 1.0 - tail])
        ratio = ratio_of_medians(a_blocks, b_blocks)
    else:
        _, low, high = bootstrap_ratio_ci(
            _pooled(b_blocks), _pooled(a_blocks), resamples=draws, seed=seed, level=confidence
        )
        ratio = ratio_of_medians(a_blocks, b_blocks)
    return RatioInterval(
        ratio=ratio,
        low=float(low),
        high=float(high),
        blocks=len(a_blocks),
        confidence=confidence,
        estimator=estimator,
    )


def block_spread(blocks: Sequence[Sequence[float]]) -> float:
    """How much one side's blocks disagree: the robust coefficient of variation of the block
    medians (1.4826 x their median absolute deviation, over their median). 0.05: a block's
    figure is typically 5% off the typical block's."""
    medians = np.array([float(np.median(block)) for block in blocks])
    if len(medians) < 2:
        return math.nan
    centre = float(np.median(medians))
    return 1.4826 * float(np.median(np.abs(medians - centre))) / centre


def pairs_needed(interval: RatioInterval, max_half_width: float) -> int:
    """Block pairs for the interval to narrow to ``max_half_width``, at the spread these blocks
    showed: a bootstrap interval narrows as one over the square root of the pairs drawn."""
    if interval.half_width <= max_half_width:
        return interval.blocks
    # The rounding keeps a float error (9.000000001) from asking one pair more.
    return math.ceil(round(interval.blocks * (interval.half_width / max_half_width) ** 2, 6))


def _padded(blocks: Sequence[Sequence[float]]) -> np.ndarray:
    """The blocks as rows of one matrix, short ones padded with NaN."""
    width = max(len(block) for block in blocks)
    out = np.full((len(blocks), width), math.nan)
    for row, block in enumerate(blocks):
        out[row, : len(block)] = block
    return out


def _pooled(blocks: Sequence[Sequence[float]]) -> np.ndarray:
    return np.concatenate([np.asarray(block, dtype=float) for block in blocks])


def _block_draws(a: np.ndarray, b: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """The ratio of pooled medians over ``draws`` resamples of block pairs."""
    count = a.shape[0]
    ragged = bool(np.isnan(a).any() or np.isnan(b).any())
    median = np.nanmedian if ragged else np.median
    out = []
    for start in range(0, draws, _CHUNK):
        picks = rng.integers(0, count, size=(min(_CHUNK, draws - start), count))
        a_median = median(a[picks].reshape(len(picks), -1), axis=1)
        b_median = median(b[picks].reshape(len(picks), -1), axis=1)
        out.append(a_median / b_median)
    return np.concatenate(out)
