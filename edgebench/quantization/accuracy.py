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

Each figure is computed by ``edgebench.agreement``, which the output check uses too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgebench.agreement import (
    NOT_FINITE,
    cosine,
    decisive_rows,
    is_score_vector,
    match_outputs,
    rel_l2,
    sqnr_db,
    top_k_hits,
    worst,
)

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
    """A quantized cell's outputs on ``n`` evaluation samples against fp32 ONNX Runtime, and
    the verdict under the floors. This is also the record's ``accuracy`` part: each field is
    a key of the stored object, in this order (results/quant_parts.py reads it back), and a
    figure stored as null (a NaN) reads as None."""

    n: int | None
    top1_agreement: float | None = None
    cosine_min: float | None = None
    rel_l2_mean: float | None = None
    sqnr_db: float | None = None
    #: The output whose SQNR is lowest (what ``sqnr_db`` describes).
    worst_output: str | None = None
    top1_decisive: float | None = None
    decisive_rows: int | None = 0
    passed: bool | None = True
    #: What failed the rule, one line, or None.
    problem: str | None = None


def measure_accuracy(
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    ref_names: Sequence[str],
    references: Sequence[np.ndarray],
) -> Accuracy:
    """Stacked outputs (samples on the leading axis) against stacked references, matched by
    name, else by position. ValueError when they cannot be matched."""
    pairs, unmatched = match_outputs(names, outputs, ref_names, references)
    if unmatched:
        raise ValueError(unmatched)
    n = 0
    agree: list[bool] = []
    decisive: list[bool] = []
    cosines: list[float] = []
    rel: list[float] = []
    sqnr: list[tuple[str, float]] = []
    for _, out, ref_name, ref in pairs:
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
            rel.append(rel_l2(o, r))
            cosines.append(cosine(o, r))
            if is_score_vector(r.shape):
                same = top_k_hits(o, r, 1)
                agree.extend(same)
                decisive.extend(same[decisive_rows(r, DECISIVE_MARGIN)])
        sqnr.append((ref_name, sqnr_db(out, ref)))
    worst_output, worst_sqnr = worst(((entry, entry[1]) for entry in sqnr), high_is_bad=False)
    return Accuracy(
        n=n,
        top1_agreement=float(np.mean(agree)) if agree else None,
        cosine_min=min(cosines),
        rel_l2_mean=float(np.mean([r if math.isfinite(r) else NOT_FINITE for r in rel])),
        sqnr_db=round(worst_sqnr, 3),
        worst_output=worst_output,
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
    if accuracy.sqnr_db is not None and accuracy.sqnr_db < rule.min_sqnr_db:
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
