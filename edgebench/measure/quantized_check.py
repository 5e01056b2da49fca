"""A quantized cell is trusted by what it keeps of fp32 accuracy: its outputs on the held-out
evaluation set against fp32 ONNX Runtime on the same samples (edgebench/quantization/)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from edgebench.measure.output_check import CheckSettings
from edgebench.measure.reference_outputs import load_saved_outputs
from edgebench.planning.cells import Cell
from edgebench.quantization.accuracy import apply_rule, measure_accuracy
from edgebench.results.quant_parts import Quant
from edgebench.results.record_warnings import ACCURACY_FROM_ONE_INPUT, NO_ACCURACY
from edgebench.results.records import Record
from edgebench.statuses import Status

#: The record's ``quant.method`` for a model given already quantized.
PRECONVERTED = "pre-converted (quantized outside edgebench)"


def quant_info(cell: Cell) -> Quant:
    """How the cell's artifact was quantized, from its manifest, and the calibration set."""
    manifest = cell.artifact.manifest if cell.artifact is not None else {}
    quant = dict(manifest.get("quant") or {})
    # The file came quantized (given so, or a conversion that kept a .tflite's int8 tensors).
    outside = cell.artifact is None or cell.precision_requested is not None
    quant.setdefault("method", PRECONVERTED if outside else "unknown")
    quant.setdefault("granularity", None)
    quant.setdefault("fp32_fallback_ops", [])
    sets = cell.quantization
    outside = outside or quant["method"] == PRECONVERTED
    uses_calibration = not outside and cell.precision == "int8"
    quant["calibration"] = sets.calibration.as_dict() if sets and uses_calibration else None
    quant["evaluation"] = sets.evaluation.as_dict() if sets else None
    return Quant.from_dict(quant)


def check_quantized(
    record: Record,
    cell: Cell,
    checks: CheckSettings,
    eval_outputs: Path | None,
    single_outputs: Path | None,
) -> Record:
    """``record`` (which carries its ``quant`` part already) with its ``accuracy``; below the
    floors the cell is mismatch.

    ``eval_outputs`` holds the outputs of every evaluation sample; a method that cannot run
    the evaluation set gives only ``single_outputs`` (the checked input), and the accuracy is
    then measured on that one sample, with a warning saying so.
    """
    if cell.model.reference is None:
        reason = "no ONNX reference for this model (give --reference)"
        return record.with_warnings(NO_ACCURACY.make(reason=reason))
    sets = cell.quantization
    if eval_outputs is not None and sets is not None:
        names, outputs = load_saved_outputs(eval_outputs)
        ref_names, refs = checks.reference.outputs(
            cell, checks.seed, eval_file=sets.evaluation.path
        )
    elif single_outputs is not None:
        names, outputs = load_saved_outputs(single_outputs)
        outputs = [np.asarray(o)[None] for o in outputs]
        ref_names, refs = checks.reference.outputs(cell, checks.seed, checks.input_file(cell))
        refs = [np.asarray(r)[None] for r in refs]
        record = record.with_warnings(ACCURACY_FROM_ONE_INPUT.make())
    else:
        return record.with_warnings(NO_ACCURACY.make(reason="the runner returned no outputs"))
    try:
        accuracy = measure_accuracy(names, outputs, ref_names, refs)
    except ValueError as exc:
        problem = f"quantized outputs cannot be compared with ONNX Runtime: {exc}"
        return replace(record, status=Status.MISMATCH, error=problem)
    apply_rule(accuracy, checks.accuracy_rule)
    record = replace(record, accuracy=accuracy)
    if accuracy.passed:
        return record
    return replace(record, status=Status.MISMATCH, error=accuracy.problem)
