"""Does a framework compute what ONNX Runtime computes? Checked before any latency counts."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgebench.measure.input_files import InputFiles
from edgebench.planning.config import (
    DEFAULT_TOLERANCE,
    TOLERANCES,
    CheckConfig,
    QuantizationConfig,
    Tolerance,
)
from edgebench.quantization.accuracy import AccuracyRule
from edgebench.results.record_warnings import BLANK_REFERENCE, RecordWarning
from edgebench.runners.protocol import SPEC_SCHEMA
from edgebench.statuses import Status

if TYPE_CHECKING:
    from edgebench.lab.device import Device as RunnerHost
    from edgebench.planning.cells import Cell


#: The comparison rule, as the record names it.
RULE = "allclose"
NAN = float("nan")
#: The excess of an element whose difference is NaN or infinite (JSON has no inf).
NOT_FINITE = 1e300
#: A score vector (classifier logits or probabilities): the last axis has at least this many
#: entries and there are at most ``SCORE_ROWS`` of them (a batch).
SCORE_MIN_CLASSES = 2
SCORE_ROWS = 64


@dataclass
class OutputComparison:
    """One output against its reference. ``criterion`` and ``ratio`` say what decided: the
    criterion's figure over its limit (<= 1 passes), the largest of the output's criteria."""

    name: str
    reference_name: str
    shape: list[int]
    max_abs_diff: float
    rel_error: float
    cosine: float
    top1_agreement: float
    passed: bool = True
    criterion: str = "allclose"
    ratio: float = 0.0
    #: allclose: the worst element's |out - ref| / (atol + rtol |ref|), where it is, and the
    #: share of elements over their bound.
    excess: float = 0.0
    worst_index: list[int] | None = None
    over_fraction: float = 0.0
    rtol: float = NAN
    atol: float = NAN
    peak: float = NAN
    #: Score vectors only: the worst row's centred cosine, its limit, top-5 agreement.
    score_vector: bool = False
    score_cosine: float | None = None
    min_score_cosine: float | None = None
    top5_agreement: float | None = None
    #: Why the reference says little (all zero, near-constant, not finite), or None.
    degenerate: str | None = None
    #: The relative L2 limit, where the precision's rule has one (fp16).
    max_rel_l2: float | None = None


@dataclass
class OutputCheck:
    reference: str
    tolerance: float
    passed: bool
    max_abs_diff: float | None
    rel_error: float | None
    cosine: float | None
    top1_agreement: float | None
    outputs: list[OutputComparison] = field(default_factory=list)
    problem: str | None = None
    #: The rule, and what decided: criterion, output, figure over limit (<= 1 passes).
    rule: str = RULE
    criterion: str | None = None
    criterion_output: str | None = None
    ratio: float | None = None
    excess: float | None = None
    atol_floor: float | None = None
    cosine_gap: float | None = None
    max_rel_l2: float | None = None
    #: Stored as their messages, as in the record's ``output_check`` before warnings had kinds.
    warnings: list[RecordWarning] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(asdict(self), warnings=[w.message for w in self.warnings])

    def summary(self) -> str:
        """One line: what decided, and by how much."""
        if self.problem:
            return self.problem
        decided = next((c for c in self.outputs if c.name == self.criterion_output), None)
        if decided is None:
            return "no outputs compared"
        verdict = "within" if self.passed else "outside"
        if decided.criterion == "rel_l2":
            return (
                f"output {decided.name}: relative L2 error {decided.rel_error:.2e} is "
                f"{decided.ratio:.3g}x the allowed {decided.max_rel_l2:.0e} (max abs diff "
                f"{decided.max_abs_diff:.3g}) ({verdict} tolerance)"
            )
        if decided.criterion == "cosine":
            gap = 1.0 - (decided.score_cosine if decided.score_cosine is not None else NAN)
            limit = 1.0 - (decided.min_score_cosine or NAN)
            return (
                f"output {decided.name}: 1 - cosine (centred) {gap:.2e} is "
                f"{decided.ratio:.3g}x the allowed {limit:.0e} ({verdict} tolerance)"
            )
        return (
            f"output {decided.name}: worst element {decided.worst_index} is off by "
            f"{decided.excess:.3g}x its bound (rtol {decided.rtol:.0e}, atol {decided.atol:.2e};"
            f" {decided.over_fraction:.2%} of elements over; max abs diff "
            f"{decided.max_abs_diff:.3g}, rel L2 {decided.rel_error:.2e}) ({verdict} tolerance)"
        )


class ReferenceUnavailable(Exception):
    """The ONNX Runtime reference could not be computed; the message says why."""


class ReferenceOutputs:
    """ONNX Runtime on the host, one thread, the same inputs the runner feeds (seeded, or the
    prepared ``--input`` file).

    Computed by the runner in a subprocess (never imported here: onnxruntime writes a device id
    into $HOME on import, and the runner has a private HOME), and cached per model and input.
    """

    def __init__(self, runner: RunnerHost | None = None) -> None:
        self._runner = runner
        self._cache: dict[tuple, tuple[list[str], list[np.ndarray]]] = {}
        self._lock = threading.Lock()
        self.version = ""

    def __reduce__(self) -> tuple:
        # Sent to another host (edgebench run --cluster): that host computes its own reference.
        return (type(self), ())

    def outputs(
        self,
        onnx_path: Path,
        inputs: Sequence[dict[str, Any]],
        seed: int,
        input_file: Path | None = None,
        eval_file: Path | None = None,
    ) -> tuple[list[str], list[np.ndarray]]:
        """The outputs for the seeded inputs or ``input_file``; with ``eval_file``, the
        outputs of each of its samples, stacked on a leading axis."""
        key = (str(onnx_path), repr(list(inputs)), seed, str(input_file), str(eval_file))
        with self._lock:  # device workers share one reference per model
            if key not in self._cache:
                self._cache[key] = self._compute(onnx_path, inputs, seed, input_file, eval_file)
            return self._cache[key]

    def _compute(
        self,
        onnx_path: Path,
        inputs: Sequence[dict[str, Any]],
        seed: int,
        input_file: Path | None,
        eval_file: Path | None = None,
    ) -> tuple[list[str], list[np.ndarray]]:
        if self._runner is None:
            from edgebench.lab.device import LocalDevice

            self._runner = LocalDevice("reference")
        out_path = self._runner.output_path(
            f"reference-{abs(hash((str(onnx_path), seed, str(input_file), str(eval_file)))):x}"
        )
        spec = {
            "schema": SPEC_SCHEMA,
            "model": str(onnx_path),
            "framework": "onnxruntime",
            "threads": 1,
            "warmup": 0,
            "iterations": 1,
            "min_time_s": 0.0,
            "inputs": list(inputs) or None,
            "seed": seed,
            "input_file": str(input_file) if input_file is not None else None,
            "save_outputs": None if eval_file is not None else out_path,
            "eval_file": str(eval_file) if eval_file is not None else None,
            "save_eval_outputs": out_path if eval_file is not None else None,
        }
        try:
            outcome = self._runner.run_runner(spec, None, timeout=600.0)
            result = outcome.result or {}
            if result.get("status") != Status.OK:
                error = result.get("error") or {}
                raise ReferenceUnavailable(
                    "ONNX Runtime reference failed: "
                    + (error.get("message") or outcome.error or "no result")
                )
            self.version = str(result.get("framework_version") or "")
            local = self._runner.fetch_outputs(out_path)
            if local is None:
                raise ReferenceUnavailable("ONNX Runtime reference wrote no outputs")
            return load_saved_outputs(local)
        finally:
            self._runner.discard_outputs(out_path)


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


def _bound(ref: np.ndarray, rule: Tolerance, integer: bool) -> tuple[np.ndarray, float, float]:
    """Per-element allowed error, and the (rtol, atol) it was made with. Integer outputs
    (indices, counts) must match exactly: any difference of 1 exceeds a bound of 0.5."""
    if integer:
        return np.full(ref.shape, 0.5), 0.0, 0.5
    finite = ref[np.isfinite(ref)]
    peak = float(np.max(np.abs(finite))) if finite.size else 0.0
    atol = max(rule.rtol * peak, rule.atol_floor)
    return atol + rule.rtol * np.abs(ref), rule.rtol, atol


def _excess(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """|out - ref| / bound per element. Where the reference is not finite: 0 when the output
    has the same value there; a NaN or infinite difference counts as ``NOT_FINITE``."""
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.abs(out - ref) / bound
    finite = np.isfinite(ref)
    same = (out == ref) | (np.isnan(out) & np.isnan(ref))
    ratio = np.where(finite, ratio, np.where(same, 0.0, NOT_FINITE))
    return np.where(np.isnan(ratio), NOT_FINITE, np.minimum(ratio, NOT_FINITE))


def degenerate_reason(ref: np.ndarray, rule: Tolerance) -> str | None:
    """Why ``ref`` makes a weak reference: not finite; zero, or so small that the absolute
    floor is the whole bound; or so flat that a constant output (its median) would pass the
    check. None when it varies enough for the check to mean something."""
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
    bound, _, _ = _bound(ref, rule, integer=False)
    center = float(np.median(ref))
    if float(np.max(_excess(np.full_like(ref, center), ref, bound))) <= 1.0:
        return f"is near-constant (the constant {center:.4g} would pass the check)"
    return None


def _score_rows(ref: np.ndarray) -> int:
    """How many score vectors ``ref`` holds (rows of its last axis), 0 when it is not one."""
    if ref.ndim == 0 or ref.shape[-1] < SCORE_MIN_CLASSES:
        return 0
    rows = ref.size // ref.shape[-1]
    return rows if rows <= SCORE_ROWS else 0


def _agreement(out: np.ndarray, ref: np.ndarray, k: int) -> float:
    """Share of rows whose reference top-1 is among the output's top k."""
    rows_ref = ref.reshape(-1, ref.shape[-1])
    rows_out = out.reshape(-1, ref.shape[-1])
    best = np.argmax(rows_ref, axis=1)
    top = np.argsort(-rows_out, axis=1, kind="stable")[:, :k]
    return float(np.mean([b in t for b, t in zip(best, top, strict=True)]))


