"""The x86 RAPL package energy counter as an energy source.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from .energy_source import EnergySource, Reading, TelemetryUnavailable
from .sysfs import one_line, read_int, sysfs_path, try_int, try_text

RAPL_PERMISSION_HINT = (
    "RAPL energy_uj is readable only by root (CVE-2020-8694): run as root or "
    "`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj`"
)

RAPL_PACKAGE = "/sys/class/powercap/intel-rapl:0"


class Rapl(EnergySource):
    """x86 RAPL package-0 energy counter (µJ); wraps at ``max_energy_range_uj``.

    ``wrapped`` is True on a reading below the previous one; the host adds the range there.
    Take differences over a whole window: single 20 ms differences are noisy.
    """

    kind = "rapl"

    def __init__(self, root: str = "/") -> None:
        folder = sysfs_path(root, RAPL_PACKAGE)
        self.energy_path = os.path.join(folder, "energy_uj")
        self.range_path = os.path.join(folder, "max_energy_range_uj")
        if not os.path.exists(self.energy_path):
            raise TelemetryUnavailable(
                "rapl: %s is missing (not an x86 machine with RAPL, or the intel_rapl_msr "
                "module is not loaded: `sudo modprobe intel_rapl_msr`)" % self.energy_path
            )
        try:
            read_int(self.energy_path)
        except PermissionError as exc:
            raise TelemetryUnavailable(RAPL_PERMISSION_HINT) from exc
        except (OSError, ValueError) as exc:
            raise TelemetryUnavailable(
                "rapl: cannot read %s: %s" % (self.energy_path, one_line(exc))
            ) from exc
        max_range = try_int(self.range_path)
        self.max_energy_range_uj = max_range
        self.max_energy_range_j = max_range / 1e6 if max_range else None
        self.domain = try_text(os.path.join(folder, "name"))
        self._previous: Optional[int] = None

    def read(self) -> Reading:
        raw = read_int(self.energy_path)
        t_ns = time.monotonic_ns()
        wrapped = self._previous is not None and raw < self._previous
        self._previous = raw
        return Reading(t_ns, None, raw / 1e6, None, wrapped)

    def describe(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.energy_path,
            "domain": self.domain,
            "unit": "uJ",
            "max_energy_range_uj": self.max_energy_range_uj,
        }
