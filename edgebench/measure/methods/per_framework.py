"""The method of a device whose lab entry says ``runner = "auto"``: each framework through the
runner ``Device.runner_for`` names. On a device that runs Python that is the Python runner,
except for a framework with no Python runtime (TNN), which goes to the edgebench-native build
for the device's ABI when that build links it; a device without Python has one runner for
all."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from edgebench.lab.device import Device
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.measure.methods.base import Method, Visit
from edgebench.planning.cells import Cell, Verdict
from edgebench.results.records import Record


class PerFramework:
    kind = RunnerKind.AUTO

    def __init__(self, methods: Mapping[RunnerKind, Method]) -> None:
        self.methods = methods

    def _method(self, device: Device, framework: str) -> tuple[Method, bool]:
        """The method for ``framework`` on ``device``, and whether it is not the device's own
        runner (a framework Python cannot run, measured by the native build)."""
        choice = device.runner_for(framework)
        kind = choice.kind if choice is not None else RunnerKind.PYTHON
        return self.methods[kind], choice is not None and choice is not device.runner

    def availability(self, device: Device, framework: str) -> Verdict | None:
        method, aside = self._method(device, framework)
        if aside:
            return None  # Device.runner_for routes here only when the build links it
        return method.availability(device, framework)

    def visit(self, cell: Cell, device: Device, visit: Visit) -> Record:
        method, aside = self._method(device, cell.framework)
        record = method.visit(cell, device, visit)
        if aside:
            choice = device.runner_for(cell.framework)
            assert choice is not None
            # The device's facts name its own runner; this cell's is another.
            ran_by = {"runner": choice.label(), "runner_choice": choice.why}
            return replace(record, device_info={**record.device_info, **ran_by})
        return record