def _centred_cosine(out: np.ndarray, ref: np.ndarray) -> float | None:
    """The worst row's cosine after removing each row's mean (logits are shift-invariant);
    rows whose reference is flat are left out, None when all are."""
    worst = None
    for o, r in zip(out.reshape(-1, ref.shape[-1]), ref.reshape(-1, ref.shape[-1]), strict=True):
        o, r = o - o.mean(), r - r.mean()
        norm_r, norm_o = float(np.linalg.norm(r)), float(np.linalg.norm(o))
        if not norm_r or not np.isfinite(norm_r):
            continue
        cos = float(np.dot(o, r) / max(norm_r * norm_o, 1e-300)) if np.isfinite(norm_o) else -1
        worst = min(cos, 1.0) if worst is None else min(worst, cos)
    return worst


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
        diff = a - b
        ref_norm, out_norm = float(np.linalg.norm(b)), float(np.linalg.norm(a))
        rel = float(np.linalg.norm(diff)) / max(ref_norm, 1e-12)
        cosine = float(np.dot(a.ravel(), b.ravel()) / max(ref_norm * out_norm, 1e-24))
    bound, rtol, atol = _bound(b, rule, integer)
    excess = _excess(a, b, bound)
    worst = int(np.argmax(excess)) if excess.size else 0
    cmp = OutputComparison(
        name=name,
        reference_name=ref_name,
        shape=list(b.shape),
        max_abs_diff=float(np.nanmax(np.abs(diff))) if diff.size else 0.0,
        rel_error=rel,
        cosine=min(1.0, max(-1.0, cosine)),  # rounding can land a hair outside [-1, 1]
        top1_agreement=_agreement(a, b, 1) if b.ndim and b.size else 1.0,
        excess=float(excess.ravel()[worst]) if excess.size else 0.0,
        worst_index=[int(i) for i in np.unravel_index(worst, b.shape)] if excess.size else None,
        over_fraction=float(np.mean(excess > 1.0)) if excess.size else 0.0,
        rtol=rtol,
        atol=atol,
        peak=float(np.nanmax(np.abs(b))) if b.size else 0.0,
        degenerate=degenerate_reason(b, rule) if not integer else None,
    )
    cmp.ratio = cmp.excess
    if rule.rel_l2 and not integer and cmp.degenerate is None:
        cmp.max_rel_l2 = rule.rel_l2
        norm_ratio = rel / rule.rel_l2
        if norm_ratio > cmp.ratio:
            cmp.criterion, cmp.ratio = "rel_l2", norm_ratio
    if _score_rows(b) and not integer:
        cmp.score_vector = True
        cmp.top5_agreement = _agreement(a, b, 5)
        cmp.score_cosine = _centred_cosine(a, b)
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
    by_name = dict(zip(names, outputs, strict=False))
    use_names = set(ref_names) <= set(by_name)
    for position, (ref_name, ref) in enumerate(zip(ref_names, references, strict=True)):
        if use_names:
            name, out = ref_name, by_name[ref_name]
        elif position < len(outputs):
            name, out = names[position], outputs[position]
        else:
            problem = f"the framework returned {len(outputs)} outputs, ONNX has {len(ref_names)}"
            break
        if np.asarray(out).size != np.asarray(ref).size:
            problem = (
                f"output {name} has shape {list(np.asarray(out).shape)}, "
                f"ONNX Runtime gives {list(np.asarray(ref).shape)}"
            )
            break
        comparisons.append(compare_arrays(name, ref_name, np.asarray(out), np.asarray(ref), rule))
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
    decided = max(comparisons, key=lambda c: c.ratio)
    check.passed = all(c.passed for c in comparisons)
    check.max_abs_diff = max(c.max_abs_diff for c in comparisons)
    check.rel_error = max(c.rel_error for c in comparisons)
    check.cosine = min(c.cosine for c in comparisons)
    check.top1_agreement = min(c.top1_agreement for c in comparisons)
    check.criterion, check.criterion_output = decided.criterion, decided.name
    check.ratio = decided.ratio
    check.excess = max(c.excess for c in comparisons)
    return check


def load_saved_outputs(path: Path) -> tuple[list[str], list[np.ndarray]]:
    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["__names__"]]
        outputs = [data[f"output_{i}"] for i in range(len(names))]
    return names, outputs


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
    cell: Cell, result_file: Path | None, checks: CheckSettings
) -> OutputCheck | None:
    """The cell's saved outputs against ONNX Runtime on the host; None without a reference."""
    reference = cell.model.reference
    if reference is None or result_file is None:
        return None
    names, outputs = load_saved_outputs(result_file)
    input_file = checks.input_file(cell)
    ref_names, ref_outputs = checks.reference.outputs(
        reference, cell.inputs or [], checks.seed, input_file
    )
    rule = tolerance_for(cell.precision, checks.tolerance.get(cell.precision))
    label = f"onnxruntime {checks.reference.version} on the host"
    where = checks.input.label if checks.input is not None else f"the inputs of seed {checks.seed}"
    return check_outputs(names, outputs, ref_names, ref_outputs, rule, label, where)
