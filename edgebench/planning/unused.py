"""Settings that the rest of a run's configuration makes pointless.

Each gets one warning line on stderr, never an error: the run is still what was asked for,
but an option the user typed changed nothing, and they should know it and why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from edgebench.planning.cells import Cell
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


def unused_by_cells(config: RunConfig, cells: Sequence[Cell]) -> list[str]:
    """One line per setting that none of the planned ``cells`` takes up, saying why: these
    are known only once the devices are probed and the matrix is built."""
    lines: list[str] = []
    if config.breakdown.cuda_graphs and not any(c.cuda_graph for c in cells):
        engines = ", ".join(dict.fromkeys(f"{c.framework} on {c.backend}" for c in cells))
        lines.append(
            "--cuda-graphs has no effect: no cell runs on CUDA (this run has "
            f"{engines or 'no cell'}); it adds a CUDA Graphs variant to TensorRT cells and to "
            "ONNX Runtime's on cuda or tensorrt (--backends)"
        )
    return lines


def warn_unused(config: RunConfig, cells: Sequence[Cell] | None = None) -> None:
    """Warn of the settings that have no effect: those the configuration alone shows, or,
    given the planned ``cells``, those no cell takes up."""
    lines = unused_settings(config) if cells is None else unused_by_cells(config, cells)
    for line in lines:
        log.warning("warning: %s", line)
