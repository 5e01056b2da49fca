"""``make_source``, which opens an energy source of one of the kinds protocol/telemetry.py
names and describes (``SOURCE_KINDS``).

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

from .energy_source import EnergySource, NoneSource, Reading, TelemetryUnavailable
from .fuel_gauge import AndroidFuelGauge
from .ina3221 import Ina3221
from .nvml_power import NvmlPower
from .odpm import AndroidOdpm
from .protocol.telemetry import AUTO_ORDER, SOURCE_KINDS
from .rapl import Rapl
from .sysfs import one_line
from .tegrastats import Tegrastats

#: (root, rails, current_unit, voltage_unit) -> an unprobed source, per kind that measures.
_OPENERS: Dict[str, Callable[..., EnergySource]] = {
    "android_odpm": lambda root, rails, _i, _v: AndroidOdpm(root, rails),
    "android_fuel_gauge": lambda root, _r, current, voltage: AndroidFuelGauge(
        root, current, voltage
    ),
    "ina3221": lambda root, _r, _i, _v: Ina3221(root),
    "rapl": lambda root, _r, _i, _v: Rapl(root),
    "tegrastats": lambda _root, _r, _i, _v: Tegrastats(),
    "nvml": lambda _root, _r, _i, _v: NvmlPower(),
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
                reasons[candidate] = one_line(exc)
                continue
            return _AutoChosen(chosen, reasons)
        return NoneSource(reasons)
    opener = _OPENERS.get(kind)
    if opener is None:
        raise TelemetryUnavailable(
            "unknown energy source %r (known: %s)" % (kind, ", ".join(SOURCE_KINDS))
        )
    source = opener(root, rails, current_unit, voltage_unit)
    try:
        source.probe()
    except BaseException:
        source.close()
        raise
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

    def close(self) -> None:
        self.inner.close()

    def describe(self) -> Dict[str, Any]:
        info = self.inner.describe()
        info["auto"] = True
        info["auto_skipped"] = dict(self.skipped)
        return info
