#!/usr/bin/env python3
"""Does orchestrating a run across a Ray cluster stay cheap as the lab grows?

Starts a Ray cluster on 127.0.0.1 (a head and 4 lab-host nodes), spreads N simulated devices
over the nodes, and measures a run of K cells per device through the real cluster path: the
scheduler, one actor per device placed by its device resource, the cell's model file shipped by
content hash, the device's method called on its host, the record streamed back and appended
(fsynced) to the submitting host's store. The simulated devices' measurement method sleeps a
fixed time instead of running a framework, so everything beyond that sleep is orchestration.

Prints per N: the time to place and open the actors, the run's total against the ideal
(K x sleep, devices in parallel), and the orchestration overhead per cell: the mean of each
cell's time seen by the scheduler minus the sleep. Beside it, the CPU each cell costs: the
submitting process's ("cpu/cell") and the whole machine's ("all cpu/cell", from /proc/stat,
so every node, actor and the head), and how busy the machine's CPUs were. Goals (issue 17):
overhead per cell flat within 20% from 8 to 128 devices, and the total within 1.2x the ideal.

Usage: python benchmarks/cluster_scale.py [--devices 1,8,32,128] [--cells 4] [--sleep 2.0]
           [--nodes 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

# Loopback only: Ray's own address becomes 127.0.0.1 (read when Ray is imported).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from edgebench import __version__
from edgebench.cluster.agent import node_environment
from edgebench.cluster.naming import DeviceInfo, advertisement
from edgebench.cluster.source import ClusterLab
from edgebench.lab.device import Device, DeviceFacts
from edgebench.lab.device_snapshot import DeviceSnapshot
from edgebench.lab.transports import LocalTransport
from edgebench.measure.methods import Visit
from edgebench.measure.records import new_record
from edgebench.measure.scheduler import execute_cells
from edgebench.planning.cells import Cell
from edgebench.planning.config import RunConfig, TimingConfig
from edgebench.planning.modelref import ModelRef
from edgebench.results.store import ResultsStore
from edgebench.statuses import Status

LOOPBACK = "127.0.0.1"


class SimulatedTransport(LocalTransport):
    """This machine, under a name of its own (each device's host lock is its own)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def describe(self) -> str:
        return f"simulated:{self.name}"


class SleepMethod:
    """A measurement method that takes ``sleep_s`` per cell and returns an ok record."""

    kind = "simulated"

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def availability(self, device: Device, framework: str):
        return None

    def visit(self, cell: Cell, device: Device, visit: Visit):
        time.sleep(self.sleep_s)
        samples = [int(self.sleep_s * 1e9)]
        return new_record(visit.run_id, cell, Status.OK, samples_ns=samples, n_samples=1)


class SimulatedOpener:
    """Opens a simulated device on the node its actor was placed on."""

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def __call__(self, name: str):
        device = Device(name, SimulatedTransport(name), "", "")
        device._facts = DeviceFacts(cpu_model="simulated", cpus=[0], machine="x86_64")
        return device, SleepMethod(self.sleep_s)


class Timeline:
    """The scheduler's view of each cell: when it started and when its record was stored."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.finished: dict[str, float] = {}
        self.lock = threading.Lock()

    def cell_started(self, index, total, cell) -> None:
        with self.lock:
            self.started[cell.cell_id] = time.monotonic()

    def cell_finished(self, index, total, cell, record) -> None:
        with self.lock:
            self.finished[cell.cell_id] = time.monotonic()

    def message(self, line: str) -> None:
        pass


class Quiet:
    def message(self, line: str) -> None:
        pass


def machine_cpu_s() -> float:
    """CPU seconds every process of this machine has used (user + system, /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system = (int(v) for v in fields[:3])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def start_cluster(nodes: int, devices: list[str]):
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "node_ip_address": LOOPBACK},
    )
    for index in range(nodes):
        owned = devices[index::nodes]
        host = f"lab{index}"
        infos = [DeviceInfo(name, host, transport="simulated") for name in owned]
        resources, labels = advertisement(host, infos, __version__)
        cluster.add_node(
            num_cpus=0, node_ip_address=LOOPBACK, resources=resources, labels=labels,
            env_vars=node_environment(host, None, len(owned)),  # as edgebench agent runs it
        )  # fmt: skip
    return cluster


