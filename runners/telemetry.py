"""Energy, frequency and temperature telemetry, sampled on the device beside the timed loop.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.

Every sysfs path is read under a ``root`` prefix (default ``/``), so the same code reads a real
device or a synthetic tree laid out like one. Nothing here is summarised: the trace keeps the raw
samples and the host recomputes energy per inference from them (``edgebench.energy``).

Energy sources (``make_source(kind)``):

- ``android_fuel_gauge``: battery ``current_now`` x ``voltage_now`` (instantaneous power).
- ``android_odpm``: Pixel on-device power monitor, accumulated energy per rail (a counter).
- ``ina3221``: Jetson power monitor, instantaneous power of the input rail (or the sum of rails).
- ``rapl``: x86 package energy counter, which wraps at ``max_energy_range_uj``.
- ``none``: no energy; frequencies and temperatures are still sampled.
- ``auto``: the first of odpm, fuel gauge, ina3221, rapl that gives a valid reading, else none.
"""

from __future__ import annotations

import fnmatch
import glob
import math
import os
import re
import threading
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

TRACE_SCHEMA = "edgebench.telemetry/1"
SOURCE_KINDS = ("auto", "android_odpm", "android_fuel_gauge", "ina3221", "rapl", "none")
AUTO_ORDER = ("android_odpm", "android_fuel_gauge", "ina3221", "rapl")

DEFAULT_PERIOD_S = 0.02
#: Sampling faster than this costs more than it tells: sysfs sources update every 10 ms or slower.
MIN_PERIOD_S = 0.005
DEFAULT_MAX_SAMPLES = 200000
MAX_ZONES = 16
MAX_ERRORS = 20

# Fuel gauge unit detection, by magnitude of the raw integer (the kernel ABI says µV/µA; some
# vendor drivers report mV/mA). A phone battery sits at 3-5 V (9 V for two cells) and draws
# 1 mA-10 A.
#: |voltage_now| below this is in V (no known driver does it, but then it cannot be mV or µV).
VOLTAGE_V_BELOW = 100
#: |voltage_now| below this is in mV (3850 = 3.85 V); at or above, µV (3850000 = 3.85 V).
VOLTAGE_MV_BELOW = 100000
#: |current_now| below this is in mA (up to 10 A); at or above, µA (10 mA or more). A µA reading
#: under 10 mA (deep idle, screen off) would be misread as mA: the unit is therefore decided on
#: the first non-zero reading of the source (a benchmark keeps the device awake) and kept; pass
#: ``current_unit`` to override it.
CURRENT_MA_BELOW = 10000

UNIT_SCALE = {"V": 1.0, "mV": 1e-3, "uV": 1e-6, "A": 1.0, "mA": 1e-3, "uA": 1e-6}

RAPL_PERMISSION_HINT = (
    "RAPL energy_uj is readable only by root (CVE-2020-8694): run as root or "
    "`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj`"
)


class TelemetryUnavailable(Exception):
    """The requested source cannot be read here; the message says what is missing and the fix."""


class Reading(NamedTuple):
    """One reading of an energy source; fields a source does not measure are None."""

    t_ns: int  # time.monotonic_ns() right after the files were read
    power_w: Optional[float]  # instantaneous power
    energy_j: Optional[float]  # accumulated counter, raw (not unwrapped)
    charging: Optional[bool]  # None when the source cannot tell
    wrapped: bool  # the counter is below its previous reading (it wrapped)


# --- cheap sysfs reads -----------------------------------------------------------------------


def sysfs_path(root: str, path: str) -> str:
    """``path`` (absolute, as on the device) under the ``root`` prefix."""
    return os.path.join(root, path.lstrip("/"))


def sysfs_glob(root: str, pattern: str) -> List[str]:
    """Paths matching ``pattern`` under ``root``, numeric parts sorted as numbers."""
    found = glob.glob(os.path.join(glob.escape(root), pattern.lstrip("/")))
    return sorted(found, key=_natural_key)


