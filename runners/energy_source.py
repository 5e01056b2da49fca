"""What an energy source is: its readings, its probe, and the source that measures nothing.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, NamedTuple, Optional

from .sysfs import one_line


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

    def close(self) -> None:
        """Stop what the source started (a child process, a library session); idempotent."""

    def probe(self) -> Reading:
        """One read that must give a finite power or energy, else TelemetryUnavailable."""
        try:
            reading = self.read()
        except TelemetryUnavailable:
            raise
        except (OSError, ValueError) as exc:
            raise TelemetryUnavailable(
                "%s: first reading failed: %s" % (self.kind, one_line(exc))
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
