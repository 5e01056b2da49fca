#!/usr/bin/env python3
"""Per-cell overhead of a remote device for an already-deployed model.

Starts a real sshd and the real adb server with the ADB device emulator on 127.0.0.1 (the
test suite's peers), deploys a tiny model once, then times whole cells (stage + push spec +
start runner + one inference + pull outputs + output check) on each device and compares them
with the same cell on the local device. The difference is what the transport costs per cell.

Usage: python benchmarks/overhead.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakes.adb_fixtures import connect_phone, disconnect_phone, start_adb_server  # noqa: E402
from fakes.models import save_conv_model  # noqa: E402
from fakes.ssh_fixtures import start_sshd  # noqa: E402

from edgebench.lab.device import Device, LocalDevice  # noqa: E402
from edgebench.lab.device_lock import DeviceLockFile  # noqa: E402
from edgebench.lab.remote import RemoteDevice  # noqa: E402
from edgebench.lab.transports.adb import AdbTarget, AdbTransport  # noqa: E402
from edgebench.lab.transports.ssh import SshTarget, SshTransport  # noqa: E402
from edgebench.measure.methods import method_for  # noqa: E402
from edgebench.measure.output_check import CheckSettings  # noqa: E402
from edgebench.measure.scheduler import run_cell  # noqa: E402
from edgebench.planning.cells import build_cells, resolve_inputs  # noqa: E402
from edgebench.planning.config import TimingConfig  # noqa: E402
from edgebench.planning.modelref import resolve_models  # noqa: E402


def time_cells(device: Device, model_path: Path, cache: Path, repeats: int) -> list[float]:
    models = resolve_models([str(model_path)], cache)
    cells = build_cells(
        [device],
        models,
        ["onnxruntime"],
        inputs=resolve_inputs(models, []),
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=TimingConfig(warmup=0, iterations=1, min_time_s=0.0),
        availability=method_for(device).availability,
    )
    checks = CheckSettings()
    run_cell("warm", cells[0], device, checks)  # deploys runner + model, computes the reference
    walls = []
    for index in range(repeats):
        started = time.perf_counter()
        record = run_cell(f"bench{index}", cells[0], device, checks)
        walls.append(time.perf_counter() - started)
        assert record.status == "ok", record.error
    return walls


def time_lock_renewals(device: RemoteDevice, repeats: int) -> list[float]:
    """The device lock's lease renewal, which a run adds before every cell."""
    lock = DeviceLockFile(device.name, device.transport, device.work_dir, 600, "bench")
    lock.acquire(wait=False, report=print, timeout_s=0)
    walls = []
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            assert lock.renew(force=True) is None
            walls.append(time.perf_counter() - started)
    finally:
        lock.release()
    return walls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-overhead-") as tmp:
        work = Path(tmp)
        model = save_conv_model(work / "tiny.onnx", [1, 3, 32, 32])
        cache = work / "cache"
        results: dict[str, list[float]] = {}
        renewals: dict[str, list[float]] = {}
        results["local"] = time_cells(LocalDevice(), model, cache, args.repeats)

        server = start_sshd(work / "sshd")
        try:
            ssh = SshTransport(
                SshTarget(
                    "ssh-box",
                    server.host,
                    server.port,
                    server.user,
                    server.client_key,
                    server.known_hosts,
                )
            )
            device = RemoteDevice(
                "ssh-box", ssh, work_dir=str(work / "ssh-wd"), python=sys.executable
            )
            results["ssh"] = time_cells(device, model, cache, args.repeats)
            renewals["ssh"] = time_lock_renewals(device, args.repeats)
            ssh.close()
        finally:
            server.stop()

        adb = start_adb_server(work / "adb")
        try:
            phone = connect_phone(adb, work / "phone")
            try:
                transport = AdbTransport(
                    AdbTarget("emu-phone", phone.serial, "127.0.0.1", adb.port)
                )
                device = RemoteDevice(
                    "emu-phone",
                    transport,
                    work_dir=str(phone.sandbox / "wd"),
                    python=sys.executable,
                )
                results["adb"] = time_cells(device, model, cache, args.repeats)
                renewals["adb"] = time_lock_renewals(device, args.repeats)
            finally:
                disconnect_phone(phone)
        finally:
            adb.stop()

    local = statistics.median(results["local"])
    print(f"whole cell, 1 inference of a tiny model, median of {args.repeats}:")
    for name, walls in results.items():
        median = statistics.median(walls)
        extra = "" if name == "local" else f"  overhead vs local {1000 * (median - local):7.1f} ms"
        print(f"  {name:6} {1000 * median:7.1f} ms (min {1000 * min(walls):.1f}){extra}")
    print("device lock lease renewal (sent at most every 75 s, so not per quick cell), median:")
    for name, walls in renewals.items():
        print(f"  {name:6} {1000 * statistics.median(walls):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
