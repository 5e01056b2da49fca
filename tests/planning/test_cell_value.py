"""A planned cell is a value: it names its device by a snapshot, never holds the live device,
and nothing writes into it once built."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from fakes.local_cells import onnxruntime_cells

from edgebench.lab.device import Device, LocalDevice
from edgebench.lab.device_snapshot import DeviceSnapshot
from edgebench.paths import cache_dir
from edgebench.planning.limits import check_memory
from edgebench.planning.variants import Breakdown, expand


def _holds_a_device(value: object, depth: int = 0) -> bool:
    if isinstance(value, Device):
        return True
    if depth > 6:
        return False
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(
            _holds_a_device(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        )
    if isinstance(value, list | tuple):
        return any(_holds_a_device(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_a_device(v, depth + 1) for v in value.values())
    return False


def test_a_cell_names_its_device_by_a_snapshot_and_round_trips_as_a_value(conv_model):
    device = LocalDevice()
    (cell,) = onnxruntime_cells(conv_model, device)
    assert isinstance(cell.device, DeviceSnapshot) and not _holds_a_device(cell)
    assert cell.device.name == "local" and cell.device.facts == device.facts()
    # A live device has no equality of its own: a copy of a cell holding one would differ.
    copy = pickle.loads(pickle.dumps(cell))
    assert copy == cell and copy.cell_id == cell.cell_id


def test_nothing_writes_into_a_planned_cell(conv_model):
    (cell,) = onnxruntime_cells(conv_model, LocalDevice())
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.verdict = None  # type: ignore[misc]  # the assignment this test proves refused
    # Planning steps return new cells and leave the ones they were given as they were.
    before = dataclasses.replace(cell)
    (expanded,) = expand([cell], Breakdown(stages=False, profile_ops=4), cache_dir())
    assert (expanded.stages, expanded.profile_ops) == (False, 4)
    assert cell == before and (cell.stages, cell.profile_ops) == (True, 0)
    (checked,) = check_memory([cell])
    assert checked == cell


def test_an_unreachable_device_is_a_snapshot_without_facts(conv_model):
    device = LocalDevice(name="gone")
    device.mark_unreachable("no route to host")
    (cell,) = onnxruntime_cells(conv_model, device)
    assert cell.device == DeviceSnapshot("gone", "no route to host", None, None)
    assert cell.verdict is not None and cell.verdict[2] == "no route to host"
