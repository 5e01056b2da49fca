"""The actor that owns one device on its lab host: it opens the device from that host's lab
file, holds the device's locks, receives the cell's files and measures the cell through the
device's own measurement method, exactly as a plain run on that host would.

The class is plain Python; ``cluster.runtime`` makes it a Ray actor. Per REFERENCE §10 a
framework that crashes must not take the actor with it: every method measures in a child
process (the runner or the native tool), so the actor only ever waits on them.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from edgebench import __version__
from edgebench.cluster.shipping import FileEntry, Inbox, relocate
from edgebench.errors import UserError
from edgebench.frameworks import framework_names
from edgebench.lab.device import Device
from edgebench.lab.device_lock import DeviceLockFile, LockUnavailable
from edgebench.lab.facts import DeviceFacts
from edgebench.lab.host_lock import DeviceLock
from edgebench.lab.inventory import open_device, probe_device
from edgebench.lab.lab_file import load_lab
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports.base import TransportError
from edgebench.measure.methods import Method, Visit, method_for
from edgebench.measure.records import failed_record
from edgebench.measure.reference_outputs import ReferenceOutputs
from edgebench.measure.scheduler import lock_taken_over, run_cell
from edgebench.paths import cache_dir
from edgebench.planning.cells import Cell, Verdict
from edgebench.results.records import Record
from edgebench.statuses import ErrorKind

#: Set by ``edgebench agent`` on its Ray node: the host's name in the cluster.
HOST_ENV = "EDGEBENCH_CLUSTER_HOST"
#: How long an actor waits for a device a plain run on its host holds.
LOCK_WAIT_S = 6 * 3600.0
#: The remote device lease renews this long before it runs out.
LEASE_MARGIN_S = 300.0


def host_name() -> str:
    return os.environ.get(HOST_ENV) or socket.gethostname()


class Opener(Protocol):
    def __call__(self, name: str) -> tuple[Device, Method]: ...


def open_from_lab(name: str) -> tuple[Device, Method]:
    """The device from this host's lab file (``$EDGEBENCH_LAB``, set by the agent)."""
    lab = load_lab(None)
    if name not in lab.devices:
        where = lab.path or "no lab file"
        raise UserError(f"device {name} is not in the lab of host {host_name()} ({where})")
    device = open_device(lab.devices[name])
    return device, method_for(device)


@dataclass
class Opened:
    """What the submitting host learns about a device when its actor opens it."""

    name: str
    host: str
    version: str
    facts: DeviceFacts | None
    unreachable: str | None
    runner_kind: str
    #: Its device profile (names, clusters, energy source), when its lab entry names one.
    profile: Any
    availability: dict[str, Verdict | None]
    describe: str
    #: Why the device cannot be measured now (its host-side lock is held, with --no-wait).
    refused: str | None = None


class DeviceHost:
    """One device on the lab host that owns it (see the module docstring)."""

    def __init__(self, name: str, opener: Opener | None = None) -> None:
        self.name = name
        self.opener = opener or open_from_lab
        self.device: Device | None = None
        self.method: Method | None = None
        self.host_lock: DeviceLock | None = None
        self.inbox: Inbox | None = None
        #: ONNX Runtime's reference outputs on this host, kept across the run's cells.
        self.reference = ReferenceOutputs()
        #: What ``open`` or ``lock`` waits for now (a lock another run holds), for the client.
        self.waiting_for: str | None = None

    def ping(self) -> str:
        return self.name

    def waiting(self) -> str | None:
        """What this actor waits for now, if anything; the client asks while a call waits."""
        return self.waiting_for

    def _waits(self, line: str) -> None:
        self.waiting_for = f"{line} on lab host {host_name()}"

    def open(self, wait: bool, sender: str) -> Opened:
        device, method = self.opener(self.name)
        self.device, self.method = device, method
        self.inbox = Inbox(cache_dir() / "cluster", sender)
        refused = None
        self.host_lock = DeviceLock(device.name, device.transport.describe())
        try:
            self.host_lock.acquire(wait=wait, report=self._waits, timeout_s=LOCK_WAIT_S)
        except UserError as exc:
            refused = str(exc)
        finally:
            self.waiting_for = None
        device.mark_unreachable(probe_device(device))
        facts = None if device.unreachable else device.facts()
        availability = {
            framework: method.availability(device, framework) for framework in framework_names()
        }
        return Opened(
            name=device.name,
            host=host_name(),
            version=__version__,
            facts=facts,
            unreachable=device.unreachable,
            runner_kind=device.runner_kind,
            profile=device.profile,
            availability=availability,
            describe=f"{device.transport.describe()} on {host_name()}",
            refused=refused,
        )

    def lock(self, lease_s: float, wait: bool) -> str | None:
        """Take the lease on a remote device, as a plain run does; None, or why not."""
        device = self._device()
        if device.unreachable or not isinstance(device, RemoteDevice):
            return None
        if device.transport.kind == "local":
            return None  # the host-side lock covers this machine
        try:
            lock = DeviceLockFile(
                device.name, device.transport, device.work_dir, lease_s, "-", LEASE_MARGIN_S
            )
            lock.acquire(wait=wait, report=self._waits, timeout_s=LOCK_WAIT_S)
        except (LockUnavailable, TransportError) as exc:
            return str(exc) if str(exc).startswith("device ") else f"device {device.name}: {exc}"
        finally:
            self.waiting_for = None
        device.hold_lock(lock)
        return None

    def start_run(self, run_id: str) -> None:
        device = self._device()
        if device.device_lock is not None:
            device.device_lock.run_id = run_id
            device.renew_lock(force=True)

    def visit(
        self,
        cell: Cell,
        visit: Visit,
        entries: list[FileEntry],
        refs: dict[str, Any],
        roots: list[str],
        get: Any = None,
    ) -> Record:
        """Measure ``cell`` once on this host's device, after receiving its files."""
        device, inbox = self._device(), self.inbox
        assert inbox is not None and self.method is not None
        if get is None:
            import ray

            get = ray.get
        holder = device.renew_lock()
        if holder is not None:
            reason = lock_taken_over(device.name, holder)
            return failed_record(visit.run_id, cell, ErrorKind.LOCK, reason)
        inbox.receive(entries, refs, get)
        shipped = set(roots)

        def move(path: Path) -> Path:
            return inbox.mirrored(path) if os.path.abspath(path) in shipped else path

        cell, visit = relocate((cell, visit), move)
        visit = replace(visit, checks=replace(visit.checks, reference=self.reference))
        record = run_cell(
            visit.run_id,
            cell,
            device,
            visit.checks,
            visit.check_outputs,
            self.method,
        )
        if record.error_kind == ErrorKind.TRANSPORT:
            device.transport.close()  # the submitter's retry reconnects
        # The record names the submitter's files, not this host's mirror of them.
        if record.model_path:
            record = replace(record, model_path=inbox.original(record.model_path))
        if record.artifact is not None and record.artifact.path is not None:
            artifact = replace(record.artifact, path=inbox.original(record.artifact.path))
            record = replace(record, artifact=artifact)
        return record

    def abort(self) -> None:
        if self.device is not None:
            self.device.abort_running()

    def close(self) -> None:
        device = self.device
        if device is not None and device.device_lock is not None:
            device.device_lock.release()
            device.hold_lock(None)
        if self.host_lock is not None:
            self.host_lock.release()
            self.host_lock = None
        if device is not None:
            device.transport.close()

    def _device(self) -> Device:
        if self.device is None:
            raise RuntimeError(f"device {self.name}: open() was not called")
        return self.device
