"""``edgebench agent``: one lab host's membership in the cluster.

The agent probes the devices of this host's lab file, and starts this host's Ray node
(``ray start --block``, a child process) advertising each reachable device as a resource, with
its facts as labels (``cluster.naming``). A node's resources are fixed while it runs, so when a
device comes or goes the agent restarts the node, but only once no run is measuring on this
host (the device locks say so): a restart kills the node's actors, and their runs would lose
those cells. The agent itself never joins as a Ray driver: a driver dies with its node.
"""

from __future__ import annotations

import ctypes
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
from edgebench.cluster.head_probe import NodeSeen, head_nodes
from edgebench.cluster.host_actor import HOST_ENV
from edgebench.cluster.naming import (
    HOST_LABEL,
    DeviceInfo,
    advertisement,
    identity_label,
    is_label_safe,
    label_value,
    resource_name,
)
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
#: The label that tells one start of an agent's node from any other node.
NODE_LABEL = "edgebench-node"
#: How long another live node may offer this host's devices (a node that is dying with its
#: killed agent) before the agent refuses to start its own.
STALE_NODE_WAIT_S = 15.0


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
            identity=identity_label(entry.identity()),
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
        """Start this host's node and wait until the head lists it alive; a ``UserError`` (one
        line) when the head does not answer, another node offers these devices, or the node
        does not join."""
        self._refuse_offered_elsewhere(devices)
        resources, labels = advertisement(self.host, devices, __version__)
        token = f"{os.getpid()}-{time.monotonic_ns()}"  # tells this node from any other
        labels[NODE_LABEL] = token
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
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_dies_with(os.getpid()),
            )
        if not self._wait_joined(token):
            return  # stopping: not joined, and not to be said so
        names = ", ".join(d.name for d in devices) or "none reachable yet"
        self.report(
            f"host {self.host}: joined the cluster at {self.settings.address} with "
            f"{len(devices)} devices ({names})"
        )

    def _refuse_offered_elsewhere(self, devices: Sequence[DeviceInfo]) -> None:
        """No two live nodes may offer one device: a node left by a killed agent goes within
        a few seconds (it dies with its agent); one that stays is refused in one line."""
        mine = {resource_name(d.name): d.name for d in devices}
        deadline = time.monotonic() + STALE_NODE_WAIT_S
        while True:
            others = [
                (node, mine[key])
                for node in head_nodes(self.settings.address)
                if node.alive
                for key in node.resources
                if key in mine
            ]
            if not others or time.monotonic() >= deadline or self.stop.is_set():
                break
            self.stop.wait(0.5)
        if others:
            node, name = others[0]
            raise UserError(
                f"host {self.host}: device {name} is offered already by the live Ray node "
                f"{node.node_id[:12]} at {node.address} ({_host_of(node)}); stop that node's "
                "`ray start` (an agent that was killed left it, or another agent serves the same "
                "lab file) and start this agent again"
            )

    def _wait_joined(self, token: str) -> bool:
        """True once the head lists the node alive; False when the agent is stopping."""
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while time.monotonic() < deadline and not self.stop.is_set():
            text = self.log_path.read_text(errors="replace")
            if STARTED_MARK in text and self._listed_alive(token):
                return True
            if self.node is not None and self.node.poll() is not None:
                raise UserError(
                    f"host {self.host} could not join the cluster at {self.settings.address}: "
                    f"{_last_error(text)} (log: {self.log_path})"
                )
            self.stop.wait(0.2)
        if not self.stop.is_set():
            self.stop_node()
            raise UserError(
                f"host {self.host}: its Ray node did not join {self.settings.address} within "
                f"{JOIN_TIMEOUT_S:.0f} s (`ray start` did not start, or the head does not list "
                f"the node; log: {self.log_path})"
            )
        return False

    def _listed_alive(self, token: str) -> bool:
        """Whether the head answers and lists this agent's node (``ray start`` may say it
        started when no head runs)."""
        try:
            nodes = head_nodes(self.settings.address)
        except UserError:
            return False
        return any(n.alive and n.labels.get(NODE_LABEL) == token for n in nodes)

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
        self._note_aliases()
        advertised = self.reachable()
        self.start_node(advertised)
        deferred: tuple[str, ...] = ()
        not_joined: str | None = None  # why the last try to (re)join failed, said once
        try:
            while not self.stop.wait(self.settings.poll_s):
                if self.node is None or self.node.poll() is not None:
                    if not_joined is None:
                        self.report(
                            f"host {self.host}: its Ray node stopped "
                            f"({_last_error(self.log_path.read_text(errors='replace'))}); "
                            "rejoining"
                        )
                    advertised = self.reachable()
                    not_joined = self._try_join(advertised, not_joined)
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
                advertised, deferred = now, ()
                not_joined = self._try_join(advertised, not_joined)
        finally:
            self.stop_node()
            self.report(f"host {self.host}: left the cluster")

    def _try_join(self, devices: Sequence[DeviceInfo], failed_before: str | None) -> str | None:
        """Start the node; None once joined, else why not (said once, not at every poll)."""
        try:
            self.start_node(devices)
        except UserError as exc:
            self.stop_node()
            if str(exc) != failed_before:
                self.report(
                    f"host {self.host}: not joined: {exc}; trying again every "
                    f"{self.settings.poll_s:g} s"
                )
            return str(exc)
        return None

    def _note_aliases(self) -> None:
        """One line per pair of lab entries that reach one device: a run may choose one."""
        first: dict[str, str] = {}
        for entry in self.entries:
            identity = entry.identity()
            name = first.setdefault(identity, entry.name)
            if name != entry.name:
                self.report(
                    f"host {self.host}: devices {name} and {entry.name} are the same device "
                    f"({identity}); a run may choose only one of them"
                )


def _dies_with(parent: int) -> Callable[[], None]:
    """What ``ray start`` runs before it starts: the kernel sends it SIGTERM when the agent
    dies, however it dies (``kill -KILL`` included), and its ``--block`` reaper then stops the
    node's processes. Without it a killed agent's node would serve on, unsupervised, and the
    restarted agent would add a second node offering the same devices."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    pr_set_pdeathsig = 1

    def in_child() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the agent died before the line above
            os._exit(1)

    return in_child


def _host_of(node: NodeSeen) -> str:
    host = node.labels.get(HOST_LABEL)
    return f"lab host {host}" if host else "not an edgebench agent's node"


def _describe_change(before: Sequence[DeviceInfo], after: Sequence[DeviceInfo]) -> str:
    old, new = {d.name for d in before}, {d.name for d in after}
    parts = [f"+{n}" for n in sorted(new - old)] + [f"-{n}" for n in sorted(old - new)]
    return " ".join(parts) or "facts changed"


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "rror" in line or "failed" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]
