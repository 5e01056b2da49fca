import math

import numpy as np
import pytest

from edgebench.analysis.statistics import HIGH_CV, latency_stats, stats_warnings, throughput_ips


def test_percentiles_interpolate_between_order_statistics():
    samples_ns = [i * 1_000_000 for i in range(1, 101)]  # 1..100 ms
    stats = latency_stats(samples_ns)
    assert stats is not None
    assert stats.n == 100
    assert stats.min == pytest.approx(1.0)
    assert stats.p50 == pytest.approx(50.5)
    assert stats.p90 == pytest.approx(90.1)
    assert stats.p95 == pytest.approx(95.05)
    assert stats.p99 == pytest.approx(99.01)
    assert stats.mean == pytest.approx(50.5)
    assert stats.std == pytest.approx(np.std(np.arange(1, 101), ddof=1))
    assert stats.cv == pytest.approx(stats.std / 50.5)


def test_order_of_samples_does_not_matter():
    rng = np.random.default_rng(3)
    samples = rng.integers(1_000_000, 9_000_000, 500).tolist()
    shuffled = list(samples)
    rng.shuffle(shuffled)
    a, b = latency_stats(samples), latency_stats(shuffled)
    assert a.as_record() == pytest.approx(b.as_record(), rel=1e-12)
    assert (a.p50, a.p99, a.min) == (b.p50, b.p99, b.min)


def test_single_sample_has_zero_spread_and_empty_is_none():
    stats = latency_stats([2_500_000])
    assert stats is not None and stats.p99 == pytest.approx(2.5) and stats.std == 0.0
    assert latency_stats([]) is None
    assert stats_warnings(None) == []


def test_record_fields_are_the_documented_latency_keys():
    stats = latency_stats([1_000_000, 2_000_000, 3_000_000])
    assert set(stats.as_record()) == {"min", "p50", "p90", "p95", "p99", "mean", "std", "cv"}


def test_warnings_for_few_samples_and_high_variance():
    steady = latency_stats([10_000_000 + (i % 3) for i in range(200)])
    assert stats_warnings(steady) == []
    few = stats_warnings(latency_stats([10_000_000] * 20))
    assert len(few) == 1 and "only 20 samples" in few[0].message
    noisy_samples = [10_000_000] * 150 + [30_000_000] * 50
    noisy = latency_stats(noisy_samples)
    assert noisy.cv > HIGH_CV
    assert any("high variance" in w.message for w in stats_warnings(noisy))


def test_throughput_is_count_over_wall_time():
    assert throughput_ips(50, 2_000_000_000) == pytest.approx(25.0)
    assert throughput_ips(0, 1_000) is None
    assert throughput_ips(10, None) is None
    assert math.isclose(throughput_ips(3, 1_500_000_000), 2.0)
