"""The Android battery fuel gauge as an energy source: current x voltage, units detected from
the readings' magnitude, and whether a charger was connected at each reading.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional, Tuple

from .energy_source import EnergySource, Reading, TelemetryUnavailable
from .protocol.telemetry import (
    CURRENT_MA_BELOW,
    UNIT_SCALE,
    VOLTAGE_MV_BELOW,
    VOLTAGE_V_BELOW,
    detect_current_unit,
    detect_voltage_unit,
)
from .sysfs import read_int, sysfs_path, try_int, try_text

POWER_SUPPLY = "/sys/class/power_supply"
CHARGER_SUPPLIES = ("usb", "ac", "wireless")


class AndroidFuelGauge(EnergySource):
    """Battery current x voltage. power_w = |I| x V; the raw sign is reported in describe().

    While a charger is connected the battery current includes the charging current (and its sign
    flips on most devices), so every reading carries ``charging``: status ``Charging`` or any of
    usb/ac/wireless ``online`` == 1.
    """

    kind = "android_fuel_gauge"

    def __init__(
        self,
        root: str = "/",
        current_unit: Optional[str] = None,
        voltage_unit: Optional[str] = None,
    ) -> None:
        battery = sysfs_path(root, POWER_SUPPLY + "/battery")
        self.current_path = os.path.join(battery, "current_now")
        self.voltage_path = os.path.join(battery, "voltage_now")
        for path in (self.current_path, self.voltage_path):
            if not os.path.exists(path):
                raise TelemetryUnavailable(
                    "android_fuel_gauge: %s is missing (no battery fuel gauge on this device; "
                    "use another energy source or none)" % path
                )
            if not os.access(path, os.R_OK):
                raise TelemetryUnavailable(
                    "android_fuel_gauge: %s is not readable by this user (run as root or "
                    "through adb shell)" % path
                )
        for unit, allowed in ((current_unit, ("A", "mA", "uA")), (voltage_unit, ("V", "mV", "uV"))):
            if unit is not None and unit not in allowed:
                raise TelemetryUnavailable("android_fuel_gauge: unknown unit %r" % unit)
        self.current_unit = current_unit
        self.voltage_unit = voltage_unit
        self.units_given = {
            "current": current_unit is not None,
            "voltage": voltage_unit is not None,
        }
        self._i_scale = UNIT_SCALE[current_unit] if current_unit else None
        self._v_scale = UNIT_SCALE[voltage_unit] if voltage_unit else None
        self.status_path = os.path.join(battery, "status")
        self.has_status = os.path.exists(self.status_path)
        self.online_paths: List[Tuple[str, str]] = []
        for name in CHARGER_SUPPLIES:
            path = sysfs_path(root, "%s/%s/online" % (POWER_SUPPLY, name))
            if os.path.exists(path):
                self.online_paths.append((name, path))
        self.first_raw: Optional[Dict[str, Any]] = None
        self.sign_counts = {"negative": 0, "positive": 0, "zero": 0}
        #: Indicators that said "charging" on at least one reading, in the order first seen.
        self.charging_via: List[str] = []

    def charging_state(self) -> Tuple[Optional[bool], Optional[str]]:
        """(charging, which indicator said so); (None, None) when there is no indicator."""
        known = False
        if self.has_status:
            status = try_text(self.status_path)
            if status is not None:
                known = True
                if status == "Charging":
                    return True, "battery/status"
        for name, path in self.online_paths:
            online = try_int(path)
            if online is not None:
                known = True
                if online == 1:
                    return True, name + "/online"
        return (False, None) if known else (None, None)

    def read(self) -> Reading:
        i_raw = read_int(self.current_path)
        v_raw = read_int(self.voltage_path)
        t_ns = time.monotonic_ns()
        charging, via = self.charging_state()
        if via is not None and via not in self.charging_via:
            self.charging_via.append(via)
        if i_raw < 0:
            self.sign_counts["negative"] += 1
        elif i_raw > 0:
            self.sign_counts["positive"] += 1
        else:
            self.sign_counts["zero"] += 1
        if self.first_raw is None:
            self.first_raw = {
                "current_now": i_raw,
                "voltage_now": v_raw,
                "charging": charging,
                "charging_via": via,
            }
        if self._v_scale is None and v_raw != 0:
            self.voltage_unit = detect_voltage_unit(v_raw)
            self._v_scale = UNIT_SCALE[self.voltage_unit]
        if self._i_scale is None and i_raw != 0:
            self.current_unit = detect_current_unit(i_raw)
            self._i_scale = UNIT_SCALE[self.current_unit]
        if i_raw == 0:
            power: Optional[float] = 0.0
        elif self._v_scale is None:
            power = None  # voltage 0: the gauge is not reporting
        else:
            assert self._i_scale is not None  # set above: i_raw is not 0
            power = abs(i_raw) * self._i_scale * abs(v_raw) * self._v_scale
        return Reading(t_ns, power, None, charging, False)

    def describe(self) -> Dict[str, Any]:
        first = self.first_raw or {}
        first_i = first.get("current_now")
        raw_sign = None
        if first_i is not None:
            raw_sign = "negative" if first_i < 0 else "positive" if first_i > 0 else "zero"
        return {
            "kind": self.kind,
            "current_path": self.current_path,
            "voltage_path": self.voltage_path,
            "current_unit": self.current_unit,
            "voltage_unit": self.voltage_unit,
            "units_given": dict(self.units_given),
            "unit_thresholds": {
                "voltage_V_below": VOLTAGE_V_BELOW,
                "voltage_mV_below": VOLTAGE_MV_BELOW,
                "current_mA_below": CURRENT_MA_BELOW,
            },
            "power": "abs(current) * voltage",
            # The sign convention differs between devices: the raw sign of the first reading,
            # with whether a charger was connected then, lets the host calibrate it per device.
            "raw_sign": raw_sign,
            "raw_sign_counts": dict(self.sign_counts),
            "first_raw": dict(first),
            "charging_indicators": (["battery/status"] if self.has_status else [])
            + [name + "/online" for name, _ in self.online_paths],
            "charging_via": list(self.charging_via),
        }
