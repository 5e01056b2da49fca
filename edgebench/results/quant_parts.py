"""The quantization parts of a record: how the artifact was quantized (``quant``) and how
its outputs on the evaluation set agree with fp32 ONNX Runtime (``accuracy``).

``Accuracy`` is defined once, where it is measured (quantization/accuracy.py); the record
stores it as it is, each field a key (``json_values.read_fields`` reads it back).
docs/quantization.md explains both; docs/results.md lists their fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.quantization.accuracy import Accuracy
from edgebench.results.json_values import JsonObject, RecordPart

__all__ = ["Accuracy", "Quant", "SampleSet"]


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
