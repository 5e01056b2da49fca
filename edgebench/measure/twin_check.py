"""Is a .tflite's ONNX twin what LiteRT computes on the original? Checked once per model and
input, before the twin on ONNX Runtime is trusted as any cell's reference.

The twin's outputs on ONNX Runtime are compared with LiteRT's on the original .tflite, on the
run's input, under the fp32 rule and ``--tolerance``. A twin of an int8 file, dequantized to
float, is held to the fp16 rule and ``--tolerance-fp16``: int8 arithmetic is further from float
than fp32 rounding. A twin that does not match is no reference: every cell of the model is
``mismatch`` with the figures, and the run says so once.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from edgebench.measure.output_check import check_outputs, tolerance_for
from edgebench.measure.reference_outputs import ReferenceUnavailable
from edgebench.results.output_check_part import OutputCheck

if TYPE_CHECKING:
    from edgebench.measure.output_check import CheckSettings
    from edgebench.planning.cells import Cell

log = logging.getLogger(__name__)


def twin_check(cell: Cell, checks: CheckSettings) -> OutputCheck | None:
    """The twin of ``cell``'s model against LiteRT on the original, for the cell's input
    (None for a model not given as a .tflite); ReferenceUnavailable when either cannot run."""
    origin = getattr(cell.model, "tflite", None)
    if origin is None:
        return None
    input_file = checks.input_file(cell)
    key = (str(origin.twin), repr(list(cell.inputs)), checks.seed, str(input_file))
    reference = checks.reference
    found = reference.twin_checks.get(key)
    if isinstance(found, OutputCheck):
        return found
    names, outputs = reference.outputs(cell, checks.seed, input_file)
    lite_names, lite_outputs = reference.outputs(cell, checks.seed, input_file, litert=True)
    if origin.dequantized:  # int8 outputs compared as the values they encode, not as integers
        from edgebench.converters.tflite_import import real_values

        outputs = real_values(origin.path, names, outputs)
        lite_outputs = real_values(origin.path, lite_names, lite_outputs)
    precision = "fp16" if origin.dequantized else "fp32"
    rule = tolerance_for(precision, checks.tolerance.get(precision))
    where = checks.input.label if checks.input is not None else f"the inputs of seed {checks.seed}"
    label = f"LiteRT {reference.litert_version} on {origin.path.name}, on the host"
    check = check_outputs(names, outputs, lite_names, lite_outputs, rule, label, where)
    kept = reference.twin_checks.setdefault(key, check)  # another device may have been first
    if kept is check and not check.passed:
        log.warning("warning: %s", twin_mismatch(cell, check))
    return kept if isinstance(kept, OutputCheck) else check


def twin_mismatch(cell: Cell, check: OutputCheck) -> str:
    """One line for the run, once per model: the twin does not match LiteRT, with what
    decided and by how much."""
    origin = getattr(cell.model, "tflite", None)
    name = origin.path.name if origin is not None else cell.model.name
    return (
        f"the ONNX twin of {name} does not match LiteRT on the original "
        f"({check.summary()}), so it is no reference: every cell of {cell.model.name} is "
        "mismatch until the .tflite reader is fixed (or give its ONNX model with --reference)"
    )


def failed_twin(cell: Cell, checks: CheckSettings) -> OutputCheck | None:
    """The twin check as the cell's output check when the twin fails it (its problem names
    the twin and the figures), else None: the cell is checked against the twin as usual.
    LiteRT's cell on the original file is not judged by a failed twin: ReferenceUnavailable."""
    check = twin_check(cell, checks)
    if check is None or check.passed:
        return None
    if cell.model.format == "tflite":  # LiteRT ran the original: the very reference the twin failed
        original = cell.model.path
        assert original is not None  # a model read from a .tflite file has that file's path
        raise ReferenceUnavailable(
            f"LiteRT ran the original {original.name}, the reference its ONNX twin "
            f"failed against (max abs diff {check.max_abs_diff:.3g}), so there is nothing to "
            "check it against"
        )
    failed = copy.copy(check)
    failed.problem = (
        f"no reference: the ONNX twin does not match LiteRT (output {check.criterion_output}: "
        f"max abs diff {check.max_abs_diff:.3g}, rel error {check.rel_error:.3g})"
    )
    return failed
