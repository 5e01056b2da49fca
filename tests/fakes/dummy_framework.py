"""A framework added the way the recipes in docs/ARCHITECTURE.md say: one backend file in a
copy of the runner folder plus one registry entry, planned into a cell on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import frameworks
from edgebench.frameworks import FRAMEWORKS, Framework
from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_tree import DEVICE_PACKAGE, write_runner_tree
from edgebench.planning.cells import Cell
from edgebench.planning.config import TimingConfig
from fakes.local_cells import onnxruntime_cells
from fakes.models import save_double_model


def dummy_framework_cell(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    backend_source: str,
    timing: TimingConfig,
) -> tuple[Cell, LocalDevice]:
    """The one cell (and its device) of framework ``name`` (backend ``<name>_backend.py`` holding
    ``backend_source``) on the y = 2x model in ``tmp_path/double.onnx``, run by a runner
    copied to ``tmp_path/runners``."""
    entry = write_runner_tree(tmp_path / "runner")
    (entry.parent / DEVICE_PACKAGE / "backends" / f"{name}_backend.py").write_text(backend_source)
    monkeypatch.setattr(
        frameworks, "FRAMEWORKS", (*FRAMEWORKS, Framework(name, backend=f"{name}_backend"))
    )
    device = LocalDevice()
    device.runner_path = str(entry)
    double = save_double_model(tmp_path / "double.onnx")
    (cell,) = onnxruntime_cells(double, device, timing, framework=name)
    return cell, device
