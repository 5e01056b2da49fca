"""A framework added the way the recipes in docs/ARCHITECTURE.md say: one backend file in a
copy of the runner folder plus one registry entry, planned into a cell on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import frameworks
from edgebench.frameworks import FRAMEWORKS, Framework
from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_tree import DEVICE_PACKAGE, write_runner_tree
from edgebench.measure.methods.python_runner import PythonRunner
from edgebench.paths import cache_dir
from edgebench.planning.cells import Cell, build_cells, check_frameworks, resolve_inputs
from edgebench.planning.config import TimingConfig
from edgebench.planning.modelref import resolve_model
from fakes.models import save_double_model


def dummy_framework_cell(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    backend_source: str,
    timing: TimingConfig,
) -> Cell:
    """The one cell of framework ``name`` (backend ``<name>_backend.py`` holding
    ``backend_source``) on the y = 2x model in ``tmp_path/double.onnx``, run by a runner
    copied to ``tmp_path/runners``."""
    entry = write_runner_tree(tmp_path / "runner")
    (entry.parent / DEVICE_PACKAGE / "backends" / f"{name}_backend.py").write_text(backend_source)
    monkeypatch.setattr(
        frameworks, "FRAMEWORKS", (*FRAMEWORKS, Framework(name, backend=f"{name}_backend"))
    )
    device = LocalDevice()
    device.runner_path = str(entry)
    model = resolve_model(str(save_double_model(tmp_path / "double.onnx")), cache_dir())
    (cell,) = build_cells(
        [device],
        [model],
        check_frameworks([name]),
        inputs=resolve_inputs([model], []),
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=timing,
        availability=PythonRunner().availability,
    )
    return cell
