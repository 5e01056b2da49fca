#!/usr/bin/env python3
"""How often does a plan's nightly gate cry wolf, and how soon does it catch a regression?

Synthetic nights of one cell: each night's level is 10 ms times (1 + between-night noise, cv
2%, what a phone's thermal state and background services do), and each night's run has 200
raw samples around that level (within-run cv 1%). Every night from night 20 on is judged by
both gates with the plan defaults (min_effect 5%, alpha 0.01, 30 history nights):
  last-run  Mann-Whitney U on the raw samples against the previous good night (the old gate)
  history   the history gate (analysis/nightly_gate.py): recent good nights, change points
A night that fails is not good, so it does not become the next night's history or baseline.
Histories:
  quiet          no change: false alarms per 100 nights
  spiky          one night in ten 15% slower (a hot night): false alarms per 100 nights
  step 3/5/10%   a step at night 40: caught (a failure within 10 nights), median nights to
                 catch it, false alarms before it
  drift          +0.3% a night from night 40: caught by night 80, median nights to catch it
Each row is over --histories seeded histories. It reports; it does not judge (exit status 0).

Usage: python benchmarks/nightly_gate.py [--histories 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from edgebench.analysis.compare import any_regression, compare_runs
from edgebench.analysis.night_summary import CellSummary, median_spread
from edgebench.analysis.nightly import RunInfo
from edgebench.analysis.nightly_gate import GateSettings, gate_cells, recent_rows
from edgebench.results.records import Record

NIGHTS = 90
JUDGED_FROM = 20
STEP_AT = 40
SAMPLES = 200
CELL = "phone/m/ncnn/fp32/t4/call/s1"


def levels(kind: str, rng: np.random.Generator) -> np.ndarray:
    level = np.ones(NIGHTS)
    if kind == "spiky":
        level[rng.random(NIGHTS) < 0.1] = 1.15
    elif kind.startswith("step"):
        level[STEP_AT:] = 1.0 + int(kind.split()[1].rstrip("%")) / 100
    elif kind == "drift":
        level[STEP_AT:] = 1.0 + 0.003 * np.arange(1, NIGHTS - STEP_AT + 1)
    return 10.0 * level * (1.0 + rng.normal(0.0, 0.02, NIGHTS))


def night_record(night: int, level: float, rng: np.random.Generator) -> Record:
    samples = (level * 1e6 * (1.0 + rng.normal(0.0, 0.01, SAMPLES))).astype(np.int64)
    return Record(
        run_id=f"n{night:03d}",
        cell_id=CELL,
        device="phone",
        model="m",
        framework="ncnn",
        precision="fp32",
        threads=4,
        cores="all",
        status="ok",
        samples_ns=samples.tolist(),
        latency_ms={"p50": float(np.median(samples)) / 1e6},
    )


def summary(record: Record) -> CellSummary:
    assert record.latency_ms is not None
    p50 = record.latency_ms["p50"]
    return CellSummary(
        record.run_id, CELL, "phone", "m", "ncnn", ("fp32",), "ok", "",
        values={"p50": p50, "p99": p50}, spread=median_spread(record.samples_ns),
    )  # fmt: skip


def judge_history(kind: str, seed: int) -> tuple[list[int], list[int]]:
    """The nights each gate failed, (last-run, history)."""
    rng = np.random.default_rng(seed)
    records = [night_record(n, v, rng) for n, v in enumerate(levels(kind, rng))]
    settings = GateSettings()
    good_rows: list[tuple[RunInfo, CellSummary]] = []
    last_good = records[JUDGED_FROM - 1]
    for n in range(JUDGED_FROM):
        info = RunInfo(records[n].run_id, f"{n:03d}", "nightly", good=True)
        good_rows.append((info, summary(records[n])))
    last_run_fails, history_fails = [], []
    history_rows = list(good_rows)
    for night in range(JUDGED_FROM, NIGHTS):
        record = records[night]
        if any_regression(compare_runs([last_good], [record], min_effect=0.05, alpha=0.01)):
            last_run_fails.append(night)
        else:
            last_good = record
        tonight = (RunInfo(record.run_id, f"{night:03d}", "nightly"), summary(record))
        history = recent_rows(history_rows, "nightly", record.run_id, settings.history_nights)
        verdicts, _ = gate_cells([tonight], history, settings)
        if any_regression(verdicts):
            history_fails.append(night)
        else:
            history_rows.append(
                (RunInfo(record.run_id, f"{night:03d}", "nightly", True), tonight[1])
            )
    return last_run_fails, history_fails


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=30)
    args = parser.parse_args()
    judged = NIGHTS - JUDGED_FROM
    print(
        f"{args.histories} histories; nights {JUDGED_FROM}-{NIGHTS - 1} judged; between-night cv"
        f" 2%, within-run cv 1%, {SAMPLES} samples a night"
    )
    print(
        f"{'history':10s} {'gate':9s} {'false alarms/100 nights':>24s} {'caught':>7s} "
        f"{'nights to catch':>16s}"
    )
    for kind in ("quiet", "spiky", "step 3%", "step 5%", "step 10%", "drift"):
        results = [judge_history(kind, seed) for seed in range(args.histories)]
        for gate, index in (("last-run", 0), ("history", 1)):
            fails = [r[index] for r in results]
            changed = kind.startswith(("step", "drift"))
            before = [[n for n in f if n < STEP_AT] for f in fails] if changed else fails
            quiet_nights = (STEP_AT - JUDGED_FROM) if changed else judged
            alarms = 100 * sum(len(b) for b in before) / (quiet_nights * args.histories)
            caught, delays = 0, []
            if changed:
                window = 40 if kind == "drift" else 10
                for f in fails:
                    after = [n for n in f if STEP_AT <= n < STEP_AT + window]
                    if after:
                        caught += 1
                        delays.append(after[0] - STEP_AT + 1)
            share = f"{caught / args.histories:.0%}" if changed else "-"
            delay = f"{statistics.median(delays):.0f}" if delays else "-"
            print(f"{kind:10s} {gate:9s} {alarms:>24.1f} {share:>7s} {delay:>16s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
