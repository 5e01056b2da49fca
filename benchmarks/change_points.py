#!/usr/bin/env python3
"""How well does edgebench's change-point detection (edgebench/analysis/change_points.py) find
level shifts in nightly histories, and how often does it cry wolf?

Synthetic histories of 100 nights, each night's median a base of 10 ms times (1 + noise):
  quiet         gaussian noise, cv 2% (a phone between nights): false alarms per 100 nights
  spiky         the same with one night in ten 15% slower (a hot night): false alarms
  step 3/5/10%  a step up at night 60: detection (a change point within 3 nights of 60), the
                median error of its night, and how often its 95% interval holds the true step
  drift         +0.2% a night from night 50 (10% over 50 nights): detected anywhere after 45
  noisy block   nights 30-37 8% slower but measured with ten times the usual within-run
                spread (a busy device): false alarms, unweighted and weighted by the spread
Each row is over --histories seeded histories. It reports; it does not judge (exit status 0).

Usage: python benchmarks/change_points.py [--histories 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from edgebench.analysis.change_points import change_points, night_weights

NIGHTS = 100
STEP_AT = 60


def history(kind: str, rng: np.random.Generator) -> np.ndarray:
    noise = rng.normal(0.0, 0.02, NIGHTS)
    level = np.ones(NIGHTS)
    if kind == "spiky":
        level[rng.random(NIGHTS) < 0.1] = 1.15
    elif kind.startswith("step"):
        level[STEP_AT:] = 1.0 + int(kind.split()[1].rstrip("%")) / 100
    elif kind == "drift":
        level[50:] = 1.0 + 0.002 * np.arange(1, NIGHTS - 49)
    elif kind == "noisy block":
        level[30:38] = 1.08
    return 10.0 * level * (1.0 + noise)


def weights(kind: str) -> np.ndarray | None:
    """The nights' weights from their within-run spreads: the noisy block's is 10x."""
    if not kind.endswith("weighted") or kind.endswith("unweighted"):
        return None
    spreads = [0.08 if 30 <= night < 38 else 0.008 for night in range(NIGHTS)]
    return night_weights(spreads)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=200)
    args = parser.parse_args()
    print(f"{args.histories} histories of {NIGHTS} nights each, noise cv 2%")
    print(
        f"{'history':22s} {'found':>6s} {'per 100 nights':>15s} {'detected':>9s} "
        f"{'night error':>12s} {'CI holds':>9s} {'s/history':>10s}"
    )
    kinds = ("quiet", "spiky", "step 3%", "step 5%", "step 10%", "drift")
    for kind in (*kinds, "noisy block unweighted", "noisy block weighted"):
        found, detected, errors, holds = 0, 0, [], 0
        start = time.perf_counter()
        for seed in range(args.histories):
            values = history(kind.replace(" unweighted", "").replace(" weighted", ""), rng(seed))
            weighting = weights(kind)
            points = change_points(
                values.tolist(),
                weights=None if weighting is None else weighting.tolist(),
                seed=seed,
            )
            found += len(points)
            if kind.startswith("step"):
                near = [p for p in points if abs(p.index - STEP_AT) <= 3]
                if near:
                    detected += 1
                    errors.append(abs(near[0].index - STEP_AT))
                    step = int(kind.split()[1].rstrip("%")) / 100
                    holds += near[0].change_low <= step <= near[0].change_high
            elif kind == "drift":
                detected += any(p.index >= 45 for p in points)
        seconds = (time.perf_counter() - start) / args.histories
        rate = 100 * found / (args.histories * NIGHTS)
        quiet = kind in ("quiet", "spiky") or kind.startswith("noisy")
        detection = "-" if quiet else f"{detected / args.histories:.0%}"
        error = f"{statistics.median(errors):.0f}" if errors else "-"
        ci = f"{holds / len(errors):.0%}" if errors else "-"
        print(
            f"{kind:22s} {found:>6d} {rate:>15.2f} {detection:>9s} {error:>12s} {ci:>9s} "
            f"{seconds:>10.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
