"""The block ratio of medians and its bootstrap interval (edgebench/analysis/block_ratio.py),
on synthetic lognormal latencies whose true ratio is known."""

import numpy as np
import pytest

from edgebench.analysis.block_ratio import RatioInterval, bootstrap_ratio, ratio_of_medians

TRUE_RATIO = 1.01


def lognormal_blocks(rng, blocks, size, drift=0.0, median_ms=5.0, sigma=0.05):
    """A's and B's blocks: B's median is ``median_ms``, A's ``TRUE_RATIO`` times it; with
    ``drift``, every block's level is its own (lognormal, that sigma), A and B apart."""
    a, b = [], []
    for _ in range(blocks):
        level_a, level_b = np.exp(rng.normal(0.0, drift, 2)) if drift else (1.0, 1.0)
        b.append(median_ms * level_b * rng.lognormal(0.0, sigma, size))
        a.append(TRUE_RATIO * median_ms * level_a * rng.lognormal(0.0, sigma, size))
    return a, b


def coverage(resample, drift, trials=120, estimator="pooled"):
    rng = np.random.default_rng(11)
    hits = 0
    for trial in range(trials):
        a, b = lognormal_blocks(rng, blocks=12, size=15, drift=drift)
        interval = bootstrap_ratio(
            a, b, resample=resample, draws=300, seed=trial, estimator=estimator
        )
        hits += interval.low <= TRUE_RATIO <= interval.high
    return hits / trials


def test_the_ratio_is_the_median_of_all_a_over_the_median_of_all_b():
    assert ratio_of_medians([[1.0, 9.0], [3.0]], [[2.0], [2.0, 1.0]]) == pytest.approx(1.5)


def test_block_intervals_cover_the_true_ratio_at_about_their_rate():
    # 95% nominal; a percentile bootstrap over 12 blocks runs a little short of it.
    assert 0.86 <= coverage("blocks", drift=0.0) <= 1.0
    assert 0.80 <= coverage("blocks", drift=0.05) <= 1.0


def test_sample_intervals_miss_the_true_ratio_when_blocks_drift():
    # Independent draws of single samples take 180 samples for 180 independent ones.
    assert coverage("samples", drift=0.08) < 0.6


def test_block_resampling_widens_the_interval_when_blocks_drift():
    rng = np.random.default_rng(5)
    steady = lognormal_blocks(rng, blocks=20, size=30)
    drifting = lognormal_blocks(rng, blocks=20, size=30, drift=0.03)
    by_blocks = bootstrap_ratio(*drifting, resample="blocks", seed=1)
    by_samples = bootstrap_ratio(*drifting, resample="samples", seed=1)
    assert by_blocks.half_width > 2 * by_samples.half_width
    # Without drift the two agree: the widening is the drift's, not the method's.
    steady_blocks = bootstrap_ratio(*steady, resample="blocks", seed=1)
    steady_samples = bootstrap_ratio(*steady, resample="samples", seed=1)
    assert 0.6 < steady_blocks.half_width / steady_samples.half_width < 1.6


def test_drift_shared_by_a_pair_of_blocks_cancels():
    rng = np.random.default_rng(8)
    a, b = lognormal_blocks(rng, blocks=20, size=30)
    levels = np.exp(rng.normal(0.0, 0.05, 20))
    a_drifted = [block * level for block, level in zip(a, levels, strict=True)]
    b_beside = [block * level for block, level in zip(b, levels, strict=True)]
    b_elsewhere = [block * level for block, level in zip(b, levels[::-1], strict=True)]
    shared = bootstrap_ratio(a_drifted, b_beside)
    apart = bootstrap_ratio(a_drifted, b_elsewhere)
    assert shared.half_width < apart.half_width / 2


def test_paired_intervals_cover_the_true_ratio_at_about_their_rate():
    assert 0.86 <= coverage("blocks", drift=0.0, estimator="paired") <= 1.0
    assert 0.80 <= coverage("blocks", drift=0.05, estimator="paired") <= 1.0


