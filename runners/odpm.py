"""The Pixel on-device power monitor (ODPM) as an energy source: accumulated energy per rail.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import fnmatch
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .energy_source import EnergySource, Reading, TelemetryUnavailable
from .sysfs import one_line, read_bytes, sysfs_glob, sysfs_path

ODPM_GLOB = "/sys/bus/iio/devices/iio:device*/energy_value"
# drivers/iio/power/odpm.c (Pixel 6+ kernels), energy_value_show():
#   t=<measurement timestamp, ms>
#   CH<N>(T=<duration, ms>)[<schematic name>], <accumulated energy, uWs>
ODPM_LINE = re.compile(r"^(CH\d+)(?:\(T=(\d+)\))?\[([^\]]*)\],\s*(-?\d+)\s*$")


def parse_odpm(text: str) -> Tuple[Optional[int], List[Tuple[str, str, int]]]:
    """(timestamp ms, [(channel, rail, µWs)]) of one energy_value file."""
    t_ms = None
    rails = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("t="):
            t_ms = int(line[2:])
            continue
        match = ODPM_LINE.match(line)
        if match:
            rails.append((match.group(1), match.group(3), int(match.group(4))))
    return t_ms, rails


class AndroidOdpm(EnergySource):
    """Pixel ODPM: accumulated µWs per rail in ``iio:device*/energy_value``; energy_j = sum.

    Pixels have two PMICs (main and sub), each an iio device with 8 channels; all are summed,
    or only the rails named in ``rails`` (fnmatch patterns on the schematic name).
    """

    kind = "android_odpm"

    def __init__(self, root: str = "/", rails: Optional[Sequence[str]] = None) -> None:
        self.paths = sysfs_glob(root, ODPM_GLOB)
        if not self.paths:
            raise TelemetryUnavailable(
                "android_odpm: no %s (not a Pixel 6+ or the ODPM driver is not loaded; use "
                "android_fuel_gauge)" % sysfs_path(root, ODPM_GLOB)
            )
        self.patterns = list(rails) if rails else None
        self.devices: List[Dict[str, Any]] = []
        self.selected: List[List[int]] = []  # per device, indices of the channels summed
        self.last_t_ms: List[Optional[int]] = []
        for path in self.paths:
            try:
                text = read_bytes(path).decode("utf-8", "replace")
            except PermissionError as exc:
                raise TelemetryUnavailable(
                    "android_odpm: %s is not readable by this user (run through `adb shell` "
                    "or `adb root`)" % path
                ) from exc
            except OSError as exc:
                raise TelemetryUnavailable(
                    "android_odpm: cannot read %s: %s" % (path, one_line(exc))
                ) from exc
            t_ms, channels = parse_odpm(text)
            if not channels:
                raise TelemetryUnavailable(
                    "android_odpm: %s has no CH<N>(T=..)[rail], <uWs> lines" % path
                )
            keep = [
                index
                for index, (_, name, _) in enumerate(channels)
                if self.patterns is None or any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
            ]
            self.devices.append(
                {
                    "path": path,
                    "rails": [{"channel": ch, "name": name} for ch, name, _ in channels],
                    "selected": [channels[i][1] for i in keep],
                }
            )
            self.selected.append(keep)
            self.last_t_ms.append(t_ms)
        if not any(self.selected):
            available = sorted({r["name"] for d in self.devices for r in d["rails"]})
            raise TelemetryUnavailable(
                "android_odpm: no rail matches %s (available: %s)"
                % (", ".join(self.patterns or []), ", ".join(available))
            )
        # The counters are 64-bit and do not wrap, but a channel restarts at 0 when another rail
        # is assigned to it (enabled_rails): its last value is then folded into an offset so the
        # sum stays monotonic, and the restart is counted in describe().
        self._previous: Dict[Tuple[int, int], int] = {}
        self._offset_uws = 0
        self.channel_restarts = 0

    def read(self) -> Reading:
        total_uws = self._offset_uws
        previous = self._previous
        for index, path in enumerate(self.paths):
            t_ms, channels = parse_odpm(read_bytes(path).decode("utf-8", "replace"))
            self.last_t_ms[index] = t_ms
            for channel in self.selected[index]:
                value = channels[channel][2]
                key = (index, channel)
                last = previous.get(key)
                if last is not None and value < last:
                    self._offset_uws += last
                    total_uws += last
                    self.channel_restarts += 1
                previous[key] = value
                total_uws += value
        return Reading(time.monotonic_ns(), None, total_uws / 1e6, None, False)

    def describe(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "unit": "uWs",
            "devices": [dict(d) for d in self.devices],
            "rails_selected": self.patterns or "all",
            "device_t_ms": list(self.last_t_ms),
            "channel_restarts": self.channel_restarts,
        }
