"""`edgebench agent` under faults, against a real Ray head on 127.0.0.1: a killed agent takes
its node with it, a device is never offered by two live nodes, and an agent whose head died
does not say it joined."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("ray")

from fakes.ray_agent import (
    agent_env,
    alive,
    children,
    command_line,
    start_agent,
    stop_agent,
    wait_until,
)
from fakes.ray_cluster import LabCluster

from edgebench.cluster.head_probe import head_nodes
from edgebench.cluster.naming import DeviceInfo, resource_name

pytestmark = pytest.mark.load_sensitive

LOCAL_LAB = '[devices.dev-b1]\ntransport = "local"\n'


def offering(address: str, device: str) -> list[str]:
    """The node ids of the live nodes that offer ``device``."""
    return [
        n.node_id for n in head_nodes(address) if n.alive and resource_name(device) in n.resources
    ]


def test_a_killed_agent_takes_its_node_along_and_a_device_has_one_node(tmp_path: Path, eb_env):
    cluster = LabCluster(tmp_path / "hosts")
    lab = tmp_path / "lab.toml"
    lab.write_text(LOCAL_LAB)
    env = agent_env(eb_env)
    agents = []
    try:
        first, lines = start_agent(env, cluster.address, lab, "hb")
        agents.append(first)
        lines.wait_for("joined the cluster")
        (node,) = [pid for pid in children(first.pid) if "start" in command_line(pid)]
        assert offering(cluster.address, "dev-b1")

        # kill -KILL of the agent, as a crash or an OOM kill would: its node goes with it.
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        wait_until(lambda: not alive(node), "the killed agent's `ray start` to stop", 60)
        wait_until(lambda: not offering(cluster.address, "dev-b1"), "its node to leave", 60)

        # The service manager restarts the agent: one node offers the device, not two.
        second, lines = start_agent(env, cluster.address, lab, "hb")
        agents.append(second)
        lines.wait_for("joined the cluster")
        assert len(offering(cluster.address, "dev-b1")) == 1
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0
        wait_until(lambda: not offering(cluster.address, "dev-b1"), "the stopped node to leave")

        # A node that offers the device already (started by hand, or left by an agent of an
        # older edgebench): the agent refuses to start a second one, in one line.
        cluster.add_host("hb", lab, [DeviceInfo("dev-b1", "hb")])
        third, lines = start_agent(env, cluster.address, lab, "hb")
        agents.append(third)
        assert third.wait(timeout=120) == 2
        refusal = lines.wait_for("edgebench: error:")
        assert "device dev-b1 is offered already by the live Ray node" in refusal, refusal
        assert "lab host hb" in refusal
        assert len(offering(cluster.address, "dev-b1")) == 1
    finally:
        for agent in agents:
            stop_agent(agent)
        cluster.shutdown()


def test_an_agent_whose_head_died_does_not_say_it_joined(tmp_path: Path, eb_env):
    cluster = LabCluster(tmp_path / "hosts")
    lab = tmp_path / "lab.toml"
    lab.write_text(LOCAL_LAB)
    # The node gives up on a dead head after 10 s instead of Ray's 60.
    env = agent_env(eb_env, RAY_gcs_rpc_server_reconnect_timeout_s="10")
    agent = None
    try:
        address = cluster.address
        agent, lines = start_agent(env, address, lab, "hb")
        lines.wait_for("joined the cluster")
        cluster.cluster.remove_node(cluster.cluster.head_node, allow_graceful=False)
        lines.wait_for("its Ray node stopped", 120)
        not_joined = lines.wait_for("not joined", 120)
        assert f"cannot reach the Ray head at {address}" in not_joined, not_joined
        assert "trying again every 1 s" in not_joined
        assert agent.poll() is None, lines.lines  # it keeps trying, as a service should
        assert lines.count("joined the cluster") == 1, lines.lines
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=60) == 0
        lines.wait_for("left the cluster")
        assert lines.count("joined the cluster") == 1, lines.lines
    finally:
        if agent is not None:
            stop_agent(agent)
        cluster.shutdown()
