"""The fp16 rule: rounding spread over every element passes, a model that computes something
else fails, and a single element far off still fails."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.measure.output_check import check_outputs, compare_arrays, tolerance_for
from edgebench.planning.config import TOLERANCES

FP16 = TOLERANCES["fp16"]
FP32 = TOLERANCES["fp32"]


def _fp16_like(ref: np.ndarray, rel: float, outliers: int, seed: int = 0) -> np.ndarray:
    """``ref`` with rounding-like noise of relative L2 ``rel`` and a few elements off by 6% of
    the peak: the shape of ncnn's fp16 error on ARM (2.1-2.6e-2, worst element ~6% of peak)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=ref.shape)
    out = ref + noise * (rel * np.linalg.norm(ref) / np.linalg.norm(noise))
    flat = out.reshape(-1)
    peak = float(np.abs(ref).max())
    for index in rng.choice(flat.size, outliers, replace=False):
        flat[index] += 0.06 * peak
    return out


def test_fp16_rounding_spread_over_the_output_passes_fp16_and_fails_fp32() -> None:
    ref = np.random.default_rng(1).normal(size=(1, 6300, 4)).astype(np.float32)
    out = _fp16_like(ref, rel=2.6e-2, outliers=3)
    fp16 = compare_arrays("y", "y", out, ref, FP16)
    assert fp16.passed, (fp16.criterion, fp16.ratio)
    assert fp16.rel_error == pytest.approx(2.6e-2, rel=0.05)
    assert not compare_arrays("y", "y", out, ref, FP32).passed


def test_a_model_that_computes_something_else_fails_fp16_on_the_norm() -> None:
    ref = np.random.default_rng(2).normal(size=(1, 6300, 4))
    out = _fp16_like(ref, rel=1.2e-1, outliers=0)
    check = check_outputs(["y"], [out], ["y"], [ref], FP16, "ort")
    assert not check.passed
    assert check.criterion == "rel_l2" and check.ratio == pytest.approx(2.0, rel=0.05)
    assert "relative L2 error 1.20e-01" in check.summary() and "outside" in check.summary()
    assert check.max_rel_l2 == FP16.rel_l2


def test_one_element_far_off_fails_fp16_though_the_norm_is_small() -> None:
    ref = np.random.default_rng(3).normal(size=(1, 6300, 4))
    out = ref.copy()
    out[0, 10, 2] += 0.3 * np.abs(ref).max()
    cmp = compare_arrays("y", "y", out, ref, FP16)
    assert cmp.rel_error < FP16.rel_l2 / 5
    assert not cmp.passed and cmp.criterion == "allclose"


def test_classifier_scores_need_the_cosine_the_norm_allows() -> None:
    ref = np.random.default_rng(4).normal(size=(1, 1000)) * 3
    assert compare_arrays("s", "s", _fp16_like(ref, 2.6e-2, 0), ref, FP16).passed
    broken = compare_arrays("s", "s", _fp16_like(ref, 1.5e-1, 0), ref, FP16)
    assert not broken.passed and broken.criterion in ("cosine", "rel_l2")
    assert (1 - broken.score_cosine) > FP16.cosine_gap


def test_tolerance_fp16_scales_the_norm_limit_with_rtol() -> None:
    tighter = tolerance_for("fp16", FP16.rtol / 2)
    assert tighter.rel_l2 == pytest.approx(FP16.rel_l2 / 2)
    assert tighter.cosine_gap == pytest.approx(FP16.cosine_gap / 4)
    assert tolerance_for("fp32").rel_l2 is None


def test_a_blank_reference_is_not_judged_by_its_norm() -> None:
    ref = np.zeros((1, 64))
    out = ref + 5e-5  # under the absolute floor: nothing to see
    cmp = compare_arrays("y", "y", out, ref, FP16)
    assert cmp.passed and cmp.criterion == "allclose" and cmp.degenerate
