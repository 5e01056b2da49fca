"""A Ray cluster on 127.0.0.1 whose nodes play lab hosts: each node has its own lab file,
cache and host name, and advertises its devices exactly as ``edgebench agent`` would."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench import __version__
from edgebench.cluster.agent import node_environment
from edgebench.cluster.naming import DeviceInfo, advertisement

LOOPBACK = "127.0.0.1"
#: A lost node is noticed within about 3 s instead of Ray's default 30 s or so.
FAST_FAILURE_DETECTION = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 3,
}

#: Several times the health-check window above, for a loaded machine.
NODE_DEATH_LIMIT_S = 60.0


@dataclass
class LabHost:
    name: str
    lab: Path
    cache: Path
    devices: list[DeviceInfo]
    node: Any = field(repr=False)


class LabCluster:
    """Head (no devices, no CPUs for tasks) plus one node per lab host, all on loopback."""

    def __init__(self, root: Path) -> None:
        assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0", "see fakes.environment"
        from ray.cluster_utils import Cluster

        self.root = root
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "node_ip_address": LOOPBACK,
                "_system_config": FAST_FAILURE_DETECTION,
            },
        )
        self.hosts: dict[str, LabHost] = {}

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_host(self, name: str, lab: Path, devices: list[DeviceInfo]) -> LabHost:
        cache = self.root / f"{name}-cache"
        cache.mkdir(parents=True, exist_ok=True)
        resources, labels = advertisement(name, devices, __version__)
        node = self.cluster.add_node(
            num_cpus=0,
            node_ip_address=LOOPBACK,
            resources=resources,
            labels=labels,
            env_vars={**node_environment(name, lab, len(devices)), "EDGEBENCH_CACHE": str(cache)},
        )
        host = LabHost(name, lab, cache, devices, node)
        self.hosts[name] = host
        return host

    def remove_host(self, name: str) -> None:
        """The host disappears: its node's processes are killed, with no goodbye. Returns once
        the head has marked the node dead, so the next run does not still see it offered."""
        host = self.hosts.pop(name)
        self.cluster.remove_node(host.node, allow_graceful=False)
        # The head notices a killed node by missed health checks (about 3 s here); a bounded
        # wait on its node table, as a following test's run reads the same table.
        self.cluster.wait_for_nodes(timeout=NODE_DEATH_LIMIT_S)

    def shutdown(self) -> None:
        self.cluster.shutdown()
