"""compare (significance + effect size), recommend (worst case across devices), history."""

from __future__ import annotations

import importlib.util
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from edgebench.analysis.compare import any_regression, compare_runs
from edgebench.analysis.history import build_index, history
from edgebench.analysis.recommend import recommend
from edgebench.analysis.statistics import bootstrap_ratio_ci, latency_stats, mann_whitney_u
from edgebench.reporting.charts import plot_history
from edgebench.reporting.junit import junit_xml
from edgebench.reporting.text import format_comparison, format_history, format_recommendation
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


def lognormal_ns(rng: np.random.Generator, median_ms: float, n: int = 300, sigma: float = 0.05):
    return (median_ms * 1e6 * rng.lognormal(0.0, sigma, n)).astype(np.int64).tolist()


def rec(
    cell: str = "dev/m/fw/fp32/t1/call/s1",
    samples: list[int] | None = None,
    status: str = "ok",
    run_id: str = "r",
    **extra,
) -> Record:
    device, model, framework, precision, threads, cores = cell.split("/")[:6]
    samples = samples or []
    stats = latency_stats(samples)
    return Record(
        run_id=run_id,
        cell_id=cell,
        device=device,
        model=model,
        framework=framework,
        precision=precision,
        threads=int(threads[1:]),
        cores=cores[1:],
        status=status,
        samples_ns=samples,
        latency_ms=stats.as_record() if stats else extra.pop("latency_ms", None),
        n_samples=len(samples),
        **extra,
    )


# --------------------------------------------------------------------------- Mann-Whitney


def test_mann_whitney_u_statistic_matches_pairwise_count() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 8, 40).astype(float)  # many ties
    y = rng.integers(1, 9, 35).astype(float)
    u, p = mann_whitney_u(x, y)
    pairwise = sum((a > b) + 0.5 * (a == b) for a in x for b in y)
    assert u == pytest.approx(pairwise)
    assert 0.0 <= p <= 1.0


