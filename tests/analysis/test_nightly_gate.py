"""The history gate on synthetic nights: a value outside the recent nights and a change point
tonight fail it, the noise between nights does not, a slow drift is caught once it adds up, a
new clock regime is said instead of judged, an accepted run restarts the history, and a cell
with too little history is left to the last-run comparison."""

from __future__ import annotations

import numpy as np

from edgebench.analysis.night_summary import CellSummary
from edgebench.analysis.nightly import RunInfo
from edgebench.analysis.nightly_gate import (
    MIN_NIGHTS,
    REGIME_CHANGED,
    GateSettings,
    gate_cells,
    recent_rows,
)
from edgebench.results.clock_regime import ClockRegime, CoreLimits

PERFORMANCE = ClockRegime(governors="performance")
SCHEDUTIL = ClockRegime(governors="schedutil")

CELL = "phone/mobilenetv2/ncnn/fp32/t4/call/s1"
SETTINGS = GateSettings(metric="p50", min_effect=0.03, history_nights=30)


def row(run: int, p50: float | None, regime: ClockRegime = PERFORMANCE, **facts: str):
    info = RunInfo(f"run{run:03d}", f"2026-11-{1 + run // 24:02d}T{run % 24:02d}:00", "nightly")
    values = {} if p50 is None else {"p50": p50, "p99": p50 * 1.2}
    summary = CellSummary(
        run_id=info.run_id,
        cell_id=CELL,
        device="phone",
        model="mobilenetv2",
        engine="ncnn",
        variant=("fp32",),
        status="ok" if p50 is not None else "failed",
        correctness_only="",
        values=values,
        spread=0.004,
        regime=regime,
        facts={"framework_version": "1.0", **facts},
    )
    return info, summary


def good(info: RunInfo, accepted: bool = False) -> RunInfo:
    return RunInfo(info.run_id, info.created_at, info.plan, good=True, accepted=accepted)


def noisy_nights(count: int, seed: int, level: float = 10.0, cv: float = 0.02) -> list[float]:
    return list(level * (1 + np.random.default_rng(seed).normal(0, cv, count)))


def judge(past: list[tuple[RunInfo, CellSummary]], tonight: tuple[RunInfo, CellSummary]):
    history = recent_rows([(good(i), r) for i, r in past], "nightly", tonight[0].run_id, 30)
    verdicts, short = gate_cells([tonight], history, SETTINGS)
    return (verdicts[0] if verdicts else None), short


def test_noise_between_nights_passes_and_a_step_tonight_fails():
    quiet = passed = 0
    for seed in range(20):
        values = noisy_nights(21, seed)
        past = [row(n, v) for n, v in enumerate(values[:20])]
        verdict, _ = judge(past, row(20, values[20]))
        quiet += 1
        passed += verdict.verdict in ("unchanged", "improved")
    assert passed >= quiet - 1  # at most one false alarm in 20 quiet nights
    values = noisy_nights(21, 99)
    past = [row(n, v) for n, v in enumerate(values[:20])]
    verdict, _ = judge(past, row(20, 13.0, framework_version="1.1"))
    assert verdict.verdict == "regressed"
    assert verdict.reason.startswith("outside the recent nights: 13 vs median")
    assert verdict.ratio > 1.2 and verdict.base_value is not None


def test_a_drift_no_two_nights_show_fails_once_it_adds_up():
    """+0.8% a night in 2% noise: judged night after night, the gate says nothing for a while,
    then fails, with a change point or the value out of the recent nights' spread."""
    values = noisy_nights(60, 7)
    drifted = [v * (1 + 0.008 * max(0, n - 30)) for n, v in enumerate(values)]
    first_failure = None
    for night in range(31, 60):
        past = [row(n, v) for n, v in enumerate(drifted[:night])]
        verdict, _ = judge(past, row(night, drifted[night]))
        if verdict.verdict == "regressed":
            first_failure = night
            break
    assert first_failure is not None, "a 23% drift over 29 nights was never caught"
    assert first_failure >= 33  # not on the first nights of a 0.8% drift


def test_a_step_becomes_a_change_point_with_what_changed():
    values = noisy_nights(30, 11, cv=0.005)
    stepped = [v * (1.06 if n >= 25 else 1.0) for n, v in enumerate(values)]
    rows = [row(n, v, framework_version="1.1" if n >= 25 else "1.0") for n, v in enumerate(stepped)]
    verdict, _ = judge(rows[:29], rows[29])
    # 6% in 0.5% noise is outside the band too, but the change point is the finding named
    assert verdict.verdict == "regressed"
    assert verdict.reason.startswith("change point: worse since")
    assert "framework_version 1.0 -> 1.1" in verdict.reason
    assert verdict.ci_low is not None and verdict.ci_low > 1.0


def test_a_new_clock_regime_is_not_comparable_and_says_what_changed():
    past = [row(n, v) for n, v in enumerate(noisy_nights(10, 3))]
    verdict, _ = judge(past, row(10, 7.0, regime=SCHEDUTIL))
    assert verdict.verdict == "not_comparable"
    assert verdict.reason == f"{REGIME_CHANGED}: governor performance -> schedutil"
    # Once the new regime has its own nights, they are the history.
    new = [row(10 + n, v, regime=SCHEDUTIL) for n, v in enumerate(noisy_nights(6, 4, level=7.0))]
    verdict, _ = judge(past + new, row(16, 7.05, regime=SCHEDUTIL))
    assert verdict.verdict == "unchanged" and "of 6 nights" in verdict.reason
    # A regime with parts the older nights did not record is the same regime, not a new one.
    richer = ClockRegime(
        governors="performance",
        fixed_performance=False,
        limits=(CoreLimits((0, 1, 2, 3), 300000, 1800000),),
    )
    verdict, _ = judge(past, row(10, 10.0, regime=richer))
    assert verdict.verdict == "unchanged" and "of 10 nights" in verdict.reason


def test_too_little_history_is_left_to_the_last_run_and_an_accepted_run_restarts_it():
    past = [row(n, v) for n, v in enumerate(noisy_nights(MIN_NIGHTS - 1, 5))]
    verdict, short = judge(past, row(9, 30.0))
    assert verdict is None and short == [CELL]
    long_past = [
        (good(i, accepted=(n == 8)), r)
        for n, (i, r) in enumerate(row(n, v) for n, v in enumerate(noisy_nights(12, 6)))
    ]
    history = recent_rows(long_past, "nightly", "tonight", 30)
    assert [i.run_id for i, _ in history[CELL]] == [f"run{n:03d}" for n in range(8, 12)]


def test_only_good_runs_of_the_plan_before_tonight_and_the_newest_nights():
    rows = [row(n, 10.0) for n in range(40)]
    mixed = [
        (RunInfo(i.run_id, i.created_at, "other" if n == 3 else "nightly", good=n != 5), r)
        for n, (i, r) in enumerate(rows)
    ]
    history = recent_rows(mixed, "nightly", "run039", 30)[CELL]
    kept = [int(i.run_id[3:]) for i, _ in history]
    assert kept == list(range(8, 39))[-30:] and 3 not in kept and 5 not in kept


def test_a_cell_failing_tonight_regresses_and_an_emulated_one_is_not_comparable():
    past = [row(n, v) for n, v in enumerate(noisy_nights(8, 8))]
    verdict, _ = judge(past, row(8, None))
    assert verdict.verdict == "regressed" and "tonight's cell is failed" in verdict.reason
    info, emulated = row(8, 10.0)
    emulated.correctness_only = "emulated CPU"
    verdict, _ = judge(past, (info, emulated))
    assert verdict.verdict == "not_comparable"
