"""What a plan knows of a device, fixed when its cells are built.

A cell carries this value, not the live ``Device``: a plan is then a value that compares,
copies and pickles (a cluster run ships cells to another lab host as they are), and the live
session (transport, lock, runner) is handed to the measurement method beside the cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgebench.lab.facts import DeviceFacts

if TYPE_CHECKING:
    from edgebench.lab.device import Device
    from edgebench.lab.profiles import DeviceProfile


@dataclass(frozen=True)
class DeviceSnapshot:
    name: str
    #: Why the device could not be reached; its cells fail with this.
    unreachable: str | None = None
    #: Its facts; None when it was not reached.
    facts: DeviceFacts | None = None
    #: Its device profile, when the lab names one (energy source, thermal zones, limits).
    profile: DeviceProfile | None = None

    @classmethod
    def of(cls, device: Device) -> DeviceSnapshot:
        """What a plan keeps of ``device`` (its facts probed now, when it was reached)."""
        facts = None if device.unreachable else device.facts()
        return cls(device.name, device.unreachable, facts, device.profile)
