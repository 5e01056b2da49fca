"""Settings that the rest of a run's configuration makes pointless.

Each gets one warning line on stderr, never an error: the run is still what was asked for,
but an option the user typed changed nothing, and they should know it and why.
"""

from __future__ import annotations

import logging

from edgebench.planning.config import RunConfig
from edgebench.quantization import QUANTIZED_PRECISIONS

log = logging.getLogger(__name__)


def unused_settings(config: RunConfig) -> list[str]:
    """One line per setting that has no effect in ``config``, saying why."""
    checks, quant = config.checks, config.quantization
    precisions = config.sweep.precision
    quantized = any(p in QUANTIZED_PRECISIONS for p in precisions)
    lines: list[str] = []
    sets = [(o, v) for o, v in (("--calibration", quant.calibration), ("--eval", quant.eval)) if v]
    if not quantized:
        for option, _ in sets:
            lines.append(
                f"{option} has no effect: no cell is quantized (--precision "
                f"{','.join(precisions)}); it is read only for int8 and int8-weights cells"
            )
    if checks.preprocess and checks.input is None and not (quantized and sets):
        why = "none is given" if not sets else "no cell reads them (none is quantized)"
        lines.append(
            "--preprocess has no effect: it says how --input, --calibration and --eval images "
            f"become tensors, and {why}"
        )
    if checks.input is not None and checks.seed != 0:
        lines.append(
            f"--seed has no effect with --input: every framework is fed {checks.input.name}, "
            "not seeded tensors"
        )
    return lines


def warn_unused(config: RunConfig) -> None:
    for line in unused_settings(config):
        log.warning("warning: %s", line)
