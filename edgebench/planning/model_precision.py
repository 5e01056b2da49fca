"""Pre-converted models whose file fixes the precision they run at: an int8 ncnn ``.param``
(its quantized layers carry int8 weights; ``runners/protocol/ncnn_param.py``), which ncnn can
run only with int8 inference on. Such a model is measured at the precision its file holds,
whatever precision the run sweeps by default; asking for another one explicitly is refused in
one line. Every other file is recorded at the precision it holds once its cells are planned
(``planning/prepare.py``, ``settle_precisions``), with a warning where that is not the one
asked for."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from edgebench.converters.artifact_precision import read_precision
from edgebench.errors import UserError
from edgebench.planning.modelref import ModelRef

log = logging.getLogger(__name__)


def stored_precision(model: ModelRef) -> tuple[str, str] | None:
    """(the precision ``model``'s file holds, one line saying how it shows), or None when the
    file leaves the precision to the run."""
    if model.error or model.format != "ncnn" or model.path is None:
        return None
    found = read_precision(model.path, "ncnn")  # ncnn can read int8 weights only as int8
    if found.precision != "int8":
        return None
    return "int8", f"{model.path.name} is an int8 ncnn model ({found.evidence})"


def precisions_by_model(
    models: Sequence[ModelRef], precisions: Sequence[str], chosen: bool
) -> list[tuple[str, list[ModelRef]]]:
    """(precision, the models measured at it), precisions in the order first met.

    A model whose file holds a precision is measured at that one only. When the precisions
    were ``chosen`` (``--precision``, a plan) and do not include it, that is a UserError."""
    wanted: dict[int, list[str]] = {}
    for model in models:
        stored = stored_precision(model)
        if stored is None:
            wanted[id(model)] = list(precisions)
            continue
        precision, note = stored
        if chosen and precision not in precisions:
            raise UserError(
                f"--precision {','.join(precisions)}: {note}; measure it with --precision "
                f"{precision}, or leave --precision out"
            )
        if chosen and len(precisions) > 1:
            others = ", ".join(p for p in precisions if p != precision)
            log.warning("warning: %s: measured at %s only, not %s", note, precision, others)
        wanted[id(model)] = [precision]
    order = list(dict.fromkeys([*precisions, *(p for ps in wanted.values() for p in ps)]))
    groups = [(p, [m for m in models if p in wanted[id(m)]]) for p in order]
    return [(p, group) for p, group in groups if group]
