"""The numerics of agreement (edgebench/agreement.py) that the output check and the quantized
accuracy share: what must hold for any arrays, and how NaN and zero are treated."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from edgebench.agreement import (
    NOT_FINITE,
    SQNR_EXACT_DB,
    Tolerance,
    allclose_bound,
    cosine,
    decisive_rows,
    degenerate_reason,
    excess,
    is_score_vector,
    match_outputs,
    rel_l2,
    sqnr_db,
    top_k_hits,
    worst,
    worst_centred_cosine,
)

FP32 = Tolerance(rtol=1e-3, atol_floor=1e-6, cosine_gap=1e-6)
# Multiples of 1/1024 up to ~1000: exact in float64, no subnormals whose squares vanish.
VALUES = st.integers(-(10**6), 10**6).map(lambda i: i / 1024)
ARRAYS = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6), elements=VALUES
)
SCALES = st.floats(min_value=1e-3, max_value=1e3)


def _pair(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    ref = draw(ARRAYS)
    out = draw(hnp.arrays(np.float64, ref.shape, elements=VALUES))
    return out, ref


pairs = st.composite(_pair)


@settings(deadline=None)  # a slow example under load is not a failure
@given(ARRAYS)
def test_identical_arrays_agree_on_every_figure(x):
    bound, _, _ = allclose_bound(x, FP32)
    assert not excess(x, x, bound).any()
    assert cosine(x, x) == pytest.approx(1.0, abs=1e-12)
    assert rel_l2(x, x) == 0.0
    assert sqnr_db(x, x) == SQNR_EXACT_DB
    if is_score_vector(x.shape):
        assert top_k_hits(x, x, 1).all()
        centred = worst_centred_cosine(x, x)
        assert centred is None or centred == pytest.approx(1.0, abs=1e-12)


@settings(deadline=None)  # a slow example under load is not a failure
@given(ARRAYS, SCALES)
def test_cosine_ignores_scale_and_sees_a_flipped_sign(x, scale):
    if not x.any():
        assert cosine(scale * x, x) == 1.0  # two zero arrays are the same
        return
    assert cosine(scale * x, x) == pytest.approx(1.0, abs=1e-12)
    assert cosine(-scale * x, x) == pytest.approx(-1.0, abs=1e-12)


@settings(deadline=None)  # a slow example under load is not a failure
@given(pairs(), SCALES)
def test_scaling_both_leaves_rel_l2_and_sqnr_alone(pair, scale):
    out, ref = pair
    assert -1.0 <= cosine(out, ref) <= 1.0
    before, after = rel_l2(out, ref), rel_l2(scale * out, scale * ref)
    if before == NOT_FINITE:  # an all-zero reference stays all zero
        assert after == NOT_FINITE
    else:
        assert after == pytest.approx(before, rel=1e-9, abs=1e-12)
    assert sqnr_db(scale * out, scale * ref) == pytest.approx(sqnr_db(out, ref), abs=1e-6)


@settings(deadline=None)  # a slow example under load is not a failure
@given(pairs())
def test_an_error_within_the_bound_passes_and_twice_it_does_not(pair):
    _, ref = pair
    bound, rtol, atol = allclose_bound(ref, FP32)
    assert rtol == FP32.rtol and atol >= FP32.atol_floor
    signs = np.where(np.arange(ref.size).reshape(ref.shape) % 2, 1.0, -1.0)
    assert excess(ref + 0.99 * bound * signs, ref, bound).max() <= 1.0
    assert excess(ref + 2.0 * bound * signs, ref, bound).min() > 1.0


def test_integer_outputs_get_a_bound_of_half_a_unit():
    ref = np.array([3, 998, 12])
    bound, rtol, atol = allclose_bound(ref, FP32, integer=True)
    assert (rtol, atol) == (0.0, 0.5)
    assert excess(ref + np.array([0, 1, 0]), ref, bound).max() == 2.0


@settings(max_examples=50, deadline=None)
@given(pairs(), st.data())
def test_a_nan_in_the_output_is_the_worst_of_every_figure(pair, data):
    out, ref = pair
    at = data.draw(st.integers(0, out.size - 1))
    out.ravel()[at] = np.nan
    bound, _, _ = allclose_bound(ref, FP32)
    over = excess(out, ref, bound)
    assert over.ravel()[at] == NOT_FINITE and int(np.argmax(over)) == at
    assert cosine(out, ref) == -1.0
    assert math.isnan(rel_l2(out, ref))
    assert sqnr_db(out, ref) == -SQNR_EXACT_DB
    if is_score_vector(ref.shape):
        row = at // ref.shape[-1]
        assert not top_k_hits(out, ref, ref.shape[-1])[row]  # not even among all classes


def test_a_value_the_reference_also_holds_is_no_error_even_when_not_finite():
    ref = np.array([1.0, np.nan, np.inf, -np.inf])
    bound, _, _ = allclose_bound(ref, FP32)
    assert excess(ref.copy(), ref, bound).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert excess(np.array([1.0, 0.0, 1.0, np.inf]), ref, bound)[1:].tolist() == [NOT_FINITE] * 3
    assert degenerate_reason(ref, FP32) == "is not finite in 3 of 4 elements"


def test_zero_arrays():
    zero, one = np.zeros(4), np.ones(4)
    assert cosine(zero, zero) == 1.0 and cosine(one, zero) == 0.0 and cosine(zero, one) == 0.0
    assert rel_l2(zero, zero) == 0.0 and rel_l2(one, zero) == NOT_FINITE
    assert rel_l2(zero, one) == 1.0
    assert sqnr_db(one, zero) == -SQNR_EXACT_DB
    assert degenerate_reason(zero, FP32) == "is zero everywhere"


def test_score_vectors_are_a_batch_of_class_rows():
    assert is_score_vector((1, 1000)) and is_score_vector((1000,)) and is_score_vector((64, 2))
    assert not is_score_vector((65, 10))  # a detector's boxes, not a batch
    assert not is_score_vector((1, 1)) and not is_score_vector(()) and not is_score_vector((0, 5))


def test_top_k_counts_the_reference_class_among_the_k_highest_outputs():
    ref = np.array([[0.0, 5.0, 1.0, 2.0], [9.0, 0.0, 0.0, 1.0]])
    out = np.array([[0.0, 2.0, 1.0, 3.0], [1.0, 2.0, 3.0, 4.0]])
    assert top_k_hits(out, ref, 1).tolist() == [False, False]
    assert top_k_hits(out, ref, 2).tolist() == [True, False]
    assert top_k_hits(out, ref, 4).tolist() == [True, True]


def test_a_row_is_decisive_when_its_leader_clearly_leads():
    ref = np.array([[3.0, 2.0, 0.0, 0.0], [1.01, 1.0, -1.0, -1.0], [2.0, 2.0, 2.0, 2.0]])
    assert decisive_rows(ref, 0.1).tolist() == [True, False, False]


def test_outputs_match_by_name_else_by_position():
    a, b = np.zeros(2), np.ones(2)
    pairs_by_name, problem = match_outputs(["y", "x"], [a, b], ["x"], [b])
    assert problem is None and [(p.name, p.reference_name) for p in pairs_by_name] == [("x", "x")]
    assert pairs_by_name[0].output is b
    by_position, problem = match_outputs(["out0", "out1"], [a, b], ["x", "y"], [a, b])
    assert problem is None and [p.name for p in by_position] == ["out0", "out1"]
    short, problem = match_outputs(["out0"], [a], ["x", "y"], [a, b])
    assert len(short) == 1 and problem == "the framework returned 1 outputs, ONNX has 2"


def test_worst_is_the_first_of_the_worst_figures():
    scored = [("a", 1.0), ("b", 3.0), ("c", 3.0), ("d", 0.5)]
    assert worst(scored, high_is_bad=True) == "b"
    assert worst(scored, high_is_bad=False) == "d"
    with pytest.raises(ValueError, match="no outputs"):
        worst([], high_is_bad=True)