def _natural_key(text: str) -> List[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def read_bytes(path: str) -> bytes:
    """One read(2) of a sysfs attribute (a sysfs show() returns at most a page)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 8192)
    finally:
        os.close(fd)


def read_int(path: str) -> int:
    return int(read_bytes(path))  # int() accepts bytes and ignores the trailing newline


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8", "replace").strip()


def try_text(path: str) -> Optional[str]:
    try:
        return read_text(path)
    except (OSError, ValueError):
        return None


def try_int(path: str) -> Optional[int]:
    try:
        return read_int(path)
    except (OSError, ValueError):
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


# --- energy sources --------------------------------------------------------------------------


class EnergySource:
    """Instantaneous power, an accumulated energy counter, or both."""

    kind = ""
    #: Range of the energy counter in J, when it wraps (the host adds it at each wrap).
    max_energy_range_j: Optional[float] = None

    def describe(self) -> Dict[str, Any]:
        """What was found: paths, units, rails (JSON-serializable, includes ``kind``)."""
        raise NotImplementedError

    def read(self) -> Reading:
        raise NotImplementedError

    def probe(self) -> Reading:
        """One read that must give a finite power or energy, else TelemetryUnavailable."""
        try:
            reading = self.read()
        except TelemetryUnavailable:
            raise
        except (OSError, ValueError) as exc:
            raise TelemetryUnavailable(
                "%s: first reading failed: %s" % (self.kind, _one_line(exc))
            ) from exc
        values = [v for v in (reading.power_w, reading.energy_j) if v is not None]
        if not values or not all(math.isfinite(v) for v in values):
            raise TelemetryUnavailable("%s: first reading gave no power or energy" % self.kind)
        return reading


class NoneSource(EnergySource):
    """No energy measurement; ``reasons`` says why each probed source was not used."""

    kind = "none"

    def __init__(self, reasons: Optional[Dict[str, str]] = None) -> None:
        self.reasons = dict(reasons or {})

    def describe(self) -> Dict[str, Any]:
        info: Dict[str, Any] = {"kind": self.kind}
        if self.reasons:
            info["reasons"] = dict(self.reasons)
            info["reason"] = "no energy source: " + "; ".join(
                "%s: %s" % item for item in self.reasons.items()
            )
        else:
            info["reason"] = "energy measurement not requested (source none)"
        return info

    def read(self) -> Reading:
        return Reading(time.monotonic_ns(), None, None, None, False)


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

    @staticmethod
    def detect_voltage_unit(raw: int) -> str:
        value = abs(raw)
        if value < VOLTAGE_V_BELOW:
            return "V"
        if value < VOLTAGE_MV_BELOW:
            return "mV"
        return "uV"

    @staticmethod
    def detect_current_unit(raw: int) -> str:
        return "mA" if abs(raw) < CURRENT_MA_BELOW else "uA"

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
            self.voltage_unit = self.detect_voltage_unit(v_raw)
            self._v_scale = UNIT_SCALE[self.voltage_unit]
        if self._i_scale is None and i_raw != 0:
            self.current_unit = self.detect_current_unit(i_raw)
            self._i_scale = UNIT_SCALE[self.current_unit]
        if i_raw == 0:
            power: Optional[float] = 0.0
        elif self._v_scale is None:
            power = None  # voltage 0: the gauge is not reporting
        else:
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
                    "android_odpm: cannot read %s: %s" % (path, _one_line(exc))
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
                "rapl: cannot read %s: %s" % (self.energy_path, _one_line(exc))
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


def make_source(
    kind: str,
    root: str = "/",
    rails: Optional[Sequence[str]] = None,
    current_unit: Optional[str] = None,
    voltage_unit: Optional[str] = None,
) -> EnergySource:
    """The energy source ``kind``, probed with one reading; TelemetryUnavailable if unusable.

    ``auto`` never raises: it returns the first working source of ``AUTO_ORDER`` (its describe()
    lists why earlier ones were skipped under ``auto_skipped``) or a NoneSource with the reasons.
    ``rails`` selects ODPM rails; ``current_unit``/``voltage_unit`` override the fuel gauge's
    unit detection.
    """
    if kind == "none":
        return NoneSource()
    if kind == "auto":
        reasons: Dict[str, str] = {}
        for candidate in AUTO_ORDER:
            try:
                chosen = make_source(candidate, root, rails, current_unit, voltage_unit)
            except TelemetryUnavailable as exc:
                reasons[candidate] = _one_line(exc)
                continue
            return _AutoChosen(chosen, reasons)
        return NoneSource(reasons)
    if kind == "android_fuel_gauge":
        source: EnergySource = AndroidFuelGauge(root, current_unit, voltage_unit)
    elif kind == "android_odpm":
        source = AndroidOdpm(root, rails)
    elif kind == "ina3221":
        source = Ina3221(root)
    elif kind == "rapl":
        source = Rapl(root)
    else:
        raise TelemetryUnavailable(
            "unknown energy source %r (known: %s)" % (kind, ", ".join(SOURCE_KINDS))
        )
    source.probe()
    return source


class _AutoChosen(EnergySource):
    """The source ``auto`` picked, with the reasons the earlier candidates were skipped."""

    def __init__(self, source: EnergySource, skipped: Dict[str, str]) -> None:
        self.inner = source
        self.kind = source.kind
        self.max_energy_range_j = source.max_energy_range_j
        self.skipped = dict(skipped)

    def read(self) -> Reading:
        return self.inner.read()

    def describe(self) -> Dict[str, Any]:
        info = self.inner.describe()
        info["auto"] = True
        info["auto_skipped"] = dict(self.skipped)
        return info


# --- frequencies and temperatures ------------------------------------------------------------

CPU_DIR = "/sys/devices/system/cpu"
THERMAL_DIR = "/sys/class/thermal"


def list_cpus(root: str = "/") -> List[int]:
    cpus = []
    for path in sysfs_glob(root, CPU_DIR + "/cpu[0-9]*"):
        name = os.path.basename(path)[3:]
        if name.isdigit():
            cpus.append(int(name))
    return sorted(cpus)


def cpufreq_path(root: str, cpu: int, attribute: str) -> str:
    return sysfs_path(root, "%s/cpu%d/cpufreq/%s" % (CPU_DIR, cpu, attribute))


def find_zones(
    root: str = "/", names: Optional[Sequence[str]] = None, cap: int = MAX_ZONES
) -> List[Tuple[str, str]]:
    """[(key, temp path)] of the thermal zones whose ``type`` matches one of ``names``
    (fnmatch patterns such as ``cpu_*``); all zones when ``names`` is empty; at most ``cap``.
    The key is the zone type, or ``type@thermal_zoneN`` when two zones share a type."""
    zones = []
    seen = set()
    for folder in sysfs_glob(root, THERMAL_DIR + "/thermal_zone*"):
        zone_type = try_text(os.path.join(folder, "type"))
        temp = os.path.join(folder, "temp")
        if not zone_type or not os.path.exists(temp):
            continue
        if names and not any(fnmatch.fnmatchcase(zone_type, pattern) for pattern in names):
            continue
        key = zone_type
        if key in seen:
            key = "%s@%s" % (zone_type, os.path.basename(folder))
        seen.add(key)
        zones.append((key, temp))
        if len(zones) >= cap:
            break
    return zones


def read_state(
    root: str = "/",
    cpus: Optional[Sequence[int]] = None,
    zone_names: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """One-shot snapshot for before/after-cell records and cool-down: per cpu the governor and
    cur/max frequencies (kHz), and temperatures (°C) by zone type. ``cpus`` None = all cpus."""
    if cpus is None:
        cpus = list_cpus(root)
    per_cpu: Dict[str, Dict[str, Any]] = {}
    for cpu in cpus:
        per_cpu[str(cpu)] = {
            "governor": try_text(cpufreq_path(root, cpu, "scaling_governor")),
            "cur_khz": try_int(cpufreq_path(root, cpu, "scaling_cur_freq")),
            "max_khz": try_int(cpufreq_path(root, cpu, "cpuinfo_max_freq")),
            "scaling_max_khz": try_int(cpufreq_path(root, cpu, "scaling_max_freq")),
        }
    temps: Dict[str, Optional[float]] = {}
    for key, path in find_zones(root, zone_names):
        milli = try_int(path)
        temps[key] = None if milli is None else milli / 1000.0
    return {
        "t_mono_ns": time.monotonic_ns(),
        "t_perf_ns": time.perf_counter_ns(),
        "cpus": per_cpu,
        "temp_c": temps,
    }


# --- sampling --------------------------------------------------------------------------------


class _Errors:
    """Distinct error messages with counts, bounded."""

    def __init__(self) -> None:
        self.counts: Dict[str, int] = {}

    def add(self, message: str) -> None:
        if message in self.counts:
            self.counts[message] += 1
        elif len(self.counts) < MAX_ERRORS:
            self.counts[message] = 1

    def as_list(self) -> List[str]:
        return [m if n == 1 else "%s (x%d)" % (m, n) for m, n in self.counts.items()]


def idle_baseline(
    source: EnergySource, seconds: float = 5.0, period_s: float = 0.05
) -> Dict[str, Any]:
    """Average idle power over ``seconds`` (run it before the model loads).

    From power readings (their mean) when the source gives power, else from the energy counter
    (difference over elapsed time, wraps corrected with the counter's range).
    """
    period_s = max(float(period_s), MIN_PERIOD_S)
    errors = _Errors()
    powers: List[float] = []
    energy: List[Tuple[int, float, bool]] = []
    charging = False
    samples = 0
    start = time.monotonic()
    deadline = start + max(float(seconds), 0.0)
    next_t = start
    while True:
        try:
            reading = source.read()
        except Exception as exc:
            errors.add(_one_line(exc))
        else:
            samples += 1
            if reading.power_w is not None:
                powers.append(reading.power_w)
            if reading.energy_j is not None:
                energy.append((reading.t_ns, reading.energy_j, reading.wrapped))
            charging = charging or bool(reading.charging)
        now = time.monotonic()
        if now >= deadline:
            break
        next_t += period_s
        if next_t < now:
            next_t = now
        time.sleep(min(next_t - now, deadline - now))
    elapsed = time.monotonic() - start
    power = None
    method = None
    if powers:
        power = sum(powers) / len(powers)
        method = "mean of power readings"
    elif len(energy) >= 2 and energy[-1][0] > energy[0][0]:
        joules = 0.0
        for k in range(1, len(energy)):
            e0, (_, e1, wrapped) = energy[k - 1][1], energy[k]
            if wrapped or e1 < e0:
                if source.max_energy_range_j:
                    joules += source.max_energy_range_j - e0 + e1
                else:
                    errors.add("energy counter went backwards without a known range")
            else:
                joules += e1 - e0
        power = joules / ((energy[-1][0] - energy[0][0]) / 1e9)
        method = "energy counter difference / time"
    return {
        "power_w": power,
        "method": method,
        "samples": samples,
        "seconds": elapsed,
        "period_s": period_s,
        "charging": charging,
        "errors": errors.as_list(),
    }


class Sampler:
    """Background thread sampling the energy source, cpu frequencies and temperatures.

    Every ``period_s`` (at least MIN_PERIOD_S) it records ``time.perf_counter_ns()`` (the clock
    the runner times inferences with, taken just before the sample's reads) and the reading's
    ``time.monotonic_ns()``, the source reading, ``scaling_cur_freq`` of ``cpus`` (None = all)
    and the temperature of the zones matching ``zone_names`` (empty = all, at most 16).
    ``mark(name)`` stamps a perf_counter_ns time (``window_start`` / ``window_end``);
    ``stop()`` returns the trace (``edgebench.telemetry/1``, JSON-serializable).
    """

    def __init__(
        self,
        source: Optional[EnergySource] = None,
        period_s: float = DEFAULT_PERIOD_S,
        cpus: Optional[Sequence[int]] = None,
        zone_names: Optional[Sequence[str]] = None,
        root: str = "/",
        max_samples: int = DEFAULT_MAX_SAMPLES,
        baseline: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.source = source if source is not None else NoneSource()
        self.period_s = max(float(period_s), MIN_PERIOD_S)
        self.root = root
        self.cpus = list_cpus(root) if cpus is None else [int(c) for c in cpus]
        self.freq_paths = [(str(c), cpufreq_path(root, c, "scaling_cur_freq")) for c in self.cpus]
        self.zones = find_zones(root, zone_names)
        self.max_samples = max(int(max_samples), 1)
        self.baseline = baseline
        self.marks: Dict[str, int] = {}
        self.truncated = False
        self.t_perf_ns: List[int] = []
        self.t_mono_ns: List[int] = []
        self.power_w: List[Optional[float]] = []
        self.energy_j: List[Optional[float]] = []
        self.charging: List[Optional[bool]] = []
        self.wrapped_at: List[int] = []
        self.freq_khz: Dict[str, List[Optional[int]]] = {key: [] for key, _ in self.freq_paths}
        self.temp_c: Dict[str, List[Optional[float]]] = {key: [] for key, _ in self.zones}
        self.errors = _Errors()
        self._cost_ns = 0
        self._count = 0
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._finished = False

    # public API

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("Sampler.start() called twice")
        self._thread = threading.Thread(target=self._run, name="edgebench-telemetry", daemon=True)
        self._thread.start()
        return self

    def mark(self, name: str) -> int:
        """Record ``time.perf_counter_ns()`` under ``name`` and return it."""
        now = time.perf_counter_ns()
        self.marks[name] = now
        return now

    @property
    def samples(self) -> int:
        return self._count

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_samples(self, count: int, timeout: Optional[float] = None) -> bool:
        """Block until at least ``count`` samples were taken (False on timeout or if the
        sampler ended first)."""
        with self._cond:
            self._cond.wait_for(lambda: self._count >= count or self._finished, timeout)
            return self._count >= count

    def stop(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Stop the thread (joined with a timeout) and return the trace."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout if timeout is not None else max(2.0, 10 * self.period_s))
            if thread.is_alive():
                self.errors.add("sampler thread did not stop in time; trace may be incomplete")
        return self.trace()

    def trace(self) -> Dict[str, Any]:
        n = self._count
        try:
            described = self.source.describe()
        except Exception as exc:
            described = {"kind": self.source.kind, "describe_error": _one_line(exc)}

        def column(values: List[Any]) -> Optional[List[Any]]:
            values = values[:n]
            return values if any(v is not None for v in values) else None

        return {
            "schema": TRACE_SCHEMA,
            "source": described,
            "period_s": self.period_s,
            "samples": n,
            "t_perf_ns": self.t_perf_ns[:n],
            "t_mono_ns": self.t_mono_ns[:n],
            "power_w": column(self.power_w),
            "energy_j": column(self.energy_j),
            "charging": column(self.charging),
            "wrapped_at": [i for i in self.wrapped_at if i < n],
            "max_energy_range_j": self.source.max_energy_range_j,
            "freq_khz": {key: values[:n] for key, values in self.freq_khz.items()},
            "temp_c": {key: values[:n] for key, values in self.temp_c.items()},
            "marks": dict(self.marks),
            "truncated": self.truncated,
            "sample_cost_us": (self._cost_ns / n / 1000.0) if n else None,
            "baseline": self.baseline,
            "errors": self.errors.as_list(),
        }

    # the thread

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # never die silently: the trace says why it ended
            self.errors.add("sampler stopped: %s" % _one_line(exc))
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def _loop(self) -> None:
        perf = time.perf_counter_ns
        mono = time.monotonic_ns
        read = self.source.read
        period = self.period_s
        stop_wait = self._stop.wait
        is_stopped = self._stop.is_set
        add_error = self.errors.add
        t_perf, t_mono = self.t_perf_ns, self.t_mono_ns
        power, energy, charging = self.power_w, self.energy_j, self.charging
        freq_cols = [(self.freq_khz[key], path) for key, path in self.freq_paths]
        temp_cols = [(self.temp_c[key], path) for key, path in self.zones]
        cond = self._cond
        index = 0
        next_t = time.monotonic()
        while not is_stopped():
            if index >= self.max_samples:
                self.truncated = True
                break
            t0 = perf()
            try:
                reading = read()
            except Exception as exc:
                add_error("source %s: %s" % (self.source.kind, _one_line(exc)))
                t_mono.append(mono())
                power.append(None)
                energy.append(None)
                charging.append(None)
            else:
                t_mono.append(reading.t_ns)
                power.append(reading.power_w)
                energy.append(reading.energy_j)
                charging.append(reading.charging)
                if reading.wrapped:
                    self.wrapped_at.append(index)
            for values, path in freq_cols:
                try:
                    values.append(read_int(path))
                except (OSError, ValueError):
                    values.append(None)  # cpu offline or cpufreq absent
            for values, path in temp_cols:
                try:
                    values.append(read_int(path) / 1000.0)
                except (OSError, ValueError):
                    values.append(None)
            t_perf.append(t0)
            self._cost_ns += perf() - t0
            index += 1
            with cond:
                self._count = index
                cond.notify_all()
            next_t += period
            now = time.monotonic()
            if next_t <= now:
                next_t = now  # fell behind (slow reads): do not burst to catch up
                continue
            stop_wait(next_t - now)
