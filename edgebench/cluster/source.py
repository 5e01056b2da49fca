"""``edgebench run --cluster``: the run's devices are chosen from what the cluster's lab hosts
advertise, and each is opened by an actor placed on the host that owns it."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from edgebench import __version__
from edgebench.cluster.devices import VISIT_MARGIN_S, ClusterDevice, ClusterMethod
from edgebench.cluster.host_actor import Opened, Opener
from edgebench.cluster.naming import (
    DeviceInfo,
    choose_devices,
    listing,
    refuse_shared_devices,
    resource_name,
)
from edgebench.cluster.runtime import (
    ActorLink,
    HostLost,
    cluster_devices,
    connect,
    shutdown,
)
from edgebench.cluster.shipping import Outbox
from edgebench.errors import UserError
from edgebench.lab.device import Device
from edgebench.measure.lab_devices import describe_device, fail_device_cells, lease_for
from edgebench.measure.methods import Method
from edgebench.measure.progress import LineProgress
from edgebench.planning.cells import Cell
from edgebench.planning.config import RunConfig
from edgebench.statuses import ErrorKind, Status

log = logging.getLogger(__name__)

#: How long a device's actor may take to release its locks at the end of a run.
CLOSE_TIMEOUT_S = 30.0
#: How long a device may stay held before the run calls it taken by another cluster run.
RELEASE_GRACE_S = 10.0
#: How long opening one device may take on its host, waiting for its host lock included.
OPEN_TIMEOUT_S = 6 * 3600.0 + VISIT_MARGIN_S


class ClusterLab:
    """The devices of a Ray cluster (``DeviceSource``)."""

    def __init__(self, address: str, opener: Opener | None = None) -> None:
        self.address = address
        self.opener = opener
        self.links: dict[str, ActorLink] = {}
        self.devices: list[ClusterDevice] = []
        self._methods: dict[str, Method] = {}

    def open(self, config: RunConfig, progress: LineProgress) -> list[Device]:
        ray = connect(self.address)
        available = cluster_devices()
        wanted = config.sweep.devices or []
        if wanted == ["local"] and not any(d.name == "local" for d in available):
            # The default device is this host's CPU; a cluster run names its devices.
            raise UserError(
                "--cluster: name the devices to measure with --devices (names, or selectors "
                f"such as profile=kirin-9000); {listing(available)}"
            )
        chosen = choose_devices(wanted, available)
        refuse_shared_devices(chosen, available)
        progress.message(
            f"cluster {self.address}: {len(chosen)} of {len(available)} devices chosen, on "
            f"{len({d.host for d in chosen})} lab hosts"
        )
        sender = socket.gethostname()
        wait = not config.session.no_wait
        held = _held_devices(ray, chosen)
        refused: dict[str, Opened] = {}
        for info in chosen:
            if info.name in held:
                # Another cluster run's actor holds the device: Ray queues ours until it ends.
                taken = f"device {info.name} is taken on {info.host} (another cluster run)"
                if not wait:
                    reason = f"{taken}; wait for that run or drop --no-wait"
                    refused[info.name] = _unopened(info, reason, refused=True)
                    continue
                progress.message(f"{taken}; waiting for it")
            self.links[info.name] = ActorLink(info, self.opener)
        progress.message(f"placing {len(self.links)} device actors on their lab hosts")
        with ThreadPoolExecutor(max_workers=min(32, max(1, len(chosen)))) as pool:
            opened = list(
                pool.map(
                    lambda info: (
                        refused.get(info.name) or self._open_one(info, wait, sender, progress)
                    ),
                    chosen,
                )
            )
        outbox = Outbox(ray.put)
        method = ClusterMethod(outbox)
        for info, result in zip(chosen, opened, strict=True):
            device = ClusterDevice(self.links.get(info.name), result)
            self.devices.append(device)
            self._methods[device.name] = method
            self._report(device, result, progress)
        return list(self.devices)

    def _open_one(
        self, info: DeviceInfo, wait: bool, sender: str, progress: LineProgress
    ) -> Opened:
        link = self.links[info.name]
        try:
            opened: Opened = link.call_waiting(
                "open", wait, sender, timeout=OPEN_TIMEOUT_S, report=progress.message
            )
        except HostLost as exc:
            return _unopened(info, str(exc))
        except UserError as exc:
            return _unopened(info, f"on {info.host}: {exc}")
        if opened.version != __version__:
            opened.unreachable = (
                f"lab host {info.host} runs edgebench {opened.version}, this host "
                f"{__version__}; install the same version on every lab host"
            )
        return opened

    @staticmethod
    def _report(device: ClusterDevice, opened: Opened, progress: LineProgress) -> None:
        progress.message(f"device {device.name}: on lab host {device.host} ({opened.describe})")
        if device.unreachable:
            progress.message(f"  unreachable: {device.unreachable}; its cells are marked failed")
        else:
            describe_device(device, progress)

    def methods(self) -> dict[str, Method]:
        return self._methods

    def lock(self, cells: list[Cell], *, wait: bool, progress: LineProgress) -> list[Cell]:
        lease_s = lease_for(cells)
        for device in self.devices:
            if device.refused:
                progress.message(f"  {device.refused}; its cells are marked failed")
                cells = [
                    replace(c, verdict=(Status.FAILED, ErrorKind.LOCK, device.refused))
                    if c.device.name == device.name
                    and (c.verdict is None or c.verdict[1] == ErrorKind.TRANSPORT)
                    else c
                    for c in cells
                ]
                continue
            if device.unreachable or device.link is None:
                continue
            try:
                refused = device.link.call_waiting(
                    "lock", lease_s, wait, timeout=OPEN_TIMEOUT_S, report=progress.message
                )
            except HostLost as exc:
                refused, kind = str(exc), ErrorKind.HOST_LOST
            else:
                kind = ErrorKind.LOCK
            if refused:
                progress.message(f"  {refused}; its cells are marked failed")
                cells = fail_device_cells(cells, device.name, kind, refused)
        return cells

    def start_run(self, run_id: str) -> None:
        for device in self.devices:
            if device.link is None:
                continue  # not opened by this run
            with contextlib.suppress(HostLost):  # its cells meet the lost host themselves
                device.link.call("start_run", run_id, timeout=VISIT_MARGIN_S)

    def metadata(self) -> dict[str, Any] | None:
        return {
            "address": self.address,
            "hosts": {device.name: device.host for device in self.devices},
        }

    def close(self) -> None:
        """Release every device's locks and stop every actor this run started."""

        def close_one(link: ActorLink) -> None:
            try:
                link.call("close", timeout=CLOSE_TIMEOUT_S)
            except Exception as exc:  # a lost host has released everything already
                log.debug("closing %s: %s", link.info.name, exc)
            link.kill()

        with ThreadPoolExecutor(max_workers=min(32, max(1, len(self.links)))) as pool:
            list(pool.map(close_one, self.links.values()))
        self.links.clear()
        shutdown()


def _held_devices(ray: Any, chosen: list[DeviceInfo]) -> set[str]:
    """The chosen devices whose resource an actor holds now. A run that just ended may still be
    returning its devices (Ray releases a killed actor's resources a moment later), so a device
    counts as held only if it stays so for ``RELEASE_GRACE_S``."""
    deadline = time.monotonic() + RELEASE_GRACE_S
    while True:
        free = ray.available_resources()
        held = {d.name for d in chosen if free.get(resource_name(d.name), 0.0) < 1.0}
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(0.25)


def _unopened(info: DeviceInfo, reason: str, refused: bool = False) -> Opened:
    return Opened(
        name=info.name,
        host=info.host,
        version=__version__,
        facts=None,
        unreachable=reason,
        runner_kind="python",
        profile=None,
        availability={},
        describe=f"on {info.host}",
        refused=reason if refused else None,
    )
