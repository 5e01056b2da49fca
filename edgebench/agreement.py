"""How close a framework's outputs are to a reference's: the numerics that the output check
(``measure/output_check.py``) and the quantized cells' accuracy (``quantization/accuracy.py``)
share.

Pure NumPy on float64 copies: nothing here knows cells, records or files. Figures stay
JSON-friendly (``NOT_FINITE`` and ``SQNR_EXACT_DB`` stand in for infinities); a NaN in the
output is never better than any finite error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np

#: The figure of an error that is NaN or infinite (JSON has no infinity).
NOT_FINITE = 1e300
#: The SQNR of an output equal to its reference; its negative for a non-finite error.
SQNR_EXACT_DB = 200.0
#: A score vector (classifier logits or probabilities): the last axis has at least this many
#: entries, and there are at most ``SCORE_MAX_ROWS`` rows of them (a batch).
SCORE_MIN_CLASSES = 2
SCORE_MAX_ROWS = 64

Item = TypeVar("Item")


class Pair(NamedTuple):
    """An output and the reference output it is compared with."""

    name: str
    output: np.ndarray
    reference_name: str
    reference: np.ndarray


@dataclass(frozen=True)
class Tolerance:
    """How far a framework's outputs may be from ONNX Runtime's at one precision.

    Each element must satisfy ``|out - ref| <= atol + rtol * |ref|`` with
    ``atol = max(rtol * max|ref|, atol_floor)``: an error is allowed in proportion to the
    element and to the output's peak, so a sparse map (mostly ~0) is judged against its own
    scale. A score vector (classifier logits) must also keep ``1 - cosine <= cosine_gap``;
    with ``rel_l2``, every output must also keep ``||out - ref|| / ||ref|| <= rel_l2`` (fp16:
    reduced-precision rounding spreads over every element, a few far more than the rest, so
    the norm bounds it better than any one element does);
    the gap scales with ``(rtol / default rtol)**2`` when ``--tolerance`` changes rtol.
    docs/converters.md gives the measurements these figures come from.
    """

    rtol: float
    atol_floor: float
    cosine_gap: float
    rel_l2: float | None = None


# --- the allclose rule ------------------------------------------------------------------------


def allclose_bound(
    ref: np.ndarray, rule: Tolerance, integer: bool = False
) -> tuple[np.ndarray, float, float]:
    """The allowed error of each element of ``ref``, and the (rtol, atol) it was made with.
    Integer outputs (indices, counts) must match exactly: a difference of 1 exceeds 0.5."""
    ref = np.asarray(ref, dtype=np.float64)
    if integer:
        return np.full(ref.shape, 0.5), 0.0, 0.5
    finite = ref[np.isfinite(ref)]
    peak = float(np.max(np.abs(finite))) if finite.size else 0.0
    atol = max(rule.rtol * peak, rule.atol_floor)
    return atol + rule.rtol * np.abs(ref), rule.rtol, atol


def excess(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """``|out - ref| / bound`` per element (at most 1 passes). Where the reference is not
    finite: 0 when the output holds the same value there; a NaN or infinite difference counts
    as ``NOT_FINITE``."""
    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.abs(out - ref) / bound
    finite = np.isfinite(ref)
    same = (out == ref) | (np.isnan(out) & np.isnan(ref))
    ratio = np.where(finite, ratio, np.where(same, 0.0, NOT_FINITE))
    return np.where(np.isnan(ratio), NOT_FINITE, np.minimum(ratio, NOT_FINITE))


def degenerate_reason(ref: np.ndarray, rule: Tolerance) -> str | None:
    """Why ``ref`` makes a weak reference: not finite; zero, or so small that the absolute
    floor is the whole bound; or so flat that a constant output (its median) would pass the
    rule. None when it varies enough for the rule to mean something."""
    ref = np.asarray(ref, dtype=np.float64)
    finite = np.isfinite(ref)
    if ref.size and not finite.all():
        return f"is not finite in {int(ref.size - finite.sum())} of {ref.size} elements"
    if ref.size == 0:
        return "is empty"
    peak = float(np.max(np.abs(ref)))
    if peak <= rule.atol_floor:
        return "is zero everywhere"
    if peak * rule.rtol < rule.atol_floor:
        return (
            f"is close to zero everywhere (peak {peak:.2g}: only differences above "
            f"{rule.atol_floor:.0e} count)"
        )
    bound, _, _ = allclose_bound(ref, rule)
    center = float(np.median(ref))
    if float(np.max(excess(np.full_like(ref, center), ref, bound))) <= 1.0:
        return f"is near-constant (the constant {center:.4g} would pass the check)"
    return None


# --- whole-array figures ------------------------------------------------------------------------


def cosine(out: np.ndarray, ref: np.ndarray) -> float:
    """Cosine similarity of the two arrays as flat vectors, in [-1, 1]: -1 (the worst) when
    either holds a NaN or infinity; for an all-zero array, 1 when both are, else 0."""
    a, b = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        norm_a, norm_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
        if not (math.isfinite(norm_a) and math.isfinite(norm_b)):
            return -1.0
        if not norm_a or not norm_b:
            return 1.0 if np.array_equal(a, b) else 0.0
        value = float(np.dot(a.ravel(), b.ravel()) / max(norm_a * norm_b, 1e-300))
    return min(1.0, max(-1.0, value))  # rounding can land a hair outside [-1, 1]


def rel_l2(out: np.ndarray, ref: np.ndarray) -> float:
    """``||out - ref|| / ||ref||``: 0 for equal arrays, ``NOT_FINITE`` for any difference from
    an all-zero reference or an infinite error, NaN where a NaN is involved."""
    a, b = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        error, scale = float(np.linalg.norm(a - b)), float(np.linalg.norm(b))
        if math.isnan(error) or math.isnan(scale):
            return math.nan
        if not scale:
            return 0.0 if error == 0 else NOT_FINITE
        return min(error / scale, NOT_FINITE)


def sqnr_db(out: np.ndarray, ref: np.ndarray) -> float:
    """``10 log10(sum ref^2 / sum (out - ref)^2)``, within +-``SQNR_EXACT_DB``: the top for no
    noise, the bottom for a zero signal or a non-finite noise."""
    ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        noise = float(np.sum((out64 - ref64) ** 2))
        signal = float(np.sum(ref64**2))
    if not math.isfinite(noise):
        return -SQNR_EXACT_DB
    if noise == 0.0:
        return SQNR_EXACT_DB
    if signal == 0.0:
        return -SQNR_EXACT_DB
    return max(-SQNR_EXACT_DB, min(SQNR_EXACT_DB, 10.0 * math.log10(signal / noise)))


# --- score vectors ------------------------------------------------------------------------------


def is_score_vector(shape: Sequence[int]) -> bool:
    """Whether an array of ``shape`` holds score vectors: rows of class scores on its last
    axis, few enough rows to be a batch (a detector's thousands of boxes are not)."""
    if len(shape) == 0 or shape[-1] < SCORE_MIN_CLASSES:
        return False
    return 0 < math.prod(shape[:-1]) <= SCORE_MAX_ROWS


def _rows(array: np.ndarray, classes: int) -> np.ndarray:
    return np.asarray(array, dtype=np.float64).reshape(-1, classes)


def top_k_hits(out: np.ndarray, ref: np.ndarray, k: int = 1) -> np.ndarray:
    """Per row of the last axis: whether the reference's top class is among the output's
    ``k`` highest (ties go to the lower index, as ``argmax`` breaks them). A row whose output
    holds a NaN or infinity never agrees."""
    classes = np.asarray(ref).shape[-1]
    rows_ref, rows_out = _rows(ref, classes), _rows(out, classes)
    best = np.argmax(rows_ref, axis=1)
    top = np.argsort(-rows_out, axis=1, kind="stable")[:, :k]
    return np.any(top == best[:, None], axis=1) & np.isfinite(rows_out).all(axis=1)


def decisive_rows(ref: np.ndarray, margin: float) -> np.ndarray:
    """Per row of the last axis: whether the reference decides it clearly, its top class
    leading the runner-up by at least ``margin`` of the row's standard deviation."""
    rows = _rows(ref, np.asarray(ref).shape[-1])
    top2 = np.sort(rows, axis=1)[:, -2:]
    spread = np.std(rows, axis=1)
    return ((top2[:, 1] - top2[:, 0]) >= margin * spread) & (spread > 0)


def worst_centred_cosine(out: np.ndarray, ref: np.ndarray) -> float | None:
    """The lowest cosine of any row after removing each row's mean (logits are
    shift-invariant); rows whose reference is flat are left out, None when all are."""
    classes = np.asarray(ref).shape[-1]
    worst = None
    for o, r in zip(_rows(out, classes), _rows(ref, classes), strict=True):
        o, r = o - o.mean(), r - r.mean()
        norm_r, norm_o = float(np.linalg.norm(r)), float(np.linalg.norm(o))
        if not norm_r or not np.isfinite(norm_r):
            continue
        cos = float(np.dot(o, r) / max(norm_r * norm_o, 1e-300)) if np.isfinite(norm_o) else -1
        worst = min(cos, 1.0) if worst is None else min(worst, cos)
    return worst


# --- several outputs ----------------------------------------------------------------------------


def match_outputs(
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    ref_names: Sequence[str],
    references: Sequence[np.ndarray],
) -> tuple[list[Pair], str | None]:
    """Each reference output with its counterpart, matched by name when every reference name
    is among ``names``, else by position; and, when the outputs run out first, why the
    remaining references have none (None when all matched)."""
    refs = list(zip(ref_names, references, strict=True))
    by_name = dict(zip(names, outputs, strict=False))
    if set(ref_names) <= set(by_name):
        return [Pair(r, by_name[r], r, ref) for r, ref in refs], None
    pairs = [Pair(names[i], outputs[i], r, ref) for i, (r, ref) in enumerate(refs[: len(outputs)])]
    if len(outputs) < len(refs):
        return pairs, f"the framework returned {len(outputs)} outputs, ONNX has {len(refs)}"
    return pairs, None


def worst(scored: Iterable[tuple[Item, float]], *, high_is_bad: bool) -> Item:
    """The item with the worst figure (the first of equals); ValueError when there is none."""
    chosen: tuple[Item, float] | None = None
    for item, figure in scored:
        if chosen is None or (figure > chosen[1] if high_is_bad else figure < chosen[1]):
            chosen = (item, figure)
    if chosen is None:
        raise ValueError("no outputs to compare")
    return chosen[0]
