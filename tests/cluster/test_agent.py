"""`edgebench agent` joins a real Ray head, advertises the lab devices that answer, follows a
phone that dies, waits for a running measurement before it restarts its node, and leaves."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytest.importorskip("ray")

from fakes.adb_fixtures import stop_phone_process
from fakes.labs import write_phone_and_board_lab
from fakes.ray_agent import agent_env, start_agent, stop_agent, wait_until
from fakes.ray_cluster import LabCluster
from fakes.ssh_fixtures import free_port

from edgebench.cluster.naming import DeviceInfo, identity_label

pytestmark = pytest.mark.load_sensitive


def advertised(ray) -> dict[str, DeviceInfo]:
    from edgebench.cluster.runtime import cluster_devices

    return {d.name: d for d in cluster_devices()}


def test_the_agent_advertises_and_follows_its_devices(tmp_path: Path, sshd, phone_process, eb_env):
    import ray

    from edgebench.lab.host_lock import DeviceLock
    from edgebench.lab.inventory import open_device
    from edgebench.lab.lab_file import load_lab

    cluster = LabCluster(tmp_path / "hosts")
    box, phone = sshd, phone_process
    agent = None
    try:
        lab = write_phone_and_board_lab(tmp_path, phone, box)
        lab.write_text(
            lab.read_text()
            # A board that never answers is not advertised.
            + f'\n[devices.gone-box]\ntransport = "ssh"\nhost = "127.0.0.1"\n'
            f'port = {free_port()}\nuser = "{box.user}"\nkey = "{box.client_key}"\n'
            f'known_hosts = "{box.known_hosts}"\nwork_dir = "/tmp/x"\n'
        )
        agent, lines = start_agent(agent_env(eb_env), cluster.address, lab, "lab-x")
        joined = lines.wait_for("joined the cluster")
        assert "with 2 devices" in joined, joined
        ray.init(address=cluster.address, logging_level="ERROR")
        wait_until(lambda: len(advertised(ray)) == 2, "two advertised devices")
        devices = advertised(ray)
        box_entry = load_lab(lab).devices["ssh-box"]
        assert devices["ssh-box"] == DeviceInfo(
            "ssh-box", "lab-x", "x86-generic", devices["ssh-box"].soc, "x86_64", "ssh",
            identity_label(box_entry.identity()),
        )  # fmt: skip
        assert devices["emu-phone"].host == "lab-x" and devices["emu-phone"].transport == "adb"

        # A run measures on ssh-box (its host lock is held) when the phone dies: the agent
        # restarts its node only once that run ends.
        identity = open_device(load_lab(lab).devices["ssh-box"]).transport.describe()
        running = DeviceLock("ssh-box", identity)
        running.acquire(wait=False, report=print, timeout_s=1.0)
        try:
            stop_phone_process(phone)
            waiting = lines.wait_for("restarts once the runs on ssh-box end")
            assert "-emu-phone" in waiting
            assert set(advertised(ray)) == {"ssh-box", "emu-phone"}  # not restarted yet
        finally:
            running.release()
        lines.wait_for("devices changed (-emu-phone); restarting its node")
        wait_until(lambda: set(advertised(ray)) == {"ssh-box"}, "the phone to leave")

        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=60) == 0
        lines.wait_for("left the cluster")
        wait_until(lambda: not advertised(ray), "the host to leave")
    finally:
        if agent is not None:
            stop_agent(agent)
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
