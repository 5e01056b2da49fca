"""The record's ``output_check`` part: a cell's outputs against ONNX Runtime on the same input.

measure/output_check.py computes it (the figures from ``edgebench.agreement``, the rule per
precision); docs/results.md lists its keys and docs/converters.md gives the rule. Each field
is a key of the stored object, each output's comparison an object of ``outputs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.results.json_values import JsonObject, RecordPart, read_fields, write_fields
from edgebench.results.record_warnings import RecordWarning, warnings_from_json

#: The comparison rule, as the record names it.
RULE = "allclose"
NAN = float("nan")


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
class OutputCheck(RecordPart):
    """The outputs against ONNX Runtime: every output must pass; the figures at the top are
    the worst over the outputs, and ``criterion``, ``criterion_output`` and ``ratio`` say
    what decided."""

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
    #: Stored as their messages, as in the record's ``output_check`` before warnings had kinds;
    #: read back as ``unclassified`` (the record's own warnings carry their kinds).
    warnings: list[RecordWarning] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Any, name: str = "output_check") -> OutputCheck:
        return read_fields(cls, data, name, {"warnings": _read_messages})

    def to_dict(self) -> dict[str, Any]:
        return write_fields(self, {"warnings": lambda warnings: [w.message for w in warnings]})

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


def _read_messages(obj: JsonObject, key: str) -> list[RecordWarning]:
    return warnings_from_json(obj.get(key, list[str]), None)
