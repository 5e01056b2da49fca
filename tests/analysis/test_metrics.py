"""The metrics registry: values from stored figures or raw samples, and who uses it."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.analysis.compare import compare_runs
from edgebench.analysis.metrics import (
    METRICS,
    RECOMMEND_METRICS,
    REGRESSION_METRICS,
    get_metric,
    metric_value,
)
from edgebench.results.records import Record


def _record(**fields) -> Record:
    base = dict(
        run_id="r",
        cell_id="d/m/fw/fp32/t1/call/s1",
        device="d",
        model="m",
        framework="fw",
        precision="fp32",
        threads=1,
        cores="all",
        status="ok",
    )
    return Record(**{**base, **fields})


SAMPLES = [int(v) for v in np.random.default_rng(5).lognormal(np.log(4e6), 0.2, 257)]


@pytest.mark.parametrize("name", [m.name for m in METRICS.values() if m.sampled])
def test_sampled_metric_recomputes_what_compare_judges(name: str) -> None:
    """Without a stored figure the value is numpy's default (linear) quantile, or the mean,
    of the samples in ms: the same statistic compare's verdicts are computed on."""
    record = _record(samples_ns=SAMPLES)
    ms = np.asarray(SAMPLES, dtype=np.float64) / 1e6
    quantile = METRICS[name].quantile
    expected = float(np.mean(ms) if quantile is None else np.quantile(ms, quantile))
    assert metric_value(record, name) == expected
    (verdict,) = compare_runs([record], [record], metric=name)
    assert verdict.base_value == expected


def test_stored_figure_wins_and_scalars_are_never_recomputed() -> None:
    record = _record(samples_ns=SAMPLES, latency_ms={"p50": 1.5}, energy_mj_per_inf=3)
    assert metric_value(record, "p50") == 1.5
    assert metric_value(record, "energy") == 3.0
    assert metric_value(record, "throughput") is None
    assert metric_value(_record(), "p99") is None


def test_units_and_direction() -> None:
    assert get_metric("energy").unit == "mJ" and get_metric("energy").bare_unit == "mJ/inf"
    assert get_metric("p50").bare_unit == "ms"
    assert [m for m in METRICS if not METRICS[m].lower_is_better] == [
        "throughput",
        "decode",
        "prefill",
    ]
    assert set(RECOMMEND_METRICS) <= set(REGRESSION_METRICS) == set(METRICS)


def test_unknown_metric_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="p50, p90"):
        get_metric("p42")


def test_best_of_ok_values_follows_the_direction() -> None:
    fast = _record(latency_ms={"p50": 2.0}, throughput_ips=500.0)
    slow = _record(latency_ms={"p50": 4.0}, throughput_ips=250.0)
    broken = _record(status="failed", latency_ms={"p50": 1.0}, throughput_ips=1000.0)
    for name in ("p50", "throughput"):
        metric = get_metric(name)
        ok = metric.ok_values([slow, broken, fast])
        assert len(ok) == 2
        assert metric.best(ok)[1] is fast


def test_command_line_choices_come_from_the_registry() -> None:
    from edgebench.cli.app import cli

    def choices(command: str) -> list[str]:
        option = next(p for p in cli.commands[command].params if p.name == "metric")
        return list(option.type.choices)

    assert choices("compare") == list(REGRESSION_METRICS)
    assert choices("history") == list(METRICS)
    assert choices("recommend") == list(RECOMMEND_METRICS)
    assert choices("show") == list(METRICS)


def test_a_new_metric_reaches_every_reader(monkeypatch, tmp_path) -> None:
    """The 'add a metric' recipe of docs/ARCHITECTURE.md: one registry entry, nothing else."""
    from edgebench.analysis.metrics import Metric
    from edgebench.planning.plan_file import load_plan
    from edgebench.reporting.matrix import format_matrix

    p75 = Metric("p75", "p75 latency", "ms", True, lambda r: None, quantile=0.75, sampled=True)
    monkeypatch.setitem(METRICS, "p75", p75)

    slow = [s * 2 for s in SAMPLES]
    base = [_record(samples_ns=SAMPLES, n_samples=len(SAMPLES))]
    new = [_record(samples_ns=slow, n_samples=len(slow))]
    expected = float(np.quantile(np.asarray(SAMPLES) / 1e6, 0.75))
    assert metric_value(base[0], "p75") == pytest.approx(expected)
    assert "p75 latency (ms)" in format_matrix(base, "p75")
    (verdict,) = compare_runs(base, new, min_effect=0.05, alpha=0.01, metric="p75")
    assert verdict.verdict == "regressed" and verdict.base_value == pytest.approx(expected)

    plan = tmp_path / "p.toml"
    plan.write_text('[thresholds]\nmetric = "p75"\n')
    assert load_plan(plan).metric == "p75"
