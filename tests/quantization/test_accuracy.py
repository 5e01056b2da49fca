"""The accuracy figures of a quantized cell, on outputs whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgebench.agreement import SQNR_EXACT_DB, sqnr_db
from edgebench.quantization.accuracy import AccuracyRule, apply_rule, measure_accuracy


def test_figures_on_a_constructed_case():
    # 4 samples of 5 logits: samples 0 and 1 keep their top class, 2 and 3 lose it.
    ref = np.array(
        [
            [[5.0, 1.0, 0.0, 0.0, 0.0]],
            [[0.0, 4.0, 1.0, 0.0, 0.0]],
            [[0.0, 0.0, 3.0, 2.0, 0.0]],
            [[1.0, 0.0, 0.0, 0.0, 2.0]],
        ]
    )
    noise = np.zeros_like(ref)
    noise[2, 0, 3] = 2.0  # class 3 overtakes class 2
    noise[3, 0, 0] = 2.0  # class 0 overtakes class 4
    out = ref + noise
    acc = measure_accuracy(["y"], [out], ["y"], [ref])
    assert acc.n == 4
    assert acc.top1_agreement == pytest.approx(0.5)
    expected_sqnr = 10 * math.log10(np.sum(ref**2) / np.sum(noise**2))
    assert acc.sqnr_db == pytest.approx(expected_sqnr, abs=1e-3)
    rel = [np.linalg.norm(n) / np.linalg.norm(r) for n, r in zip(noise, ref, strict=True)]
    assert acc.rel_l2_mean == pytest.approx(np.mean(rel))
    cos = [
        float(np.dot(o.ravel(), r.ravel()) / (np.linalg.norm(o) * np.linalg.norm(r)))
        for o, r in zip(out, ref, strict=True)
    ]
    assert acc.cosine_min == pytest.approx(min(cos))
    assert acc.worst_output == "y"


def test_the_worst_output_decides_the_sqnr_and_names_itself():
    rng = np.random.default_rng(0)
    big = rng.standard_normal((3, 1, 100)) * 100
    small = rng.standard_normal((3, 1, 4, 4, 4))
    acc = measure_accuracy(
        ["big", "small"], [big + 1.0, small + 0.5], ["big", "small"], [big, small]
    )
    # Each output is judged on its own: the small one's noise is far worse relative to it.
    assert acc.worst_output == "small"
    assert acc.sqnr_db == pytest.approx(sqnr_db(small + 0.5, small), abs=1e-3)
    # A 4x4x4 map is not a score vector: only the 100-class output gives top-1 figures.
    assert acc.top1_agreement == 1.0


def test_outputs_are_matched_by_name_before_position():
    ref = np.arange(12, dtype=float).reshape(2, 1, 6)
    acc = measure_accuracy(["b", "a"], [ref * 0, ref], ["a"], [ref])
    assert acc.sqnr_db == SQNR_EXACT_DB


def test_a_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        measure_accuracy(["y"], [np.zeros((2, 3))], ["y"], [np.zeros((2, 4))])


def test_the_rule_names_each_figure_below_its_floor():
    ref = np.tile(np.eye(4)[None], (4, 1, 1)).reshape(4, 4, 4) * 3
    out = ref.copy()
    out[0, 0, 1] = 10.0
    acc = apply_rule(
        measure_accuracy(["y"], [out], ["y"], [ref]), AccuracyRule(min_top1=0.99, min_sqnr_db=30)
    )
    assert not acc.passed
    assert "top-1 agreement 93.8% on the 16 rows fp32 decides clearly" in acc.problem
    assert "below the floor 99%" in acc.problem
    assert "SQNR of output y" in acc.problem and "below the floor 30 dB" in acc.problem
    fine = apply_rule(measure_accuracy(["y"], [ref + 1e-3], ["y"], [ref]), AccuracyRule(0.99, 30.0))
    assert fine.passed and fine.problem is None


def test_non_finite_outputs_are_the_worst_sqnr():
    ref = np.ones((2, 1, 3))
    out = ref.copy()
    out[1, 0, 2] = np.nan
    assert sqnr_db(out, ref) == -SQNR_EXACT_DB


def test_flips_between_classes_fp32_barely_separates_do_not_count_against_the_floor():
    # Row 0: fp32 leads by 1.0 (decisive); row 1: by 0.01 of a spread of ~1 (a near tie).
    ref = np.array([[[3.0, 2.0, 0.0, 0.0]], [[1.01, 1.0, -1.0, -1.0]]])
    out = ref.copy()
    out[1, 0, 1] += 0.05  # the near tie flips, as rounding flips it
    acc = measure_accuracy(["y"], [out], ["y"], [ref])
    assert acc.top1_agreement == 0.5  # what happened, reported as it is
    assert (acc.top1_decisive, acc.decisive_rows) == (1.0, 1)
    assert apply_rule(acc, AccuracyRule(min_top1=0.9, min_sqnr_db=10)).passed
    out[0, 0, 1] += 2.0  # now the decisive row flips too
    broken = apply_rule(
        measure_accuracy(["y"], [out], ["y"], [ref]), AccuracyRule(min_top1=0.9, min_sqnr_db=0)
    )
    assert not broken.passed and "on the 1 rows fp32 decides clearly" in broken.problem
