"""Where a run's devices come from: the ``DeviceSource`` protocol and the plain one, this
host's lab file. ``edgebench run --cluster`` passes another source (``edgebench.cluster``),
whose devices sit on other hosts; the session treats both alike.
"""

from __future__ import annotations

import atexit
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from edgebench.lab.device import Device
from edgebench.lab.device_lock import DeviceLockFile, LockUnavailable
from edgebench.lab.host_lock import DeviceLock
from edgebench.lab.inventory import probe_device, refuse_aliases, resolve_devices
from edgebench.lab.lab_file import load_lab
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports.base import TransportError
from edgebench.measure.methods import Method, method_for
from edgebench.measure.progress import LineProgress
from edgebench.planning.cells import Cell
from edgebench.planning.config import RunConfig
from edgebench.statuses import ErrorKind, Status

#: Host-side device locks of this process; kept referenced so their files stay open until exit.
_HELD_LOCKS: list[DeviceLock] = []
#: How long a run waits for a device another run holds.
LOCK_WAIT_S = 6 * 3600.0
#: Beyond the longest cell: a lease renewed before each cell outlives any one cell.
LEASE_MARGIN_S = 300.0


class DeviceSource(Protocol):
    def open(self, config: RunConfig, progress: LineProgress) -> list[Device]:
        """The run's devices, host-locked and probed (an unreachable one keeps its reason)."""

    def methods(self) -> dict[str, Method]:
        """Each device's measurement method, by device name."""

    def lock(self, cells: list[Cell], *, wait: bool, progress: LineProgress) -> list[Cell]:
        """Take each device's own lock; a device that cannot be locked gets its cells failed."""

    def start_run(self, run_id: str) -> None:
        """The locks name the run from here on."""

    def metadata(self) -> dict[str, Any] | None:
        """What run.json records about where the devices are (None: this host)."""

    def close(self) -> None: ...


class LabDevices:
    """The devices of this host's lab file (and ``local``)."""

    def __init__(self) -> None:
        self.devices: list[Device] = []
        self._methods: dict[str, Method] = {}

    def open(self, config: RunConfig, progress: LineProgress) -> list[Device]:
        names = config.sweep.devices or ["local"]
        lab = load_lab(config.session.lab)
        refuse_aliases(names, lab)
        self.devices = resolve_devices(names, lab)
        _connect_devices(self.devices, wait=not config.session.no_wait, progress=progress)
        # Each device measures through one method, chosen here from its lab entry's runner.
        self._methods = {device.name: method_for(device) for device in self.devices}
        return self.devices

    def methods(self) -> dict[str, Method]:
        return self._methods

    def lock(self, cells: list[Cell], *, wait: bool, progress: LineProgress) -> list[Cell]:
        return _lock_devices(self.devices, cells, wait=wait, progress=progress)

    def start_run(self, run_id: str) -> None:
        for device in self.devices:
            if device.device_lock is not None:
                device.device_lock.run_id = run_id
                device.renew_lock(force=True)  # the lock names the run from here on

    def metadata(self) -> dict[str, Any] | None:
        return None

    def close(self) -> None:
        """The locks are released at exit (atexit and the kernel's flock release)."""


def _connect_devices(device_list: list[Device], *, wait: bool, progress: LineProgress) -> None:
    """Host-side locks first (held until exit), then each device probed; an unreachable one
    keeps a reason, and its cells are failed with it."""
    for device in device_list:
        # Held until this process exits (the kernel releases flocks then, even on a crash).
        lock = DeviceLock(device.name, device.transport.describe())
        lock.acquire(wait=wait, report=progress.message, timeout_s=LOCK_WAIT_S)
        _HELD_LOCKS.append(lock)
    for device in device_list:
        progress.message(f"device {device.name}: connecting ({device.transport.describe()})")
        device.mark_unreachable(probe_device(device))
        if device.unreachable:
            progress.message(f"  unreachable: {device.unreachable}; its cells are marked failed")
            continue
        describe_device(device, progress)


def describe_device(device: Device, progress: LineProgress) -> None:
    """What the probe found, and the warnings a user acts on (emulated CPU, governor)."""
    facts = device.facts()
    governors = ", ".join(facts.governors) or "unknown"
    progress.message(
        f"device {device.name}: {facts.cpu_model or 'unknown CPU'}, "
        f"{len(facts.cpus)} cpus, governor {governors}, "
        + (f"python {facts.python}" if facts.python else f"runner {facts.runner or '?'}")
    )
    if facts.emulated:
        progress.message(
            f"  emulated CPU ({facts.emulation}): one timed inference per cell, for the "
            "output check only; its latencies are never ranked"
        )
    elif facts.governors and facts.governors != ["performance"]:
        progress.message(
            f"  warning: governor {governors} lets the clock vary between cells; "
            "use `performance` for stable numbers"
        )


def lease_for(cells: Sequence[Cell]) -> float:
    """A device lease that outlives the longest cell by the renewal margin."""
    return max((c.timeout_s for c in cells), default=600.0) + LEASE_MARGIN_S


def fail_device_cells(cells: list[Cell], device_name: str, kind: str, reason: str) -> list[Cell]:
    """The cells of one device that were still to measure, failed with ``reason``."""
    return [
        replace(c, verdict=(Status.FAILED, kind, reason))
        if c.device.name == device_name and c.verdict is None
        else c
        for c in cells
    ]


def _lock_devices(
    devices: Sequence[Device], cells: list[Cell], *, wait: bool, progress: LineProgress
) -> list[Cell]:
    """Take the lock on each remote device (runs from other hosts wait for it). A device with
    no place for its lock, or that drops while locking, gets its cells failed with the reason."""
    lease_s = lease_for(cells)
    for device in devices:
        if device.unreachable or device.transport.kind == "local":
            continue  # the host-side lock covers this machine
        assert isinstance(device, RemoteDevice)  # a lab device not on this host is remote
        try:
            lock = DeviceLockFile(
                device.name, device.transport, device.work_dir, lease_s, "-", LEASE_MARGIN_S
            )
            lock.acquire(wait=wait, report=progress.message, timeout_s=LOCK_WAIT_S)
        except (LockUnavailable, TransportError) as exc:
            reason = str(exc) if str(exc).startswith("device ") else f"device {device.name}: {exc}"
            progress.message(f"  {reason}; its cells are marked failed")
            cells = fail_device_cells(cells, device.name, ErrorKind.LOCK, reason)
            continue
        device.hold_lock(lock)
        atexit.register(lock.release)  # also on errors and Ctrl-C; a crash leaves the lease
    return cells