def test_the_paired_estimator_cancels_drift_that_the_pooled_one_only_averages():
    # Drift well above the noise within a block: the case the paired estimator is for (within
    # a block of 30 steady samples the pooled one is as good or better).
    rng = np.random.default_rng(9)
    a, b = lognormal_blocks(rng, blocks=30, size=30, sigma=0.02)
    levels = np.exp(rng.normal(0.0, 0.1, 30))  # each pair's own level, shared by A and B
    a = [block * level for block, level in zip(a, levels, strict=True)]
    b = [block * level for block, level in zip(b, levels, strict=True)]
    paired = bootstrap_ratio(a, b, estimator="paired", seed=1)
    pooled = bootstrap_ratio(a, b, seed=1)
    assert paired.estimator == "paired"
    assert paired.low <= TRUE_RATIO <= paired.high
    assert paired.half_width < pooled.half_width
    # B/A is the reciprocal of A/B: the median is taken on logarithms.
    assert bootstrap_ratio(b, a, estimator="paired").ratio == pytest.approx(1.0 / paired.ratio)


def test_the_same_seed_gives_the_same_interval():
    rng = np.random.default_rng(2)
    a, b = lognormal_blocks(rng, blocks=8, size=10, drift=0.02)
    first = bootstrap_ratio(a, b, seed=4)
    assert bootstrap_ratio(a, b, seed=4) == first
    assert bootstrap_ratio(a, b, seed=5) != first


def test_blocks_of_one_figure_and_of_different_sizes_work():
    one = bootstrap_ratio([[2.0], [2.2], [2.1]], [[1.0], [1.1], [1.05]], seed=0)
    assert one.ratio == pytest.approx(2.0)
    assert one.low <= one.ratio <= one.high
    ragged = bootstrap_ratio([[1.0, 1.0, 1.0], [1.0]], [[1.0], [1.0, 1.0]], seed=0)
    assert (ragged.low, ragged.high) == (1.0, 1.0)


def test_the_goal_needs_the_interval_inside_and_narrow():
    assert RatioInterval(1.0, 0.991, 1.009, 30, 0.95).meets()
    assert not RatioInterval(1.01, 0.995, 1.025, 30, 0.95).meets()  # pokes out of 1.02
    assert not RatioInterval(1.0, 0.985, 1.015, 30, 0.95).meets()  # +-1.5% wide


@pytest.mark.parametrize(
    ("a", "b", "kwargs"),
    [
        ([[1.0]], [[1.0], [1.0]], {}),
        ([], [], {}),
        ([[]], [[1.0]], {}),
        ([[1.0]], [[1.0]], {"resample": "pairs"}),
        ([[1.0]], [[1.0]], {"confidence": 1.0}),
        ([[1.0]], [[1.0]], {"estimator": "mean"}),
        ([[1.0]], [[1.0]], {"estimator": "paired", "resample": "samples"}),
    ],
)
def test_bad_input_is_refused(a, b, kwargs):
    with pytest.raises(ValueError):
        bootstrap_ratio(a, b, **kwargs)


def test_block_spread_is_the_robust_spread_of_the_block_figures():
    from edgebench.analysis.block_ratio import block_spread

    # Block medians 10, 11, 9, 10, 30: the one slow block moves the robust spread little.
    blocks = [[10.0], [11.0, 11.0], [9.0], [10.0], [30.0]]
    assert block_spread(blocks) == pytest.approx(1.4826 * 1.0 / 10.0)
    assert block_spread([[5.0]] * 4) == 0.0


def test_pairs_needed_grows_with_the_square_of_the_half_width():
    from edgebench.analysis.block_ratio import pairs_needed

    wide = RatioInterval(ratio=1.0, low=0.97, high=1.03, blocks=25, confidence=0.95)
    assert pairs_needed(wide, 0.01) == 225  # 3x too wide: 9x the pairs
    assert pairs_needed(wide, 0.05) == 25  # already narrow enough: the pairs it has
    # And the forecast holds: at 9x the pairs of the same machine, the half-width is a third.
    rng = np.random.default_rng(3)
    few = bootstrap_ratio(*lognormal_blocks(rng, 25, 10, drift=0.05), seed=2)
    many = bootstrap_ratio(
        *lognormal_blocks(rng, pairs_needed(few, few.half_width / 3), 10, drift=0.05), seed=2
    )
    assert 0.22 < many.half_width / few.half_width < 0.45
