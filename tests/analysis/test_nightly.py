"""Each cell's nights: the best cell of a series per run, one trend per variant, a step found
with the night it began and what changed that night (a clock regime included), and nights on
an emulated CPU kept on the chart but out of the detection."""

from __future__ import annotations

import numpy as np

from edgebench.analysis.night_summary import CellSummary
from edgebench.analysis.nightly import CLOCK_REGIME, RunInfo, cell_histories, nights_by_cell
from edgebench.results.clock_regime import ClockRegime

PERFORMANCE = ClockRegime(governors="performance")
SCHEDUTIL = ClockRegime(governors="schedutil")


def summary(run: int, p50: float, *, threads: int = 4, variant=("fp32",), **kw) -> CellSummary:
    facts = {"framework_version": kw.pop("version", "1.0"), "threads": str(threads)}
    return CellSummary(
        run_id=f"r{run:03d}",
        cell_id=f"phone/m/ncnn/{'-'.join(variant)}/t{threads}",
        device="phone",
        model="m",
        engine="ncnn",
        variant=variant,
        status=kw.pop("status", "ok"),
        correctness_only=kw.pop("correctness_only", ""),
        values={"p50": p50, "p99": p50 * 1.3, "throughput": 1000 / p50},
        spread=0.003,
        regime=kw.pop("regime", PERFORMANCE),
        facts=facts,
    )


def info(run: int) -> RunInfo:
    return RunInfo(f"r{run:03d}", f"2026-10-{1 + run // 24:02d}T{run % 24:02d}", "nightly", True)


def test_the_best_thread_count_is_the_night_and_each_precision_its_own_trend():
    rows = [
        (info(0), summary(0, 12.0, threads=1)),
        (info(0), summary(0, 9.0, threads=4)),
        (info(0), summary(0, 5.0, variant=("int8",))),
        (info(1), summary(1, 9.5, threads=4)),
        (info(1), summary(1, 20.0, threads=1, status="failed")),
    ]
    nights = nights_by_cell(rows)
    by_series = {key.series: [n.value for n in found] for key, found in nights.items()}
    assert by_series == {"fp32": [9.0, 9.5], "int8": [5.0]}
    throughput = nights_by_cell(rows, "throughput")
    (fp32,) = [n for k, n in throughput.items() if k.series == "fp32"]
    assert fp32[0].value == 1000 / 9.0  # the highest throughput is the best


def test_a_step_names_its_night_and_what_changed():
    values = 10 * (1 + np.random.default_rng(2).normal(0, 0.005, 40))
    rows = []
    for run, value in enumerate(values):
        late = run >= 25
        rows.append(
            (
                info(run),
                summary(
                    run,
                    float(value) * (1.08 if late else 1.0),
                    version="1.1" if late else "1.0",
                    regime=SCHEDUTIL if late else PERFORMANCE,
                ),
            )
        )
    emulated_night = summary(40, 3.0, correctness_only="emulated CPU")  # not a step
    rows.append((info(40), emulated_night))
    (history,) = cell_histories(None, rows=rows)  # type: ignore[arg-type]
    assert history.key.label() == "phone/m/ncnn"
    assert len(history.nights) == 41 and history.nights[-1].correctness_only == "emulated CPU"
    (step,) = history.steps
    assert step.night.run_id == "r025" and step.previous.run_id == "r024"
    assert step.regression and 0.06 < step.change_point.change < 0.10
    assert step.changed["framework_version"] == ("1.0", "1.1")
    assert step.changed[CLOCK_REGIME] == ("governor=performance", "governor=schedutil")
    text = step.describe()
    assert text.startswith("worse since 2026-10-02 (run r025): ")
    assert "framework_version 1.0 -> 1.1" in text


def test_what_changed_is_looked_for_on_the_nights_next_to_the_step():
    """The version changed on night 25 but the noise put the detected step a night off: the
    change is still named, with where it happened relative to the step."""
    values = 10 * (1 + np.random.default_rng(4).normal(0, 0.005, 40))
    rows = [
        (info(run), summary(run, float(v) * (1.08 if run >= 25 else 1.0), version="1.0"))
        for run, v in enumerate(values)
    ]
    (history,) = cell_histories(None, rows=rows)  # type: ignore[arg-type]
    (step,) = history.steps
    index = int(step.night.run_id[1:])
    shifted = []
    for run, (night_info, row) in enumerate(rows):
        row.facts["framework_version"] = "1.1" if run >= index + 1 else "1.0"
        shifted.append((night_info, row))
    (history,) = cell_histories(None, rows=shifted)  # type: ignore[arg-type]
    (step,) = history.steps
    assert step.changed["framework_version"] == ("1.0", "1.1")
    assert step.changed_offset == {"framework_version": 1}
    assert "framework_version 1.0 -> 1.1 (1 night after)" in step.describe()
    for run, (_, row) in enumerate(shifted):
        row.facts["framework_version"] = "1.1" if run >= index + 3 else "1.0"
    (history,) = cell_histories(None, rows=shifted)  # type: ignore[arg-type]
    assert "framework_version" not in history.steps[0].changed  # three nights off: not it
