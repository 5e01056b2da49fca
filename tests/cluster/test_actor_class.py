"""The device actors of a run are made from one Ray actor class: a class made anew for each
device is exported to the cluster again (pickled, and disassembled for its identity), which
took about 0.4 s of the submitting host's CPU per device on 2 cores (benchmarks/cluster_scale.py:
171 s to place 128 actors)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ray")

from fakes.ray_cluster import LabCluster

from edgebench.cluster.naming import DeviceInfo

pytestmark = pytest.mark.load_sensitive


def test_the_device_actors_of_a_run_export_their_class_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import ray
    from ray._private.function_manager import FunctionActorManager

    from edgebench.cluster.runtime import ActorLink

    exported: list[str] = []
    export = FunctionActorManager.export_actor_class

    def counted(self, cls, *args, **kwargs):  # the real export, counted
        exported.append(cls.__name__)
        return export(self, cls, *args, **kwargs)

    monkeypatch.setattr(FunctionActorManager, "export_actor_class", counted)
    cluster = LabCluster(tmp_path)  # a head only: the actors wait unplaced, which is enough
    links = []
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        links = [ActorLink(DeviceInfo(f"sim{i}", "lab-a")) for i in range(3)]
        assert exported == ["DeviceHost"]
    finally:
        for link in links:
            link.kill()
        ray.shutdown()
        cluster.shutdown()
