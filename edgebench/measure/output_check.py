"""Does a framework compute what ONNX Runtime computes? Checked before any latency counts.

The figures come from ``edgebench.agreement`` and the reference outputs from
``measure/reference_outputs.py``; this module applies the precision's rule to each output and
says what decided, as the record's ``output_check`` part (results/output_check_part.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from edgebench.agreement import (
    allclose_bound,
    cosine,
    degenerate_reason,
    excess,
    is_score_vector,
    match_outputs,
    rel_l2,
    top_k_hits,
    worst,
    worst_centred_cosine,
)
from edgebench.measure.input_files import InputFiles
from edgebench.measure.reference_outputs import ReferenceOutputs, load_saved_outputs
from edgebench.planning.config import (
    DEFAULT_TOLERANCE,
    TOLERANCES,
    CheckConfig,
    QuantizationConfig,
    Tolerance,
)
from edgebench.planning.tflite_origin import check_precision
from edgebench.quantization.accuracy import AccuracyRule
from edgebench.results.output_check_part import NAN, OutputCheck, OutputComparison
from edgebench.results.record_warnings import BLANK_REFERENCE

if TYPE_CHECKING:
    from edgebench.planning.cells import Cell


def tolerance_for(precision: str, rtol: float | None = None) -> Tolerance:
    """The table's rule for ``precision``; a different ``rtol`` (``--tolerance``) scales the
    cosine gap with its square, since 1 - cosine grows as the square of a small error."""
    base = TOLERANCES.get(precision, TOLERANCES["fp32"])
    if rtol is None or rtol == base.rtol:
        return base
    scale = rtol / base.rtol if base.rtol else 1.0
    return Tolerance(
        rtol=rtol,
        atol_floor=base.atol_floor,
        cosine_gap=base.cosine_gap * scale**2,
        rel_l2=base.rel_l2 * scale if base.rel_l2 is not None else None,
    )


def nan_max(values: np.ndarray) -> float:
    """The largest value that is not NaN; NaN when every value is (without numpy's "All-NaN
    slice" warning on the terminal: the comparison says what is NaN itself); 0.0 when empty."""
    if not values.size:
        return 0.0
    numbers = values[~np.isnan(values)]
    return float(numbers.max()) if numbers.size else float("nan")


def compare_arrays(
    name: str,
    ref_name: str,
    out: np.ndarray,
    ref: np.ndarray,
    tolerance: float | Tolerance | None = None,
) -> OutputComparison:
    """``out`` against ``ref`` under the allclose rule (and cosine for score vectors)."""
    rule = tolerance if isinstance(tolerance, Tolerance) else tolerance_for("fp32", tolerance)
    integer = np.asarray(ref).dtype.kind in "iub"
    b = np.asarray(ref, dtype=np.float64)
    a = np.asarray(out, dtype=np.float64).reshape(b.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    bound, rtol, atol = allclose_bound(b, rule, integer)
    over = excess(a, b, bound)
    at = int(np.argmax(over)) if over.size else 0
    cmp = OutputComparison(
        name=name,
        reference_name=ref_name,
        shape=list(b.shape),
        max_abs_diff=nan_max(diff),
        rel_error=rel_l2(a, b),
        cosine=cosine(a, b),
        top1_agreement=float(np.mean(top_k_hits(a, b, 1))) if b.ndim and b.size else 1.0,
        excess=float(over.ravel()[at]) if over.size else 0.0,
        worst_index=[int(i) for i in np.unravel_index(at, b.shape)] if over.size else None,
        over_fraction=float(np.mean(over > 1.0)) if over.size else 0.0,
        rtol=rtol,
        atol=atol,
        peak=nan_max(np.abs(b)),
        degenerate=degenerate_reason(b, rule) if not integer else None,
    )
    cmp.ratio = cmp.excess
    if rule.rel_l2 and not integer and cmp.degenerate is None:
        cmp.max_rel_l2 = rule.rel_l2
        norm_ratio = cmp.rel_error / rule.rel_l2
        if norm_ratio > cmp.ratio:
            cmp.criterion, cmp.ratio = "rel_l2", norm_ratio
    if is_score_vector(b.shape) and not integer:
        cmp.score_vector = True
        cmp.top5_agreement = float(np.mean(top_k_hits(a, b, 5)))
        cmp.score_cosine = worst_centred_cosine(a, b)
        cmp.min_score_cosine = 1.0 - rule.cosine_gap
        if cmp.score_cosine is not None:
            cosine_ratio = (1.0 - cmp.score_cosine) / max(rule.cosine_gap, 1e-300)
            if cosine_ratio > cmp.ratio:
                cmp.criterion, cmp.ratio = "cosine", cosine_ratio
    cmp.passed = bool(cmp.ratio <= 1.0)
    return cmp


def check_outputs(
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    ref_names: Sequence[str],
    references: Sequence[np.ndarray],
    tolerance: float | Tolerance,
    reference_label: str,
    input_label: str = "the seeded input",
) -> OutputCheck:
    """Match outputs to the reference by name, else by position; every output must pass, and
    the output with the highest figure/limit ratio is named as what decided."""
    rule = tolerance if isinstance(tolerance, Tolerance) else tolerance_for("fp32", tolerance)
    comparisons: list[OutputComparison] = []
    problem = None
    pairs, unmatched = match_outputs(names, outputs, ref_names, references)
    for name, out, ref_name, ref in pairs:
        out, ref = np.asarray(out), np.asarray(ref)
        if out.size != ref.size:
            problem = (
                f"output {name} has shape {list(out.shape)}, ONNX Runtime gives {list(ref.shape)}"
            )
            break
        comparisons.append(compare_arrays(name, ref_name, out, ref, rule))
    else:
        problem = unmatched
    check = OutputCheck(
        reference=reference_label,
        tolerance=rule.rtol,
        passed=False,
        max_abs_diff=NAN,
        rel_error=NAN,
        cosine=NAN,
        top1_agreement=NAN,
        outputs=comparisons,
        problem=problem or (None if comparisons else "no outputs to compare"),
        atol_floor=rule.atol_floor,
        cosine_gap=rule.cosine_gap,
        max_rel_l2=rule.rel_l2,
        warnings=[
            BLANK_REFERENCE.make(output=c.reference_name, problem=c.degenerate, input=input_label)
            for c in comparisons
            if c.degenerate
        ],
    )
    if check.problem:
        return check
    decided = worst(((c, c.ratio) for c in comparisons), high_is_bad=True)
    check.passed = all(c.passed for c in comparisons)
    check.max_abs_diff = max(c.max_abs_diff for c in comparisons)
    check.rel_error = max(c.rel_error for c in comparisons)
    check.cosine = min(c.cosine for c in comparisons)
    check.top1_agreement = min(c.top1_agreement for c in comparisons)
    check.criterion, check.criterion_output = decided.criterion, decided.name
    check.ratio = decided.ratio
    check.excess = max(c.excess for c in comparisons)
    return check


@dataclass
class CheckSettings:
    """How outputs are checked against ONNX Runtime: rtol per precision (the rest of the rule
    comes from ``TOLERANCES``), the reference (computed once per model and input), the input
    seed, and ``--input`` when given."""

    tolerance: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOLERANCE))
    reference: ReferenceOutputs = field(default_factory=ReferenceOutputs)
    seed: int = 0
    input: InputFiles | None = None
    #: Quantized cells: the accuracy floors on the evaluation set.
    accuracy_rule: AccuracyRule = field(default_factory=AccuracyRule)

    @classmethod
    def from_config(
        cls, config: CheckConfig, quantization: QuantizationConfig | None = None
    ) -> CheckSettings:
        source = InputFiles(config.input, config.preprocess) if config.input else None
        q = quantization or QuantizationConfig()
        return cls(
            tolerance=config.tolerances(),
            seed=config.seed,
            input=source,
            accuracy_rule=q.accuracy_rule(),
        )

    def input_file(self, cell: Cell) -> Path | None:
        """The prepared inputs of ``cell`` (InputUnavailable), or None for seeded inputs."""
        return self.input.prepared(cell.inputs or []) if self.input is not None else None


def compare_with_reference(
    cell: Cell, result_file: Path | None, checks: CheckSettings, ran_at: str | None = None
) -> OutputCheck | None:
    """The cell's saved outputs against ONNX Runtime on the host; None without a reference.
    ``ran_at``: the precision the backend reports it computed in, when that differs from the
    cell's (a GPU that stores fp16 in an fp32 cell): its rule applies."""
    if cell.model.reference is None or result_file is None:
        return None
    names, outputs = load_saved_outputs(result_file)
    ref_names, ref_outputs = checks.reference.outputs(cell, checks.seed, checks.input_file(cell))
    precision = check_precision(cell.model, ran_at if ran_at in TOLERANCES else cell.precision)
    rule = tolerance_for(precision, checks.tolerance.get(precision))
    label = f"onnxruntime {checks.reference.version} on the host"
    origin = getattr(cell.model, "tflite", None)
    if origin is not None:
        label += f", on the ONNX twin of {origin.path.name} (matches LiteRT)"
    where = checks.input.label if checks.input is not None else f"the inputs of seed {checks.seed}"
    return check_outputs(names, outputs, ref_names, ref_outputs, rule, label, where)
