"""Measurement methods: one per way of measuring a cell on a device.

``METHODS`` maps each runner kind (lab/runner_kinds.py) but ``auto`` to its method;
``method_for`` picks a device's method once, when the run opens its devices: an ``auto``
device's method picks per framework (methods/per_framework.py).
"""

from __future__ import annotations

from edgebench.errors import UserError
from edgebench.lab.device import Device
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.measure.methods.base import Method, Visit
from edgebench.measure.methods.edgebench_native import EdgebenchNative
from edgebench.measure.methods.framework_tools import FrameworkTools
from edgebench.measure.methods.per_framework import PerFramework
from edgebench.measure.methods.python_runner import PythonRunner

METHODS: dict[RunnerKind, Method] = {
    RunnerKind.PYTHON: PythonRunner(),
    RunnerKind.FRAMEWORK_TOOLS: FrameworkTools(),
    RunnerKind.EDGEBENCH_NATIVE: EdgebenchNative(),
}


PER_FRAMEWORK = PerFramework(METHODS)


def method_for(device: Device) -> Method:
    if device.requested_runner == RunnerKind.AUTO:
        # Resolved by the device's probe; a device that never answered keeps "auto" and its
        # cells fail with the reason, through the Python runner's method.
        return PER_FRAMEWORK
    kind = device.runner_kind
    if kind not in METHODS:
        raise UserError(
            f"device {device.name}: unknown runner {kind!r}; choose from {', '.join(METHODS)}"
        )
    return METHODS[kind]


__all__ = ["METHODS", "Method", "Visit", "method_for"]
