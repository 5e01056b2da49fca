"""recommend on raw samples: a tie is reported as a tie, never decided by a hair."""

from __future__ import annotations

import re
from dataclasses import replace

from fakes.real_samples import noisy_tie_case
from fakes.records import sampled_record

from edgebench.analysis.recommend import recommend
from edgebench.analysis.statistics import latency_stats
from edgebench.reporting.text import format_recommendation
from edgebench.results.records import Record

DEVICES = ["phone", "board"]


def cell(device: str, framework: str, median_ms: float, cv: float, seed: int, n: int = 300):
    return sampled_record(device, framework, median_ms, seed, cv=cv, n=n)


def run(table: dict[str, dict[str, tuple[float, float]]]) -> list[Record]:
    """``{device: {framework: (median ms, cv)}}`` -> seeded records."""
    return [
        cell(device, fw, median, cv, seed=17 * i + j)
        for i, (device, row) in enumerate(table.items())
        for j, (fw, (median, cv)) in enumerate(row.items())
    ]


def test_frameworks_within_noise_everywhere_are_a_tie() -> None:
    records = run(
        {
            "phone": {"onnxruntime": (114, 0.2), "openvino": (115, 0.1), "mnn": (160, 0.02)},
            "board": {"onnxruntime": (51, 0.2), "openvino": (50, 0.2), "mnn": (70, 0.02)},
        }
    )
    rec = recommend(records, DEVICES, "net")
    assert rec.best is None
    assert sorted(rec.tied) == ["onnxruntime", "openvino"]
    positions = {s.framework: s.position for s in rec.table}
    assert positions == {"onnxruntime": 1, "openvino": 1, "mnn": 3}
    # They share the first rank on each device; mnn is clearly third.
    for s in rec.table[:2]:
        assert [r.rank for r in s.per_device.values()] == [1, 1]
    text = format_recommendation(rec)
    assert "recommendation: none, a tie between" in text
    assert "onnxruntime ≈" in text and "openvino ≈" in text and " *" not in text
    assert "to separate them:" in text
    assert re.search(r"mnn: worst p50 1[56]\d\.?\d* ms on phone, behind onnxruntime's", text)


def test_a_noisy_but_large_gap_says_more_samples_would_separate() -> None:
    records = run(
        {
            "phone": {"a": (100, 0.5), "b": (112, 0.5)},
            "board": {"a": (40, 0.5), "b": (45, 0.5)},
        }
    )
    # A short, noisy run: 30 samples per cell.
    records = [
        replace(
            r, samples_ns=r.samples_ns[:30], latency_ms=latency_stats(r.samples_ns[:30]).as_record()
        )
        for r in records
    ]
    rec = recommend(records, DEVICES, "net")
    assert rec.best is None and sorted(rec.tied) == ["a", "b"]
    hint = next(line for line in rec.reasoning if line.startswith("to separate them"))
    assert "--target-ci" in hint and "more samples" in hint


def test_tied_worst_cases_are_decided_by_the_per_device_ranks() -> None:
    """Worst cases within noise; on the other device one framework is clearly faster."""
    records = run(
        {
            "phone": {"a": (100, 0.2), "b": (101, 0.2)},
            "board": {"a": (30, 0.02), "b": (40, 0.02)},
        }
    )
    rec = recommend(records, DEVICES, "net")
    assert rec.best == "a" and rec.tied == []
    a, b = rec.table
    assert a.per_device["phone"].rank == b.per_device["phone"].rank == 1
    assert (a.per_device["board"].rank, b.per_device["board"].rank) == (1, 2)
    assert any("its worst case ties with b's" in line for line in rec.reasoning)
    assert "recommendation: a" in format_recommendation(rec)


def test_a_clear_winner_is_still_recommended() -> None:
    records = run(
        {
            "phone": {"a": (100, 0.02), "b": (120, 0.02)},
            "board": {"a": (40, 0.02), "b": (41, 0.02)},
        }
    )
    rec = recommend(records, DEVICES, "net")
    assert rec.best == "a" and rec.tied == []
    assert re.match(
        r"worst p50 1[12]\d\.?\d* ms on phone, behind a's worst case: \+2", rec.table[1].reason
    )


def test_a_faster_cell_is_never_behind_a_slower_noisier_one_that_ties() -> None:
    """Real timings: c is clearly behind a, but b, slower and noisy, cannot be told from a."""
    cells = noisy_tie_case("phone")
    rec = recommend(list(cells.values()), ["phone"], "net")
    assert rec.best is None and rec.tied == ["a", "c", "b"]
    reasons = {s.framework: s.reason for s in rec.table}
    assert "tied with a's worst case: +6" in reasons["c"]
    assert reasons["c"].endswith("tied through b's, slower and not clearly behind")
    assert "tied with a's worst case: +10" in reasons["b"] and "behind" not in reasons["b"]
    hint = next(line for line in rec.reasoning if line.startswith("to separate them"))
    assert "more samples" in hint
