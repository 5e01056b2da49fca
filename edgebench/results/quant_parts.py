"""The quantization parts of a record: how the artifact was quantized (``quant``) and how
its outputs on the evaluation set agree with fp32 ONNX Runtime (``accuracy``).

docs/quantization.md explains both; docs/results.md lists their fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.results.json_values import JsonObject, RecordPart


@dataclass
class SampleSet:
    """The calibration or evaluation set: how many samples, the sha256 of its tensors, and
    whether edgebench made it up (no data given)."""

    n: int | None
    sha256: str | None
    synthetic: bool | None

    @classmethod
    def from_json(cls, obj: JsonObject) -> SampleSet:
        return cls(obj.get("n", int), obj.get("sha256", str), obj.get("synthetic", bool))

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "sha256": self.sha256, "synthetic": self.synthetic}


@dataclass
class Quant(RecordPart):
    """How a quantized artifact was made: the quantizer and its calibration rule
    (``method``), ``granularity``, the op types left in floating point, and the sets used
    (``calibration``: None for weight-only and pre-converted models)."""

    method: str | None
    granularity: str | None = None
    fp32_fallback_ops: list[str] = field(default_factory=list)
    calibration: SampleSet | None = None
    evaluation: SampleSet | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = "quant") -> Quant:
        obj = JsonObject(data, name)
        calibration, evaluation = obj.child("calibration"), obj.child("evaluation")
        return cls(
            method=obj.get("method", str),
            granularity=obj.get("granularity", str),
            fp32_fallback_ops=obj.get("fp32_fallback_ops", list[str]) or [],
            calibration=None if calibration is None else SampleSet.from_json(calibration),
            evaluation=None if evaluation is None else SampleSet.from_json(evaluation),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "granularity": self.granularity,
            "fp32_fallback_ops": list(self.fp32_fallback_ops),
            "calibration": None if self.calibration is None else self.calibration.to_dict(),
            "evaluation": None if self.evaluation is None else self.evaluation.to_dict(),
        }


@dataclass
class Accuracy(RecordPart):
    """A quantized cell's outputs on ``n`` evaluation samples against fp32 ONNX Runtime:
    top-1 agreement (over all rows, and over the rows fp32 decides clearly), the lowest
    cosine, the mean relative L2, the SQNR of the worst output, and the verdict under the
    floors. quantization/accuracy.py measures it; this is its stored form."""

    n: int | None
    top1_agreement: float | None = None
    cosine_min: float | None = None
    rel_l2_mean: float | None = None
    sqnr_db: float | None = None
    worst_output: str | None = None
    top1_decisive: float | None = None
    decisive_rows: int | None = None
    passed: bool | None = None
    problem: str | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = "accuracy") -> Accuracy:
        obj = JsonObject(data, name)
        return cls(
            n=obj.get("n", int),
            top1_agreement=obj.get("top1_agreement", float),
            cosine_min=obj.get("cosine_min", float),
            rel_l2_mean=obj.get("rel_l2_mean", float),
            sqnr_db=obj.get("sqnr_db", float),
            worst_output=obj.get("worst_output", str),
            top1_decisive=obj.get("top1_decisive", float),
            decisive_rows=obj.get("decisive_rows", int),
            passed=obj.get("passed", bool),
            problem=obj.get("problem", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "top1_agreement": self.top1_agreement,
            "cosine_min": self.cosine_min,
            "rel_l2_mean": self.rel_l2_mean,
            "sqnr_db": self.sqnr_db,
            "worst_output": self.worst_output,
            "top1_decisive": self.top1_decisive,
            "decisive_rows": self.decisive_rows,
            "passed": self.passed,
            "problem": self.problem,
        }
