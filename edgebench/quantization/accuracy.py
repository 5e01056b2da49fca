"""What quantization costs: a quantized cell's outputs on the evaluation set against fp32 ONNX
Runtime on the same samples, and the rule that decides whether the cell is trusted.

Figures (docs/quantization.md defines each and justifies the default floors):

- ``top1_agreement``: share of (sample, row) pairs of score-vector outputs (classifier logits
  or probabilities) whose arg-max equals the reference's; None when no output is one.
- ``top1_decisive``: the same over the rows fp32 decides clearly (its top class leads the
  runner-up by at least ``DECISIVE_MARGIN`` of the row's spread); ``decisive_rows`` counts
  them. A flip between two classes fp32 itself barely separates is rounding, not a broken
  path, so the rule's top-1 floor reads this figure.
- ``cosine_min``: the lowest cosine similarity of any output on any sample.
- ``rel_l2_mean``: ``||out - ref|| / ||ref||`` averaged over samples and outputs.
- ``sqnr_db``: signal-to-quantization-noise ratio ``10 log10(sum ref^2 / sum (out - ref)^2)``
  over all samples, for the worst output (each output in its own right, so a small output is
  not drowned by a large one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: A score vector: the last axis has at least this many entries, at most this many rows.
SCORE_MIN_CLASSES = 2
SCORE_MAX_ROWS = 64
#: SQNR reported for outputs that equal the reference exactly (JSON has no infinity).
SQNR_EXACT_DB = 200.0
#: A reference row is decisive when its top-1 leads the runner-up by this share of the row's
#: standard deviation (docs/quantization.md: sound int8 at 25 dB moves logits by ~6% of it).
DECISIVE_MARGIN = 0.1


@dataclass(frozen=True)
class AccuracyRule:
    """The floors a quantized cell must reach, else it is ``mismatch`` (docs/quantization.md
    justifies the defaults)."""

    min_top1: float = 0.75
    min_sqnr_db: float = 10.0


@dataclass
class Accuracy:
    n: int
    top1_agreement: float | None
    cosine_min: float
    rel_l2_mean: float
    sqnr_db: float
    #: The output whose SQNR is lowest (what ``sqnr_db`` describes).
    worst_output: str | None = None
    top1_decisive: float | None = None
    decisive_rows: int = 0
    passed: bool = True
    #: What failed the rule, one line, or None.
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _is_score_vector(shape: Sequence[int]) -> bool:
    if len(shape) == 0 or shape[-1] < SCORE_MIN_CLASSES:
        return False
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return rows <= SCORE_MAX_ROWS


def sqnr_db(out: np.ndarray, ref: np.ndarray) -> float:
    """10 log10(signal / noise); ``SQNR_EXACT_DB`` for no noise, -inf-safe for a zero signal."""
    ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
    noise = float(np.sum((out64 - ref64) ** 2))
    signal = float(np.sum(ref64**2))
    if not math.isfinite(noise):
        return -SQNR_EXACT_DB
    if noise == 0.0:
        return SQNR_EXACT_DB
    if signal == 0.0:
        return -SQNR_EXACT_DB
    return max(-SQNR_EXACT_DB, min(SQNR_EXACT_DB, 10.0 * math.log10(signal / noise)))


def measure_accuracy(
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    ref_names: Sequence[str],
    references: Sequence[np.ndarray],
) -> Accuracy:
    """Stacked outputs (samples on the leading axis) against stacked references, matched by
    name, else by position. ValueError when they cannot be matched."""
    by_name = dict(zip(names, outputs, strict=False))
    use_names = set(ref_names) <= set(by_name)
    if not use_names and len(outputs) < len(references):
        raise ValueError(
            f"the framework returned {len(outputs)} outputs, ONNX has {len(references)}"
        )
    n = 0
    agree: list[float] = []
    decisive: list[float] = []
    cosines: list[float] = []
    rel_l2: list[float] = []
    worst: tuple[float, str] | None = None
    for position, (ref_name, ref) in enumerate(zip(ref_names, references, strict=True)):
        out = by_name[ref_name] if use_names else outputs[position]
        ref = np.asarray(ref, np.float64)
        out = np.asarray(out, np.float64)
        if out.size != ref.size or ref.ndim == 0:
            raise ValueError(
                f"output {ref_name} has shape {list(out.shape)}, ONNX Runtime gives "
                f"{list(ref.shape)}"
            )
        out = out.reshape(ref.shape)
        n = ref.shape[0]
        for o, r in zip(out, ref, strict=True):
            o_flat, r_flat = o.ravel(), r.ravel()
            norm_r, norm_o = float(np.linalg.norm(r_flat)), float(np.linalg.norm(o_flat))
            diff = float(np.linalg.norm(o_flat - r_flat))
            rel_l2.append(diff / norm_r if norm_r else (0.0 if diff == 0 else math.inf))
            if norm_r and norm_o:
                cosines.append(float(np.dot(o_flat, r_flat) / (norm_r * norm_o)))
            else:
                cosines.append(1.0 if diff == 0 else 0.0)
            if _is_score_vector(r.shape):
                rows_r = r.reshape(-1, r.shape[-1])
                rows_o = o.reshape(-1, r.shape[-1])
                same = np.argmax(rows_o, 1) == np.argmax(rows_r, 1)
                agree.extend(same)
                top2 = np.sort(rows_r, axis=1)[:, -2:]
                spread = np.std(rows_r, axis=1)
                clear = (top2[:, 1] - top2[:, 0]) >= DECISIVE_MARGIN * spread
                decisive.extend(same[clear & (spread > 0)])
        figure = sqnr_db(out, ref)
        if worst is None or figure < worst[0]:
            worst = (figure, ref_name)
    if worst is None:
        raise ValueError("no outputs to compare")
    finite_rel = [r if math.isfinite(r) else 1e300 for r in rel_l2]
    return Accuracy(
        n=n,
        top1_agreement=float(np.mean(agree)) if agree else None,
        cosine_min=min(1.0, min(cosines)),
        rel_l2_mean=float(np.mean(finite_rel)),
        sqnr_db=round(worst[0], 3),
        worst_output=worst[1],
        top1_decisive=float(np.mean(decisive)) if decisive else None,
        decisive_rows=len(decisive),
    )


def apply_rule(accuracy: Accuracy, rule: AccuracyRule) -> Accuracy:
    """Mark ``accuracy`` passed or not under ``rule``; the problem names the figure and floor."""
    problems = []
    if accuracy.top1_decisive is not None and accuracy.top1_decisive < rule.min_top1:
        problems.append(
            f"top-1 agreement {accuracy.top1_decisive:.1%} on the {accuracy.decisive_rows} "
            f"rows fp32 decides clearly is below the floor {rule.min_top1:.0%}"
        )
    if accuracy.sqnr_db < rule.min_sqnr_db:
        problems.append(
            f"SQNR of output {accuracy.worst_output} {accuracy.sqnr_db:.1f} dB is below the "
            f"floor {rule.min_sqnr_db:g} dB"
        )
    accuracy.passed = not problems
    accuracy.problem = (
        f"quantized outputs too far from fp32 ONNX Runtime on {accuracy.n} evaluation samples: "
        + "; ".join(problems)
        if problems
        else None
    )
    return accuracy