def measure(n: int, cells_per_device: int, sleep_s: float, nodes: int, work: Path) -> dict:
    names = [f"sim{i:03d}" for i in range(n)]
    cluster = start_cluster(nodes, names)
    lab = ClusterLab(cluster.address, opener=SimulatedOpener(sleep_s))
    try:
        config = RunConfig()
        config.sweep.devices = names
        t0 = time.monotonic()
        devices = lab.open(config, Quiet())  # type: ignore[arg-type]
        setup_s = time.monotonic() - t0
        model = work / "model.onnx"
        model.write_bytes(os.urandom(256 * 1024))  # shipped once per lab host
        ref = ModelRef("sim", str(model), model, "0" * 64)
        inputs = [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]
        cells = [
            Cell(
                DeviceSnapshot.of(device),
                ref,
                "onnxruntime",
                "fp32",
                k + 1,
                "all",
                None,
                1,
                inputs,
                TimingConfig(),
            )
            for device in devices
            for k in range(cells_per_device)
        ]
        store = ResultsStore(work / f"runs-{n}")
        run = store.create_run({"status": "running"})
        timeline = Timeline()
        t0, driver0, machine0 = time.monotonic(), time.process_time(), machine_cpu_s()
        records = execute_cells(cells, devices, run, timeline, rounds=1, methods=lab.methods())
        total_s = time.monotonic() - t0
        driver_s, machine_s = time.process_time() - driver0, machine_cpu_s() - machine0
    finally:
        lab.close()
        cluster.shutdown()
    bad = [r for r in records if r.status != Status.OK]
    if bad:
        raise SystemExit(f"{len(bad)} cells failed: {bad[0].error}")
    overheads = [timeline.finished[c] - timeline.started[c] - sleep_s for c in timeline.started]
    ideal = cells_per_device * sleep_s
    return {
        "devices": n,
        "cells": len(records),
        "setup_s": setup_s,
        "total_s": total_s,
        "ideal_s": ideal,
        "overhead_ms": statistics.mean(overheads) * 1000,
        "driver_cpu_ms": driver_s / len(records) * 1000,
        "machine_cpu_ms": machine_s / len(records) * 1000,
        "busy": machine_s / total_s / (os.cpu_count() or 1),
        "overhead_p90_ms": statistics.quantiles(overheads, n=10)[-1] * 1000
        if len(overheads) > 1
        else overheads[0] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="1,8,32,128")
    parser.add_argument("--cells", type=int, default=4, help="cells per device")
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds per simulated cell")
    parser.add_argument("--nodes", type=int, default=4)
    args = parser.parse_args()
    counts = [int(v) for v in args.devices.split(",")]
    rows = []
    print(
        f"{args.nodes} lab-host nodes on 127.0.0.1, {args.cells} cells per device, "
        f"{args.sleep:g} s per simulated cell, {os.cpu_count()} cpus",
        flush=True,
    )
    print(
        f"{'devices':>7} {'cells':>6} {'actors up':>10} {'total':>8} {'ideal':>7} "
        f"{'total/ideal':>11} {'overhead/cell':>14} {'p90':>9} {'cpu/cell':>9} "
        f"{'all cpu/cell':>12} {'cpus busy':>9}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            row = measure(n, args.cells, args.sleep, args.nodes, Path(tmp))
            rows.append(row)
            print(
                f"{row['devices']:>7} {row['cells']:>6} {row['setup_s']:>9.1f}s "
                f"{row['total_s']:>7.2f}s {row['ideal_s']:>6.1f}s "
                f"{row['total_s'] / row['ideal_s']:>11.3f} {row['overhead_ms']:>11.1f} ms "
                f"{row['overhead_p90_ms']:>6.1f} ms {row['driver_cpu_ms']:>6.1f} ms "
                f"{row['machine_cpu_ms']:>9.1f} ms {row['busy']:>8.0%}",
                flush=True,
            )
    flat = [r for r in rows if r["devices"] >= 8]
    if len(flat) >= 2:
        low = min(r["overhead_ms"] for r in flat)
        high = max(r["overhead_ms"] for r in flat)
        worst = max(r["total_s"] / r["ideal_s"] for r in rows)
        print(
            f"overhead per cell from {flat[0]['devices']} to {flat[-1]['devices']} devices: "
            f"{low:.1f}-{high:.1f} ms, spread {high / low - 1:+.0%} (goal within 20%); "
            f"worst total/ideal {worst:.3f} (goal <= 1.2)"
        )


if __name__ == "__main__":
    main()
