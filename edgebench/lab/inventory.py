"""Turn lab entries into Device objects, and describe devices for `edgebench devices`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.errors import UserError
from edgebench.lab.device import Device, LabSettings, LocalDevice
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports import transport_kinds
from edgebench.lab.transports.base import TransportError

if TYPE_CHECKING:
    from edgebench.lab.lab_file import Lab, LabDevice

LOCAL = "local"


def open_device(entry: LabDevice) -> Device:
    """A live device for the lab entry: its transport opened, its settings given."""
    settings = LabSettings(entry.runner, entry.emulated, entry.backends, entry.profile)
    if entry.transport == LOCAL:
        # The lab file refuses the framework tools for local devices.
        return LocalDevice(entry.name, entry.python, Path(entry.work_dir), settings)
    transport = transport_kinds()[entry.transport].open(entry.name, entry.endpoint)
    python = entry.python or "python3"
    return RemoteDevice(
        entry.name,
        transport,
        work_dir=entry.work_dir,
        python=python,
        tools_bin=entry.tools_bin,
        settings=settings,
    )


def resolve_devices(names: Sequence[str], lab: Lab) -> list[Device]:
    devices: list[Device] = []
    for name in dict.fromkeys(names):
        if name == LOCAL:
            devices.append(LocalDevice())
        elif name in lab.devices:
            devices.append(open_device(lab.devices[name]))
        else:
            known = ", ".join([LOCAL, *lab.devices])
            where = f" in {lab.path}" if lab.path else " (no lab file found; see --lab)"
            raise UserError(f"device {name!r} is not defined{where}; available devices: {known}")
    return devices


def refuse_aliases(names: Sequence[str], lab: Lab) -> None:
    """One line when two of ``names`` are lab entries for the same device: a run would lock
    that device twice and wait for itself, or measure it twice at once."""
    first_by_identity: dict[str, str] = {}
    for name in dict.fromkeys(names):
        if name not in lab.names():
            continue  # resolve_devices names what the lab has
        identity = lab.get(name).identity()
        first = first_by_identity.setdefault(identity, name)
        if first != name:
            raise UserError(
                f"devices {first} and {name} are the same device ({identity}); a run measures "
                "a device under one name: keep one of them in --devices"
            )


def probe_device(device: Device) -> str | None:
    """Gather facts; None when the device answered, else why it did not."""
    try:
        device.facts()
    except (TransportError, UserError) as exc:
        return str(exc)
    return None
