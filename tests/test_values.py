"""Plans and results are values: a cell and a record are frozen, and no module writes into a
live device from outside the device's own module (it asks the device's methods instead)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from fakes.records import sampled_record

from edgebench.planning.cells import Cell
from edgebench.results.record_warnings import CORES_NOT_APPLIED
from edgebench.results.records import Record

REPO = Path(__file__).resolve().parent.parent
#: Where a device's attributes may be assigned: its own module and its subclasses' own
#: constructors (``self.x = ...`` is never flagged).
DEVICE_MODULE = REPO / "edgebench" / "lab" / "device.py"


def _device_like(name: str) -> bool:
    return name in ("device", "dev") or name.endswith("_device")


def _unpacked(target: ast.expr) -> list[ast.expr]:
    """The names assigned by one target (``a, b.c = ...`` assigns ``a`` and ``b.c``)."""
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value)
    return [target]


def assignments_into_devices(root: Path) -> list[str]:
    """``file:line device.attr = ...`` for every assignment to an attribute of a variable
    named as a device, outside ``DEVICE_MODULE``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == DEVICE_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = [t for target in node.targets for t in _unpacked(target)]
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and _device_like(target.value.id)
                ):
                    where = path.relative_to(root.parent) if root.parent in path.parents else path
                    found.append(f"{where}:{node.lineno} {target.value.id}.{target.attr} = ...")
    return found


def test_cells_and_records_are_frozen():
    assert Cell.__dataclass_params__.frozen  # type: ignore[attr-defined]  # set by dataclass
    assert Record.__dataclass_params__.frozen  # type: ignore[attr-defined]  # set by dataclass


def test_a_record_step_returns_a_new_record_and_leaves_the_old_one():
    record = sampled_record("phone", "ncnn", 10.0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = "failed"  # type: ignore[misc]  # the write this test proves refused
    warned = record.with_warnings(CORES_NOT_APPLIED.make(asked=[0], effective=[1]))
    assert [w.kind for w in warned.warnings] == [CORES_NOT_APPLIED.name] and not record.warnings
    traced = record.with_part("telemetry", {"t_perf_ns": [1, 2]})
    assert traced.telemetry is not None and record.telemetry is None
    # A part that does not read is left out of the new record, as a stored one would be.
    assert record.with_part("telemetry", {"t_perf_ns": "soon"}).telemetry is None


def test_no_module_writes_into_a_live_device():
    assert assignments_into_devices(REPO / "edgebench") == []


def test_the_device_scan_finds_a_write_from_outside(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "outside.py").write_text(
        "def f(device, phone_device, lock):\n"
        "    device.inventory = 1\n"
        "    phone_device.cluster, x = 2, 3\n"
        "    device.lock.run_id = 4\n"  # the lock's own attribute, not the device's
        "    lock.owner = 5\n"
    )
    assert assignments_into_devices(package) == [
        "pkg/outside.py:2 device.inventory = ...",
        "pkg/outside.py:3 phone_device.cluster = ...",
    ]
