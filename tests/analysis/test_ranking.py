"""analysis.ranking: which cells lead, and when a lead is only noise (a tie)."""

from __future__ import annotations

import numpy as np
import pytest
from fakes.real_samples import noisy_tie_case, real_cell
from fakes.records import sampled_record

from edgebench.analysis.metrics import get_metric
from edgebench.analysis.ranking import (
    MARGIN,
    SAMPLES,
    metric_ci,
    rank,
    separate,
    separation_hint,
    tie_rule,
    tiers,
)
from edgebench.results.records import Record

P50 = get_metric("p50")


def sampled(
    framework: str,
    median_ms: float,
    cv: float,
    seed: int,
    n: int = 300,
    status: str = "ok",
) -> Record:
    """A cell with ``n`` seeded lognormal samples around ``median_ms``."""
    return sampled_record("dev", framework, median_ms, seed, cv=cv, n=n, status=status)


def scalar(framework: str, **fields) -> Record:
    """A cell with one value per metric and no raw samples (a native tool, memory, energy)."""
    return Record(
        run_id="r",
        cell_id=f"dev/net/{framework}/fp32/t1/call/s1",
        device="dev",
        model="net",
        framework=framework,
        precision="fp32",
        threads=1,
        cores="all",
        status="ok",
        **fields,
    )


def test_close_cells_on_a_loaded_machine_tie() -> None:
    """The issue's case: 114, 115 and 116 ms with CVs of 10-30% is no ranking."""
    cells = {
        "onnxruntime": sampled("onnxruntime", 114, 0.20, seed=1),
        "openvino": sampled("openvino", 115, 0.10, seed=2),
        "mnn": sampled("mnn", 116, 0.30, seed=3),
    }
    ranking = rank(cells, P50)
    assert ranking.best is None and ranking.tied
    assert set(ranking.leaders) == set(cells)
    assert {ranking.standing(f) for f in cells} == {"tied"}
    assert all(s.test == SAMPLES and not s.separated for s in ranking.versus.values())


def test_clearly_different_cells_keep_their_best() -> None:
    cells = {
        "mnn": sampled("mnn", 130, 0.02, seed=4),
        "onnxruntime": sampled("onnxruntime", 100, 0.02, seed=5),
        "openvino": sampled("openvino", 115, 0.02, seed=6),
    }
    ranking = rank(cells, P50)
    assert ranking.order == ("onnxruntime", "openvino", "mnn")
    assert ranking.best == "onnxruntime" and not ranking.tied
    assert ranking.standing("onnxruntime") == "best"
    assert ranking.standing("openvino") == ranking.standing("mnn") == ""
    versus = ranking.versus["openvino"]
    assert versus.separated and versus.p_value < 1e-10 and versus.cis_apart
    assert versus.behind == pytest.approx(1.15, abs=0.02)


def test_leading_group_is_every_cell_not_clearly_slower_than_the_fastest() -> None:
    cells = {
        "a": sampled("a", 100, 0.02, seed=7),
        "b": sampled("b", 101, 0.02, seed=8),
        "c": sampled("c", 130, 0.02, seed=9),
    }
    ranking = rank(cells, P50)
    assert set(ranking.leaders) == {"a", "b"}
    assert ranking.standing("c") == "" and ranking.best is None
    assert tiers(cells, P50) == [ranking.leaders, ("c",)]


def test_a_significant_difference_below_the_minimum_lead_is_a_tie() -> None:
    """3000 samples at CV 2% make a 2% gap highly significant, but it is not worth a star."""
    fast, slow = sampled("a", 100, 0.02, seed=10, n=3000), sampled("b", 102, 0.02, seed=11, n=3000)
    versus = separate(fast, slow, P50)
    assert versus.p_value < 1e-10 and not versus.separated
    assert "under 5%" in versus.describe()
    assert not versus.more_samples_could_separate
    assert "less than 5% apart" in separation_hint([versus])
    # With a 1% minimum lead the same samples separate.
    assert separate(fast, slow, P50, min_lead=0.01).separated