def test_mann_whitney_tie_corrected_variance_matches_permutation_variance() -> None:
    """The normal approximation's variance (with ties) equals U's variance under the null."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, 30).astype(float)
    y = rng.integers(0, 5, 25).astype(float)
    pooled = np.concatenate([x, y])
    us = [mann_whitney_u(p[:30], p[30:])[0] for p in (rng.permutation(pooled) for _ in range(4000))]
    n1, n2, n = 30, 25, 55
    _, counts = np.unique(pooled, return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - ((counts**3 - counts).sum()) / (n * (n - 1)))
    assert np.var(us) == pytest.approx(var, rel=0.08)
    # and the p-value is the normal tail of that variance with continuity correction
    u, p = mann_whitney_u(x, y)
    z = (max(u, n1 * n2 - u) - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)), abs=1e-12)


def test_mann_whitney_identical_samples_give_p_one() -> None:
    assert mann_whitney_u([5, 5, 5], [5, 5])[1] == 1.0


@pytest.mark.skipif(not HAVE_SCIPY, reason="scipy is not installed")
def test_mann_whitney_agrees_with_scipy() -> None:
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(3)
    for _ in range(5):
        x = np.round(rng.lognormal(0, 0.05, 200), 3)
        y = np.round(rng.lognormal(0.02, 0.05, 180), 3)
        ref = mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
        u, p = mann_whitney_u(x, y)
        assert u == pytest.approx(ref.statistic)
        assert p == pytest.approx(ref.pvalue, abs=1e-3)


def test_bootstrap_ci_is_seeded_and_brackets_the_ratio() -> None:
    rng = np.random.default_rng(4)
    a, b = lognormal_ns(rng, 10), lognormal_ns(rng, 11)
    first = bootstrap_ratio_ci(a, b)
    assert first == bootstrap_ratio_ci(a, b)
    ratio, lo, hi = first
    assert lo < ratio < hi
    assert 1.05 < ratio < 1.15


# --------------------------------------------------------------------------- compare


def test_ten_percent_slowdown_is_regressed_and_speedup_improved() -> None:
    rng = np.random.default_rng(10)
    base = [rec(samples=lognormal_ns(rng, 10.0))]
    slower = [rec(samples=lognormal_ns(rng, 11.0))]
    faster = [rec(samples=lognormal_ns(rng, 9.0))]

    (v,) = compare_runs(base, slower)
    assert v.verdict == "regressed", v.reason
    assert v.p_value is not None and v.p_value < 1e-10
    assert v.ratio == pytest.approx(1.10, abs=0.02)
    assert v.ci_low > 1.05
    assert any_regression([v])

    (v,) = compare_runs(base, faster)
    assert v.verdict == "improved", v.reason
    assert v.ci_high < 1
    assert not any_regression([v])


def test_same_distribution_does_not_flag_over_many_seeds() -> None:
    false_positives = 0
    for seed in range(20):
        rng = np.random.default_rng(1000 + seed)
        (v,) = compare_runs(
            [rec(samples=lognormal_ns(rng, 10.0))], [rec(samples=lognormal_ns(rng, 10.0))]
        )
        assert v.verdict in ("unchanged", "regressed", "improved")
        false_positives += v.verdict != "unchanged"
    assert false_positives <= 1


def test_small_but_significant_shift_below_min_effect_is_unchanged() -> None:
    rng = np.random.default_rng(11)
    base = [rec(samples=lognormal_ns(rng, 10.0, n=3000))]
    new = [rec(samples=lognormal_ns(rng, 10.2, n=3000))]
    (v,) = compare_runs(base, new)
    assert v.p_value < 0.01
    assert v.verdict == "unchanged"
    assert "effect" in v.reason


def test_new_missing_and_not_comparable() -> None:
    rng = np.random.default_rng(12)
    s = lognormal_ns(rng, 5.0, n=50)
    base = [
        rec("d/m/a/fp32/t1/call/s1", s),
        rec("d/m/gone/fp32/t1/call/s1", s),
        rec("d/m/bad/fp32/t1/call/s1", s),
        rec("d/m/nosamples/fp32/t1/call/s1", latency_ms={"p50": 5.0}),
    ]
    new = [
        rec("d/m/a/fp32/t1/call/s1", s),
        rec("d/m/bad/fp32/t1/call/s1", status="mismatch"),
        rec("d/m/nosamples/fp32/t1/call/s1", latency_ms={"p50": 9.0}),
        rec("d/m/added/fp32/t1/call/s1", s),
    ]
    verdicts = {v.cell_id.split("/")[2]: v for v in compare_runs(base, new)}
    assert verdicts["a"].verdict == "unchanged"
    assert verdicts["gone"].verdict == "missing"
    assert verdicts["added"].verdict == "new"
    assert verdicts["bad"].verdict == "not_comparable"
    assert "mismatch" in verdicts["bad"].reason
    assert verdicts["nosamples"].verdict == "not_comparable"
    assert "samples" in verdicts["nosamples"].reason
    assert not any_regression(verdicts.values())
    text = format_comparison(list(verdicts.values()))
    assert "missing" in text and "1 new" in text


def test_scalar_metric_uses_min_effect_only() -> None:
    base = [rec("d/m/a/fp32/t1/call/s1", throughput_ips=100.0, energy_mj_per_inf=2.0)]
    new = [rec("d/m/a/fp32/t1/call/s1", throughput_ips=80.0, energy_mj_per_inf=1.5)]
    (v,) = compare_runs(base, new, metric="throughput")
    assert v.verdict == "regressed" and v.p_value is None
    assert "no significance" in v.reason
    (v,) = compare_runs(base, new, metric="energy")
    assert v.verdict == "improved"
    (v,) = compare_runs(base, base, metric="memory")
    assert v.verdict == "not_comparable"


def test_junit_xml_parses_with_one_failure() -> None:
    rng = np.random.default_rng(13)
    weird = 'd<&>"/m/fw/fp32/t1/call/s1'
    base = [
        rec("d/m/slow/fp32/t1/call/s1", lognormal_ns(rng, 10)),
        rec("d/m/same/fp32/t1/call/s1", lognormal_ns(rng, 10)),
        rec(weird, lognormal_ns(rng, 10)),
    ]
    new = [
        rec("d/m/slow/fp32/t1/call/s1", lognormal_ns(rng, 12)),
        rec("d/m/same/fp32/t1/call/s1", lognormal_ns(rng, 10)),
        rec("d/m/new/fp32/t1/call/s1", lognormal_ns(rng, 10)),
    ]
    xml = junit_xml(compare_runs(base, new), 'suite "x" & <y>')
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.tag == "testsuite" and root.get("name") == 'suite "x" & <y>'
    cases = root.findall("testcase")
    assert len(cases) == 4
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["d/m/slow/fp32/t1/call/s1"]
    skipped = {c.get("name") for c in cases if c.find("skipped") is not None}
    assert skipped == {weird, "d/m/new/fp32/t1/call/s1"}
    assert root.get("failures") == "1" and root.get("skipped") == "2"


# --------------------------------------------------------------------------- recommend


def matrix_record(device: str, fw: str, p50: float, status: str = "ok", threads: int = 4) -> Record:
    return rec(
        f"{device}/net/{fw}/fp32/t{threads}/call/s1",
        status=status,
        latency_ms={"p50": p50, "p99": p50 * 1.5},
        throughput_ips=1000.0 / p50,
    )


def constructed_matrix() -> list[Record]:
    # fast: best on d1, d2 (mean rank 1.33) but slow on d3 -> worst case 40
    # steady: never the fastest on d1/d2 but worst case 20
    # slow: slow everywhere
    table = {
        "d1": {"fast": 5.0, "steady": 10.0, "slow": 30.0},
        "d2": {"fast": 6.0, "steady": 12.0, "slow": 30.0},
        "d3": {"fast": 40.0, "steady": 20.0, "slow": 35.0},
    }
    return [matrix_record(d, fw, v) for d, row in table.items() for fw, v in row.items()]


def test_recommend_prefers_worst_case_over_average() -> None:
    rec_ = recommend(constructed_matrix(), ["d1", "d2", "d3"], "net")
    assert rec_.best == "steady"
    assert [s.framework for s in rec_.table] == ["steady", "slow", "fast"]
    fast = next(s for s in rec_.table if s.framework == "fast")
    assert fast.mean_rank == pytest.approx((1 + 1 + 3) / 3)
    assert fast.worst == 40.0 and fast.worst_device == "d3"
    text = format_recommendation(rec_)
    assert "recommendation: steady" in text
    assert "ranks better on average" in text
    # throughput: worst case is the minimum
    assert recommend(constructed_matrix(), ["d1", "d2", "d3"], "net", metric="throughput").best == (
        "steady"
    )


def test_recommend_never_picks_a_non_ok_cell() -> None:
    records = [
        *constructed_matrix(),
        matrix_record("d1", "wrong", 1.0),
        matrix_record("d2", "wrong", 1.0),
        matrix_record("d3", "wrong", 1.0, status="mismatch"),
    ]
    r = recommend(records, ["d1", "d2", "d3"], "net")
    assert r.best == "steady"
    assert r.table[-1].framework == "wrong"
    assert "mismatch" in r.table[-1].reason
    assert "d3" in r.table[-1].missing


def test_recommend_budget_filters_and_sweeps_use_best_cell() -> None:
    records = [*constructed_matrix(), matrix_record("d3", "fast", 15.0, threads=2)]
    # A 2-thread sweep point brings fast to 15 ms on d3: worst case 15 < steady's 20.
    r = recommend(records, ["d1", "d2", "d3"], "net")
    assert r.best == "fast"
    assert r.table[0].per_device["d3"].cell_id == "d3/net/fast/fp32/t2/call/s1"
    assert "t2" in format_recommendation(r)
    # p50 budget of 12 ms: fast is over on d3 (15), steady over on d3 (20): nobody qualifies.
    r = recommend(records, ["d1", "d2", "d3"], "net", budget_ms=12.0)
    assert r.best is None
    assert any("no framework meets the budget" in line for line in r.reasoning)
    # only d1, d2: budget 11 ms -> fast (5, 6) meets it, steady (10, 12) does not on d2
    r = recommend(records, ["d1", "d2"], "net", budget_ms=11.0)
    assert r.best == "fast"
    steady = next(s for s in r.table if s.framework == "steady")
    assert steady.devices_meeting_budget == ["d1"] and steady.meets_budget_all is False
    # p99 budget uses p99 (1.5 x p50): fast d2 p99 = 9 -> meets 10; steady fails
    r = recommend(records, ["d1", "d2"], "net", metric="p99", budget_ms=10.0)
    assert r.best == "fast"


def test_recommend_without_any_complete_framework() -> None:
    r = recommend(constructed_matrix(), ["d1", "nowhere"], "net")
    assert r.best is None
    assert all(not s.complete for s in r.table)


# --------------------------------------------------------------------------- history


def test_history_index_and_svg(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    rng = np.random.default_rng(20)
    statuses = ["ok", "failed", "ok"]
    medians = [10.0, 10.0, 12.0]
    for i, (status, median) in enumerate(zip(statuses, medians, strict=True)):
        meta = {"git_sha": f"abc{i}", "plan": "nightly", "lab_path": "/lab.toml"}
        # same-second run ids sort randomly; history orders by created_at
        run = store.create_run({**meta, "created_at": f"2026-0{3 - i}-01T00:00:00.000Z"})
        samples = lognormal_ns(rng, median, n=100) if status == "ok" else []
        run.append(rec("d1/net/fw/fp32/t1/call/s1", samples, status=status, run_id=run.run_id))
        run.append(rec("d2/other/fw/fp32/t1/call/s1", lognormal_ns(rng, 3, 20), run_id=run.run_id))

    index = build_index(store)
    assert len(index) == 3
    assert index[0].git_sha == "abc2" and index[0].plan == "nightly"
    assert index[0].lab_path == "/lab.toml"
    assert index[0].devices == ["d1", "d2"] and index[0].models == ["net", "other"]
    assert all(s.created_at for s in index)

    points = history(store, "d1", "net", "fw")
    # created_at runs backwards (run 2 is oldest), so the points come in reverse write order
    assert [p.status for p in points] == ["ok", "failed", "ok"]
    assert points[1].value is None
    assert points[0].value == pytest.approx(12.0, rel=0.03)
    assert points[2].value == pytest.approx(10.0, rel=0.03)
    assert [p.created_at[:7] for p in points] == ["2026-01", "2026-02", "2026-03"]
    text = format_history(points)
    assert "failed" in text and "-16" in text

    svg_path = plot_history(points, tmp_path / "h.svg", title="d1 <net> & fw", unit="ms")
    root = ET.parse(svg_path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert len(root.findall("s:circle", ns)) == 2
    assert len(root.findall("s:polyline", ns)) == 1
    assert history(store, "d1", "net", "absent") == []


def store_nan_runs(results: Path) -> tuple[str, str]:
    """Two runs on ``board``: onnxruntime measured (samples), tflite and mnn with stored
    figures that a hand-edited or damaged records.jsonl holds as ``NaN`` and ``Infinity``."""
    run_ids = []
    for k in range(2):
        run = ResultsStore(results).create_run({"edgebench_version": "test"})
        rng = np.random.default_rng(k)
        samples = lognormal_ns(rng, 10.0)
        run.append(rec("board/net/onnxruntime/fp32/t4/call", samples, run_id=run.run_id,
                       throughput_ips=100.0, peak_rss_mb=50.0))  # fmt: skip
        for fw in ("tflite", "mnn"):
            figures = {"p50": 1.0, "p99": 1.0, "mean": 1.0}
            run.append(rec(f"board/net/{fw}/fp32/t4/call", run_id=run.run_id, latency_ms=figures,
                           throughput_ips=1.0, peak_rss_mb=1.0))  # fmt: skip
        jsonl = run.path / "records.jsonl"
        text = jsonl.read_text().replace('"p50":1.0', '"p50":NaN').replace('"p99":1.0', '"p99":NaN')
        text = text.replace('"throughput_ips":1.0', '"throughput_ips":Infinity')
        jsonl.write_text(text.replace('"peak_rss_mb":1.0', '"peak_rss_mb":-Infinity'))
        assert text.count("NaN") == 4, text
        run_ids.append(run.run_id)
    return run_ids[0], run_ids[1]


def test_a_stored_nan_or_infinity_is_no_figure_in_recommend_and_compare(run_cli, eb_env):
    base, new = store_nan_runs(Path(eb_env["EDGEBENCH_RESULTS"]))
    for metric in ("p50", "p99", "throughput", "memory"):
        done = run_cli(["recommend", "--devices", "board", "--model", "net", "--metric", metric])
        assert done.returncode == 0, done.stderr
        out = done.stdout.lower()
        assert "nan" not in out and "inf " not in out and "rank 0.00" not in out, done.stdout
        for fw in ("tflite", "mnn"):
            assert f"{fw}: ranked last: board: its ok cells have no" in done.stdout, done.stdout
            assert "recommendation: onnxruntime" in done.stdout, done.stdout
    for metric in ("p50", "throughput", "memory"):
        done = run_cli(["compare", base, new, "--metric", metric])
        rows = {line.split()[0]: line for line in done.stdout.splitlines() if "/net/" in line}
        for fw in ("tflite", "mnn"):
            row = rows[f"board/net/{fw}/fp32/t4/call"]
            assert "not_comparable" in row and "nan" not in row.lower(), done.stdout
            assert " inf" not in row.lower(), done.stdout
