#!/usr/bin/env python3
"""Wall time of a matrix over N emulated phones in one run vs the devices one at a time.

Starts the real adb server and N ADB device emulators on 127.0.0.1 (the test suite's peers;
each "phone" runs the Python runner on this host), then times:
  - one `edgebench run` over all N devices (one worker per device), and
  - one `edgebench run` per device, one after the other.
Goal: the parallel run takes at most 1.3x the slowest single device. On a machine with fewer
cores than devices the phones compete for the CPU, so keep N at or below the core count.

Usage: python benchmarks/parallel.py [--devices 2] [--min-time 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakes.adb_fixtures import connect_phone, disconnect_phone, start_adb_server  # noqa: E402
from fakes.models import save_conv_model  # noqa: E402


def lab_text(phones, adb_port: int) -> str:
    blocks = []
    for index, phone in enumerate(phones):
        blocks.append(
            "\n".join(
                [
                    f"[devices.phone{index}]",
                    'transport = "adb"',
                    f'serial = "{phone.serial}"',
                    f"adb_port = {adb_port}",
                    f'python = "{sys.executable}"',
                    f'work_dir = "{phone.sandbox / "wd"}"',
                ]
            )
        )
    return "\n\n".join(blocks) + "\n"


def timed_run(env: dict[str, str], args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "edgebench", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"edgebench run failed: {done.stderr.strip().splitlines()[-1:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-parallel-") as tmp:
        work = Path(tmp)
        model = save_conv_model(work / "net.onnx", [1, 3, 64, 64], channels=32)
        env = dict(
            os.environ, EDGEBENCH_CACHE=str(work / "cache"), EDGEBENCH_RESULTS=str(work / "results")
        )
        server = start_adb_server(work / "adb")
        phones = []
        try:
            for index in range(args.devices):
                phones.append(connect_phone(server, work / f"phone{index}"))
            lab = work / "lab.toml"
            lab.write_text(lab_text(phones, server.port))
            names = [f"phone{i}" for i in range(args.devices)]
            common = [
                "--lab",
                str(lab),
                "--models",
                str(model),
                "--frameworks",
                "onnxruntime",
                "--min-time",
                str(args.min_time),
                "--iterations",
                "10",
                "--warmup",
                "5",
                "--energy-source",
                "none",
                "--baseline-s",
                "0",
            ]
            # Warm: deploy runner and model to every phone, compute the reference once.
            timed_run(env, [*common, "--devices", ",".join(names), "--min-time", "0"])
            parallel = timed_run(env, [*common, "--devices", ",".join(names)])
            singles = [timed_run(env, [*common, "--devices", name]) for name in names]
        finally:
            for phone in phones:
                disconnect_phone(phone)
            server.stop()
    slowest = max(singles)
    print(f"{args.devices} emulated phones, one cell each, {args.min_time:g} s timed per cell")
    print(
        f"  one device at a time: {' + '.join(f'{s:.2f}' for s in singles)} "
        f"= {sum(singles):.2f} s (slowest {slowest:.2f} s)"
    )
    ratio = parallel / slowest
    print(
        f"  all devices in one run: {parallel:.2f} s -> {ratio:.2f}x the slowest device "
        f"(goal <= 1.3) -> {'OK' if ratio <= 1.3 else 'OVER'}; "
        f"{sum(singles) / parallel:.2f}x faster than sequential"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
