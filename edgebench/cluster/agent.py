"""``edgebench agent``: one lab host's membership in the cluster.

The agent probes the devices of this host's lab file, and starts this host's Ray node
(``ray start --block``, a child process) advertising each reachable device as a resource, with
its facts as labels (``cluster.naming``). A node's resources are fixed while it runs, so when a
device comes or goes the agent restarts the node, but only once no run is measuring on this
host (the device locks say so): a restart kills the node's actors, and their runs would lose
those cells. The agent itself never joins as a Ray driver: a driver dies with its node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from edgebench import __version__
from edgebench.cluster.host_actor import HOST_ENV
from edgebench.cluster.naming import DeviceInfo, advertisement, is_label_safe, label_value
from edgebench.cluster.runtime import INSTALL_HINT, QUIET_ENV
from edgebench.errors import UserError
from edgebench.lab.host_lock import held_elsewhere
from edgebench.lab.inventory import open_device, probe_device
from edgebench.lab.lab_file import ENV_VAR, LabDevice, load_lab
from edgebench.paths import cache_dir

#: How long ``ray start`` may take to join the cluster.
JOIN_TIMEOUT_S = 120.0
#: How long a stopping node may take before its processes are killed.
STOP_TIMEOUT_S = 30.0
#: What ``ray start`` prints once its node is up.
STARTED_MARK = "Ray runtime started"


@dataclass(frozen=True)
class AgentSettings:
    address: str
    lab: Path | None = None
    host: str = ""
    node_ip: str | None = None
    poll_s: float = 30.0


def node_environment(host: str, lab: Path | None, devices: int) -> dict[str, str]:
    """What a lab host's Ray node (and so each device actor on it) runs with: the host's name
    and lab file, Ray's usage reporting off, and the actors started side by side. A node with
    no CPUs for Ray starts one worker process at a time; one per device is what it needs."""
    env = {
        **QUIET_ENV,
        HOST_ENV: host,
        "RAY_worker_maximum_startup_concurrency": str(max(4, devices)),
    }
    if lab is not None:
        env[ENV_VAR] = str(lab.resolve())
    return env


def ray_command() -> str:
    """The ``ray`` command of this Python environment."""
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.is_file() else shutil.which("ray")
    if not found:
        raise UserError(f"edgebench agent needs Ray's `ray` command: {INSTALL_HINT}")
    return found


class Agent:
    def __init__(self, settings: AgentSettings, report: Callable[[str], None]) -> None:
        self.settings = settings
        self.host = label_value(settings.host or socket.gethostname()) or "lab-host"
        self.report = report
        self.lab = load_lab(settings.lab)
        if self.lab.path is None:
            raise UserError(
                "edgebench agent needs a lab file naming this host's devices: pass --lab "
                f"lab.toml or set ${ENV_VAR}"
            )
        self.entries = [e for e in self.lab.devices.values() if not e.builtin]
        self.stop = threading.Event()
        self.node: subprocess.Popen[bytes] | None = None
        self.log_path = cache_dir() / "cluster" / f"agent-{self.host}.log"
        self._named_badly: set[str] = set()

    # --- devices ---------------------------------------------------------------------------

    def reachable(self) -> list[DeviceInfo]:
        """The lab's devices that answer now, with the facts selectors match."""
        usable = []
        for entry in self.entries:
            if is_label_safe(entry.name):
                usable.append(entry)
            elif entry.name not in self._named_badly:
                self._named_badly.add(entry.name)
                self.report(
                    f"device {entry.name}: not advertised, its name is not a valid Ray label "
                    "(letters, digits, - _ . inside, a letter or digit at both ends); rename it "
                    f"in {self.lab.path}"
                )
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(usable)))) as pool:
            found = list(pool.map(self._probe, usable))
        return [info for info in found if info is not None]

    def _probe(self, entry: LabDevice) -> DeviceInfo | None:
        device = open_device(entry)
        try:
            if probe_device(device) is not None:
                return None
            facts = device.facts()
        finally:
            device.transport.close()
        profile = entry.profile
        soc = facts.soc or (profile.soc_ids[0] if profile and profile.soc_ids else "")
        return DeviceInfo(
            name=entry.name,
            host=self.host,
            profile=profile.name if profile else (facts.profile or ""),
            soc=soc or "",
            abi=facts.machine or "",
            transport=entry.transport,
        )

    def busy(self, names: Sequence[str]) -> list[str]:
        """The devices a run is measuring on this host now (their host-side locks are held)."""
        entries = {e.name: e for e in self.entries}
        busy = []
        for name in names:
            entry = entries.get(name)
            if entry is None:
                continue
            device = open_device(entry)
            if held_elsewhere(name, device.transport.describe()):
                busy.append(name)
        return busy

    # --- the Ray node ----------------------------------------------------------------------

    def start_node(self, devices: Sequence[DeviceInfo]) -> None:
        resources, labels = advertisement(self.host, devices, __version__)
        argv = [
            ray_command(),
            "start",
            "--address",
            self.settings.address,
            "--num-cpus",
            "0",  # nothing but edgebench's device actors runs on a lab host
            "--resources",
            json.dumps(resources),
            "--labels",
            ",".join(f"{k}={v}" for k, v in labels.items()),
            "--disable-usage-stats",
            "--block",
        ]
        if self.settings.node_ip:
            argv += ["--node-ip-address", self.settings.node_ip]
        lab = Path(self.lab.path) if self.lab.path else None
        env = {**os.environ, **node_environment(self.host, lab, len(devices))}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.node = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self._wait_joined()
        names = ", ".join(d.name for d in devices) or "none reachable yet"
        self.report(
            f"host {self.host}: joined the cluster at {self.settings.address} with "
            f"{len(devices)} devices ({names})"
        )

    def _wait_joined(self) -> None:
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while time.monotonic() < deadline and not self.stop.is_set():
            text = self.log_path.read_text(errors="replace")
            if STARTED_MARK in text:
                return
            if self.node is not None and self.node.poll() is not None:
                raise UserError(
                    f"host {self.host} could not join the cluster at {self.settings.address}: "
                    f"{_last_error(text)} (log: {self.log_path})"
                )
            self.stop.wait(0.2)
        if not self.stop.is_set():
            self.stop_node()
            raise UserError(
                f"host {self.host}: `ray start` did not join {self.settings.address} within "
                f"{JOIN_TIMEOUT_S:.0f} s (log: {self.log_path})"
            )

    def stop_node(self) -> None:
        node, self.node = self.node, None
        if node is None or node.poll() is not None:
            return
        node.send_signal(signal.SIGTERM)  # ray start's reaper stops the node's processes
        try:
            node.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait(timeout=STOP_TIMEOUT_S)

    # --- the loop --------------------------------------------------------------------------

    def run(self) -> None:
        """Join, then follow the devices until stopped (SIGTERM, SIGINT)."""
        advertised = self.reachable()
        self.start_node(advertised)
        deferred: tuple[str, ...] = ()
        try:
            while not self.stop.wait(self.settings.poll_s):
                if self.node is None or self.node.poll() is not None:
                    self.report(
                        f"host {self.host}: its Ray node stopped "
                        f"({_last_error(self.log_path.read_text(errors='replace'))}); rejoining"
                    )
                    advertised = self.reachable()
                    self.start_node(advertised)
                    continue
                now = self.reachable()
                if now == advertised:
                    deferred = ()
                    continue
                change = _describe_change(advertised, now)
                busy = self.busy([d.name for d in advertised])
                if busy:
                    if deferred != tuple(busy):
                        self.report(
                            f"host {self.host}: devices changed ({change}); the node restarts "
                            f"once the runs on {', '.join(busy)} end"
                        )
                    deferred = tuple(busy)
                    continue
                self.report(f"host {self.host}: devices changed ({change}); restarting its node")
                self.stop_node()
                self.start_node(now)
                advertised, deferred = now, ()
        finally:
            self.stop_node()
            self.report(f"host {self.host}: left the cluster")


def _describe_change(before: Sequence[DeviceInfo], after: Sequence[DeviceInfo]) -> str:
    old, new = {d.name for d in before}, {d.name for d in after}
    parts = [f"+{n}" for n in sorted(new - old)] + [f"-{n}" for n in sorted(old - new)]
    return " ".join(parts) or "facts changed"


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "rror" in line or "failed" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]
