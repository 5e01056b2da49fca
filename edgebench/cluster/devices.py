"""A cluster device as the submitting host sees it: a ``Device`` whose facts came from its
actor, whose commands run there, and the measurement method that sends each cell to it.

The scheduler drives these exactly as it drives a device of this host (rounds, retries, the
lost device's other cells, Ctrl-C); only ``visit`` crosses to the lab host.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from edgebench.cluster.host_actor import Opened
from edgebench.cluster.runtime import ActorLink, HostLost
from edgebench.cluster.shipping import Outbox, paths_in
from edgebench.lab.device import Device, LabSettings
from edgebench.lab.facts import DeviceFacts
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.transports.base import Command, CommandResult, Transport, TransportError
from edgebench.measure.methods import Visit
from edgebench.measure.records import failed_record
from edgebench.planning.cells import Cell, Verdict
from edgebench.results.records import Record
from edgebench.statuses import ErrorKind

#: Beyond a cell's own timeout: what a visit may take on its host (files, locks, the probe).
VISIT_MARGIN_S = 300.0


class ActorTransport(Transport):
    """Stands for the device's own transport, which lives in the actor on its lab host."""

    kind = "cluster"

    def __init__(self, name: str, host: str, link: ActorLink | None, description: str) -> None:
        self.name = name
        self.host = host
        self.link = link
        self.description = description

    def _elsewhere(self) -> TransportError:
        return TransportError(f"device {self.name} is measured by its lab host {self.host}")

    def _run(self, command: Command) -> CommandResult:
        raise self._elsewhere()

    def read_text(self, path: str) -> str | None:
        raise self._elsewhere()

    def push_many(self, pairs: Sequence[tuple[Path, str]]) -> None:
        raise self._elsewhere()

    def copy_in(self, local: Path, remote: str) -> None:
        raise self._elsewhere()

    def pull(self, remote: str, local: Path) -> bool:
        raise self._elsewhere()

    def abort(self) -> None:
        if self.link is not None:
            self.link.send("abort")

    def describe(self) -> str:
        return self.description


class ClusterDevice(Device):
    """A device on another lab host, with what its actor reported when it opened it."""

    def __init__(self, link: ActorLink | None, opened: Opened) -> None:
        """``link`` is None for a device this run did not open (another run holds it)."""
        transport = ActorTransport(opened.name, opened.host, link, opened.describe)
        settings = LabSettings(runner=RunnerKind(opened.runner_kind), profile=opened.profile)
        super().__init__(opened.name, transport, "", "", settings)
        self.mark_unreachable(opened.unreachable)
        self.link = link
        self.host = opened.host
        #: Why the device is not measured though it answered (a plain run on its host holds
        #: it, with --no-wait): its cells fail with a lock error.
        self.refused = opened.refused
        self.availability: dict[str, Verdict | None] = opened.availability
        #: The facts its actor collected on the lab host.
        self.reported_facts = opened.facts

    def facts(self) -> DeviceFacts:
        if self.reported_facts is None:
            raise TransportError(f"device {self.name} on {self.host}: {self.unreachable}")
        return self.reported_facts

    def renew_lock(self, force: bool = False) -> str | None:
        """The actor renews the lease itself at the start of each visit (one round trip per
        cell, not two); a lease taken over comes back as the visit's lock error."""
        return None


class ClusterMethod:
    """Measures a cell on the lab host that owns its device: the cell's files are shipped by
    content hash, the host measures through the device's own method, the record comes back."""

    kind = "cluster"

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    def availability(self, device: Device, framework: str) -> Verdict | None:
        assert isinstance(device, ClusterDevice)
        return device.availability.get(framework)

    def visit(self, cell: Cell, device: Device, visit: Visit) -> Record:
        assert isinstance(device, ClusterDevice) and device.link is not None
        roots = paths_in((cell, visit))
        entries = self.outbox.manifest(roots)
        refs = self.outbox.refs(entries)
        shipped = sorted({str(p.absolute()) for p in roots if p.exists()})
        try:
            return device.link.call(
                "visit",
                cell,
                visit,
                entries,
                refs,
                shipped,
                timeout=cell.timeout_s + VISIT_MARGIN_S,
            )
        except HostLost as exc:
            return failed_record(visit.run_id, cell, ErrorKind.HOST_LOST, str(exc))
