"""Change points in a nightly history: a step is found at its night with an interval that holds
it, a slow drift is found, quiet and spiky nights raise nothing, and bad input is refused."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.analysis.change_points import (
    change_points,
    e_divisive,
    energy_statistics,
    night_weights,
)


def nights(seed: int, count: int = 100, cv: float = 0.02) -> np.ndarray:
    return 10.0 * (1.0 + np.random.default_rng(seed).normal(0.0, cv, count))


def test_a_step_is_found_at_its_night_with_its_size():
    series = nights(3)
    series[60:] *= 1.05
    (point,) = change_points(series)
    assert abs(point.index - 60) <= 1  # a 5% step in 2% noise: within a night
    assert point.change_low <= 0.05 <= point.change_high
    assert point.change == pytest.approx(0.05, abs=0.01)
    assert point.p_value <= 0.01
    assert f"night {point.index}: " in point.describe() and "+5." in point.describe()


def test_a_regression_then_its_fix_are_two_change_points():
    series = nights(4, 120)
    series[40:80] *= 1.10
    up, down = change_points(series)
    assert abs(up.index - 40) <= 1 and abs(down.index - 80) <= 1
    assert up.change > 0.08 and down.change < -0.07


def test_a_slow_drift_that_no_two_nights_show_is_found():
    series = nights(5)
    series[50:] *= 1.0 + 0.002 * np.arange(1, 51)  # +0.2% a night: 10% after 50 nights
    adjacent = np.abs(np.diff(series[50:]) / series[50:-1])
    assert np.median(adjacent) > 0.002  # night to night, the noise hides the drift
    assert any(p.index >= 45 and p.change > 0.03 for p in change_points(series))


@pytest.mark.parametrize("spiky", [False, True], ids=["quiet", "spiky"])
def test_quiet_and_spiky_histories_raise_nothing(spiky):
    alarms = 0
    for seed in range(20):
        series = nights(seed)
        if spiky:
            series[np.random.default_rng(seed + 100).random(100) < 0.1] *= 1.15
        alarms += len(change_points(series, seed=seed))
    assert alarms <= 1


def test_the_energy_statistic_peaks_at_the_split_and_skips_short_sides():
    series = np.concatenate([np.zeros(10), np.ones(10)])
    q = energy_statistics(series, min_size=3)
    assert int(np.nanargmax(q)) == 10
    assert np.isnan(q[:3]).all() and np.isnan(q[18:]).all()
    assert np.isnan(energy_statistics(series[:5], min_size=3)).all()


def test_short_constant_and_bad_histories():
    assert change_points([1.0] * 30) == []
    assert e_divisive([1.0, 2.0, 3.0]) == []
    with pytest.raises(ValueError, match="finite values"):
        e_divisive([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="finite values"):
        e_divisive([])


def test_equal_weights_give_the_unweighted_statistic():
    series = nights(6, 40)
    plain = energy_statistics(series)
    weighted = energy_statistics(series, weights=np.full(40, 0.3))
    scaled = energy_statistics(series, weights=np.ones(40))
    assert np.allclose(plain, scaled, equal_nan=True)
    # One common weight scales Q by that weight, so every split keeps its rank.
    assert np.allclose(weighted, 0.3 * plain, equal_nan=True)


def test_nights_that_were_noisy_inside_the_run_weigh_less():
    """Eight nights in a row measured with ten times the usual within-run spread, and 8%
    slower: unweighted they make change points in some histories; weighted, in none."""
    unweighted = weighted = 0
    for seed in range(30):
        series = nights(seed, 60)
        series[30:38] *= 1.08
        spreads = [0.005] * 30 + [0.08] * 8 + [0.005] * 22
        unweighted += len(change_points(series, seed=seed))
        weighted += len(change_points(series, weights=night_weights(spreads), seed=seed))
    assert unweighted >= 2
    assert weighted == 0


def test_night_weights():
    weights = night_weights([0.01, 0.005, 0.01, 0.02, None, 0.5, 0.0])
    assert weights.tolist()[:3] == [1.0, 1.0, 1.0]  # typical (0.01) or quieter
    assert weights[3] == pytest.approx(0.25)  # twice the typical spread: a quarter
    assert weights[4] == 1.0 and weights[6] == 1.0  # unknown spread: full weight
    assert weights[5] == pytest.approx(0.1)  # never below MIN_WEIGHT
    assert night_weights([None, None]).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="positive weight"):
        e_divisive([1.0, 2.0], weights=[1.0, 0.0])