def test_a_large_gap_in_noisy_or_few_samples_ties_and_asks_for_more_samples() -> None:
    few = separate(
        sampled("a", 100, 0.02, seed=12, n=5), sampled("b", 130, 0.02, seed=13, n=5), P50
    )
    assert not few.separated and few.cis_apart is False  # 5 samples cannot bound a median
    noisy = separate(
        sampled("a", 100, 0.4, seed=14, n=40), sampled("b", 112, 0.4, seed=15, n=40), P50
    )
    assert not noisy.separated
    assert noisy.more_samples_could_separate
    hint = separation_hint([noisy])
    assert "--target-ci" in hint and "--min-time" in hint and "--rounds" in hint
    # Enough samples of the same two distributions do separate them.
    assert separate(
        sampled("a", 100, 0.4, seed=14, n=4000), sampled("b", 112, 0.4, seed=15, n=4000), P50
    ).separated


def test_same_distribution_almost_never_gets_a_best() -> None:
    bests = 0
    for seed in range(30):
        cells = {f: sampled(f, 50, 0.1, seed=100 * seed + i) for i, f in enumerate("abc")}
        bests += rank(cells, P50).best is not None
    assert bests <= 1


def test_values_without_samples_are_compared_by_the_margin() -> None:
    memory = get_metric("memory")
    close = {"a": scalar("a", peak_rss_mb=100.0), "b": scalar("b", peak_rss_mb=104.0)}
    ranking = rank(close, memory)
    assert ranking.tied and ranking.versus["b"].test == MARGIN
    assert "within 5%" in ranking.versus["b"].describe()
    apart = {"a": scalar("a", peak_rss_mb=100.0), "b": scalar("b", peak_rss_mb=106.0)}
    assert rank(apart, memory).best == "a"
    # Higher is better for throughput: the 106 inf/s cell leads, 104 would tie.
    throughput = get_metric("throughput")
    fast = {"a": scalar("a", throughput_ips=100.0), "b": scalar("b", throughput_ips=106.0)}
    assert rank(fast, throughput).best == "b"
    slow = {"a": scalar("a", throughput_ips=100.0), "b": scalar("b", throughput_ips=104.0)}
    assert rank(slow, throughput).best is None
    # Equal values are a tie, not two bests.
    same = {"a": scalar("a", peak_rss_mb=80.0), "b": scalar("b", peak_rss_mb=80.0)}
    assert rank(same, memory).leaders == ("a", "b")
    assert tie_rule(memory) == "within 5%"


def test_a_native_cell_without_samples_is_compared_by_the_margin_on_latency() -> None:
    native = scalar("tflite", latency_ms={"p50": 98.0, "mean": 99.0})
    cells = {"onnxruntime": sampled("onnxruntime", 100, 0.02, seed=16), "tflite": native}
    ranking = rank(cells, P50)
    assert ranking.order[0] == "tflite" and ranking.tied
    assert ranking.versus["onnxruntime"].test == MARGIN
    # The legend says which rules a table used: only the margin, or both.
    assert tie_rule(P50, [ranking]) == "within 5%"
    both = rank({"a": sampled("a", 9, 0.02, seed=23), "b": sampled("b", 10, 0.02, seed=24)}, P50)
    assert tie_rule(P50, [ranking, both]).endswith("within 5% where a cell has no raw samples")
    assert tie_rule(P50) == tie_rule(P50, [both]) == "no 5% lead at p < 0.01"


def test_only_ok_cells_with_a_value_are_ranked() -> None:
    cells = {
        "wrong": sampled("wrong", 50, 0.02, seed=17, status="mismatch"),
        "fast": sampled("fast", 100, 0.02, seed=18),
        "slow": sampled("slow", 150, 0.02, seed=19),
        "empty": scalar("empty"),
    }
    ranking = rank(cells, P50)
    assert ranking.order == ("fast", "slow") and ranking.best == "fast"
    alone = rank({"fast": cells["fast"], "wrong": cells["wrong"]}, P50)
    assert alone.order == ("fast",) and alone.best is None and alone.standing("fast") == ""
    assert rank({}, P50).leaders == ()


def test_p99_needs_enough_samples_to_bound_its_tail() -> None:
    """300 samples pin a median well but cannot bound a p99 from above: p99 ties, p50 does not."""
    a, b = sampled("a", 100, 0.05, seed=20), sampled("b", 115, 0.05, seed=21)
    assert separate(a, b, P50).separated
    assert not separate(a, b, get_metric("p99")).separated
    many_a, many_b = (
        sampled("a", 100, 0.05, seed=20, n=3000),
        sampled("b", 115, 0.05, seed=21, n=3000),
    )
    assert separate(many_a, many_b, get_metric("p99")).separated
    assert separate(many_a, many_b, get_metric("mean")).separated


