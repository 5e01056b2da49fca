"""--target-ci: sampling goes on until the median is known precisely enough, or time runs out."""

import json

import pytest

from edgebench.runners.timing import median_ci_halfwidth

pytestmark = pytest.mark.load_sensitive


def test_ci_halfwidth_of_order_statistics():
    assert median_ci_halfwidth([1000] * 50) == 0.0
    spread = list(range(900, 1100))  # uniform around 1000
    width = median_ci_halfwidth(spread)
    assert 0.005 < width < 0.02


def run_with(run_cli, conv_model, *extra):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            "--iterations",
            "10",
            "--min-time",
            "0",
            "--warmup",
            "2",
            "--format",
            "jsonl",
            *extra,
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    return record


@pytest.mark.alone
def test_loose_target_stops_when_reached_and_records_why(run_cli, conv_model):
    record = run_with(run_cli, conv_model, "--target-ci", "10", "--max-time", "30")
    assert record["stop_reason"] == "ci_reached"
    assert record["median_ci"] <= 0.10
    assert record["measure_wall_s"] < 30


def test_unreachable_target_stops_at_the_time_cap():
    from edgebench.runners.timing import measure_sequential

    state = {"n": 0}

    def bimodal() -> None:
        # Half the calls are ~50x longer: the median's CI stays wide for ever.
        state["n"] += 1
        sum(range(20 if state["n"] % 2 else 1000))

    timing = measure_sequential(bimodal, 10, 0, 10**9, 300_000_000, target_ci=0.0001)
    assert timing["stop_reason"] == "max_time"
    assert timing["measure_wall_ns"] >= 300_000_000
    assert timing["median_ci"] > 0.0001
