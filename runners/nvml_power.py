"""An NVIDIA GPU's board power through NVML as an energy source: the total energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded, Volta and later) where
the GPU has one, else the power draw (``nvmlDeviceGetPowerUsage``, mW). Only the GPU's board:
the host's CPU and memory are not in it (describe() says so).

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import time
from typing import Any, Dict

from .energy_source import EnergySource, Reading, TelemetryUnavailable
from .nvidia_info import NvidiaUnavailable, Nvml


class NvmlPower(EnergySource):
    """GPU 0's board energy counter, or its power draw."""

    kind = "nvml"

    def __init__(self, index: int = 0) -> None:
        try:
            self.nvml = Nvml()
        except NvidiaUnavailable as exc:
            raise TelemetryUnavailable("nvml: %s" % exc) from exc
        self.index = index
        self.handle = self.nvml.handle(index)
        if self.handle is None:
            self.close()
            raise TelemetryUnavailable("nvml: no GPU %d" % index)
        first = self.nvml.sample(self.handle)
        self.counter = first["energy_mj"] is not None
        self.last_mj = first["energy_mj"]
        self.name = (self.nvml.device(index) or {}).get("name")

    def read(self) -> Reading:
        if self.handle is None:
            raise TelemetryUnavailable("nvml: closed")
        sample = self.nvml.sample(self.handle)
        energy = sample["energy_mj"] if self.counter else None
        wrapped = energy is not None and self.last_mj is not None and energy < self.last_mj
        self.last_mj = energy if energy is not None else self.last_mj
        return Reading(
            time.monotonic_ns(),
            None if self.counter else sample["power_w"],
            energy / 1000.0 if energy is not None else None,
            None,
            wrapped,
        )

    def close(self) -> None:
        if getattr(self, "nvml", None) is not None:
            self.nvml.close()
            self.nvml = None  # type: ignore[assignment]  # closed
        self.handle = None

    def describe(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "gpu": self.name,
            "index": self.index,
            "reads": "nvmlDeviceGetTotalEnergyConsumption (mJ counter)"
            if self.counter
            else "nvmlDeviceGetPowerUsage (mW)",
            "scope": "the GPU board only",
        }