def test_metric_ci_brackets_the_true_quantile() -> None:
    rng = np.random.default_rng(22)
    hits = 0
    for _ in range(400):
        lo, hi = metric_ci(rng.lognormal(0.0, 0.3, 200), 0.5)
        hits += lo <= 1.0 <= hi  # the median of lognormal(0, s) is 1
    assert 0.93 <= hits / 400 <= 0.995
    lo, hi = metric_ci(np.arange(5.0), 0.5)
    assert lo == -np.inf and hi == np.inf


def assert_monotone(ranking) -> None:
    """No cell is behind while a cell with a worse value leads, and ``behind`` means what it
    says: every cell outside the leading group is clearly worse than the front runner."""
    for worse_pos, worse in enumerate(ranking.order):
        for better in ranking.order[:worse_pos]:
            if worse in ranking.leaders:
                assert better in ranking.leaders, (better, worse, ranking.values)
    for key in ranking.order[1:]:
        if not ranking.versus[key].separated:
            assert key in ranking.leaders, (key, ranking.values)
        if ranking.behind(key):
            assert ranking.versus[key].separated and ranking.standing(key) == ""


def test_a_faster_quieter_cell_is_never_behind_a_slower_noisier_tied_one() -> None:
    cells = noisy_tie_case()
    a, b, c = cells["a"], cells["b"], cells["c"]
    # The case is what it claims: c is clearly behind a on its own, b is not.
    assert separate(a, c, P50).separated
    assert not separate(a, b, P50).separated
    assert P50.value(a) < P50.value(c) < P50.value(b)
    ranking = rank(cells, P50)
    assert ranking.order == ("a", "c", "b")
    # b ties with a, so c, faster than b, ties too: never "behind" while b is "tied".
    assert ranking.leaders == ("a", "c", "b") and ranking.best is None
    assert {ranking.standing(f) for f in cells} == {"tied"}
    assert not any(ranking.behind(f) for f in cells)
    assert ranking.tied_through("c") == "b" and ranking.tied_through("b") is None
    assert ranking.verdict("c").startswith("tied: +6") and "but b, slower" in ranking.verdict("c")
    assert ranking.verdict("b").startswith("tied with a: +10")
    assert "tie through" in separation_hint([ranking.versus["c"]])
    assert_monotone(ranking)
    # Without the noisy cell c is clearly behind, and a is best.
    alone = rank({"a": a, "c": c}, P50)
    assert alone.best == "a" and alone.behind("c")
    assert alone.verdict("c").startswith("behind a: +6")


def test_a_slower_cell_past_the_noisy_tie_is_still_behind() -> None:
    cells = noisy_tie_case() | {"d": real_cell("d", 140, 0.01, 300, seed=34)}
    ranking = rank(cells, P50)
    assert ranking.leaders == ("a", "c", "b") and ranking.behind("d")
    assert tiers(cells, P50)[0] == ranking.leaders


def test_verdicts_are_monotone_in_the_value_over_many_sample_sets() -> None:
    """Random mixes of quiet and noisy, many- and few-sample cells around close medians: the
    leading group is always a prefix of the value order that holds every cell the front
    runner cannot be told from, and tiers never interleave."""
    rng = np.random.default_rng(35)
    pulled_in = 0
    for case in range(200):
        count = int(rng.integers(2, 6))
        cells = {
            f"f{i}": real_cell(
                f"f{i}",
                float(rng.uniform(95, 135)),
                float(rng.choice([0.01, 0.03, 0.1, 0.4])),
                int(rng.choice([20, 60, 300])),
                seed=1000 * case + i,
            )
            for i in range(count)
        }
        ranking = rank(cells, P50)
        assert_monotone(ranking)
        pulled_in += sum(ranking.tied_through(f) is not None for f in cells)
        flat = [k for tier in tiers(cells, P50) for k in tier]
        assert flat == list(ranking.order)
    # The sets include the case many times over, so the property was put to the test.
    assert pulled_in >= 3
