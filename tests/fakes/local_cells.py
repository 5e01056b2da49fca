"""Cells planned the way `edgebench run` plans them, on this machine: one model, ONNX Runtime
(or another framework), one thread, all cores, measured by the Python runner."""

from __future__ import annotations

from pathlib import Path

from edgebench.lab.device import Device, LocalDevice
from edgebench.measure.methods.python_runner import PythonRunner
from edgebench.paths import cache_dir
from edgebench.planning.cells import Cell, build_cells, check_frameworks, resolve_inputs
from edgebench.planning.config import TimingConfig
from edgebench.planning.modelref import resolve_model

QUICK = TimingConfig(warmup=1, iterations=3, min_time_s=0.0)


def onnxruntime_cells(
    model_path: Path,
    device: Device | None = None,
    timing: TimingConfig = QUICK,
    framework: str = "onnxruntime",
) -> list[Cell]:
    """The cells of ``model_path`` under ``framework`` on ``device`` (this machine's by
    default)."""
    model = resolve_model(str(model_path), cache_dir())
    return build_cells(
        [device or LocalDevice()],
        [model],
        check_frameworks([framework]),
        inputs=resolve_inputs([model], []),
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=timing,
        availability=PythonRunner().availability,
    )
