"""The Jetson INA3221 power monitors as an energy source: the input rail's power, or the sum of
the rails found.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, List, Tuple

from .energy_source import EnergySource, Reading, TelemetryUnavailable
from .sysfs import read_int, sysfs_glob, sysfs_path, try_text

I2C_DEVICES = "/sys/bus/i2c/devices"
INA_NAMES = ("ina3221", "ina3221x")  # JetPack 5+ mainline driver, JetPack 4 ina3221x driver
INA_TOTAL_RAILS = ("VDD_IN", "POM_5V_IN")
INA_SUM_CHANNEL = 7  # hwmon in7 = "sum of shunt voltages", not a rail


def ina_unconnected(label: str) -> bool:
    """A channel labelled NC (not connected): ``NC`` as a word of the label, so ``NC``,
    ``NC_2`` and ``rail NC`` are skipped but a rail such as ``VDD_SYNC`` is not."""
    return "NC" in re.split(r"[^A-Za-z0-9]+", label.upper())


class Ina3221(EnergySource):
    """Jetson INA3221 monitors. Total = the VDD_IN / POM_5V_IN rail when present, else the sum
    of every rail found (which may count nested rails twice: describe() says which was used).

    JetPack 5+: ``<i2c dev>/hwmon/hwmon*/in{N}_label``, ``in{N}_input`` (mV),
    ``curr{N}_input`` (mA); channels labelled ``NC`` and channel 7 are skipped.
    JetPack 4: ``<i2c dev>/iio:device*/rail_name_{N}``, ``in_power{N}_input`` (mW).
    """

    kind = "ina3221"

    def __init__(self, root: str = "/") -> None:
        devices = []
        for name_path in sysfs_glob(root, I2C_DEVICES + "/*/name"):
            if try_text(name_path) in INA_NAMES:
                devices.append(os.path.dirname(name_path))
        if not devices:
            raise TelemetryUnavailable(
                "ina3221: no %s/*/name reading ina3221 (not a Jetson, or the INA3221 driver is "
                "not loaded)" % sysfs_path(root, I2C_DEVICES)
            )
        # rail name -> ("hwmon", mV path, mA path) or ("iio", mW path)
        self.rails: List[Tuple[str, Tuple[str, ...]]] = []
        self.skipped: List[str] = []
        layouts = set()
        for device in devices:
            hwmon_labels = sysfs_glob(device, "hwmon/hwmon*/in*_label")
            if hwmon_labels:
                layouts.add("hwmon")
                self._add_hwmon(hwmon_labels)
            else:
                iio_names = sysfs_glob(device, "iio:device*/rail_name_*")
                if iio_names:
                    layouts.add("iio")
                    self._add_iio(iio_names)
        if not self.rails:
            raise TelemetryUnavailable(
                "ina3221: found %s but no readable rails (neither hwmon/hwmon*/in*_label nor "
                "iio:device*/rail_name_*)" % ", ".join(devices)
            )
        self.devices = devices
        self.layout = "+".join(sorted(layouts))
        self.total_rail = None
        for wanted in INA_TOTAL_RAILS:
            for name, _ in self.rails:
                if name == wanted:
                    self.total_rail = name
                    break
            if self.total_rail:
                break
        if self.total_rail:
            self._read_rails = [r for r in self.rails if r[0] == self.total_rail][:1]
        else:
            self._read_rails = list(self.rails)

    def _add_hwmon(self, labels: List[str]) -> None:
        for label_path in labels:
            base = os.path.basename(label_path)  # in{N}_label
            number = base[2 : -len("_label")]
            if not number.isdigit():
                continue
            label = try_text(label_path) or ""
            if int(number) == INA_SUM_CHANNEL:
                self.skipped.append("%s (sum channel)" % label_path)
                continue
            if not label or ina_unconnected(label):
                self.skipped.append("%s (%s)" % (label_path, label or "no label"))
                continue
            folder = os.path.dirname(label_path)
            volts = os.path.join(folder, "in%s_input" % number)
            amps = os.path.join(folder, "curr%s_input" % number)
            if not (os.path.exists(volts) and os.path.exists(amps)):
                self.skipped.append("%s (no in/curr input)" % label_path)
                continue
            self.rails.append((label, ("hwmon", volts, amps)))

    def _add_iio(self, names: List[str]) -> None:
        for name_path in names:
            number = os.path.basename(name_path)[len("rail_name_") :]
            label = try_text(name_path) or ""
            power = os.path.join(os.path.dirname(name_path), "in_power%s_input" % number)
            if not label or ina_unconnected(label) or not os.path.exists(power):
                self.skipped.append("%s (%s)" % (name_path, label or "no label"))
                continue
            self.rails.append((label, ("iio", power)))

    @staticmethod
    def _rail_power_w(paths: Tuple[str, ...]) -> float:
        if paths[0] == "hwmon":
            return read_int(paths[1]) * read_int(paths[2]) / 1e6  # mV x mA = µW
        return read_int(paths[1]) / 1e3  # mW

    def read(self) -> Reading:
        total = 0.0
        for _, paths in self._read_rails:
            total += self._rail_power_w(paths)
        return Reading(time.monotonic_ns(), total, None, None, False)

    def describe(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "layout": self.layout,
            "devices": list(self.devices),
            "rails": [
                {
                    "name": name,
                    "paths": list(paths[1:]),
                    "units": "mV,mA" if paths[0] == "hwmon" else "mW",
                }
                for name, paths in self.rails
            ],
            "skipped": list(self.skipped),
            "total": ("rail %s" % self.total_rail)
            if self.total_rail
            else "sum of rails %s" % ", ".join(name for name, _ in self.rails),
        }
