#!/usr/bin/env python3
"""How do the commands that read the results store scale with the nights a lab has stored?

It makes one real run here (`edgebench run` on the built-in mobilenetv2 with onnxruntime, few
iterations), widens it to ``--cells`` cells a night (copies of its cells under more device
names), and stores N nights of it (one run a day back from today, every latency sample scaled
by a seeded per-night factor). Then it times, on each store, the commands a lab runs every
morning, each in a fresh process as a user would:
  show       edgebench show LATEST
  compare    edgebench compare PREVIOUS LATEST
  history    edgebench history for one cell (its trend over every night)
  recommend  edgebench recommend over the devices of one night
and prints, per N, the store's size and each command's wall time (the median of --repeats).
The goal of issue 31: every command under 1 s at 365 nights of 60 cells, growing no worse than
linearly in what it returns. It reports; it does not judge (exit status 0).

Usage: python benchmarks/store_scale.py [--nights 30,365] [--cells 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

RECORDS = "records.jsonl"
RUN_FILE = "run.json"


def edgebench(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "edgebench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )


def private_env(folder: Path) -> dict[str, str]:
    """The environment of edgebench runs with their HOME and cache in ``folder``, the built-in
    models already generated on this machine reused."""
    env = dict(os.environ, HOME=str(folder / "home"), EDGEBENCH_CACHE=str(folder / "cache"))
    models = Path(os.environ.get("EDGEBENCH_CACHE", Path.home() / ".cache/edgebench"))
    if (models / "models").is_dir():
        (folder / "cache").mkdir()
        (folder / "cache" / "models").symlink_to(models / "models")
    return env


def real_run(folder: Path, env: dict[str, str]) -> Path:
    """One real run of a few cells on this machine; its folder."""
    store = folder / "seed"
    env = dict(env, EDGEBENCH_RESULTS=str(store))
    args = ["run", "--models", "mobilenetv2", "--frameworks", "onnxruntime", "--threads", "1"]
    made = edgebench([*args, "--iterations", "50", "--min-time", "0", "--format", "jsonl"], env)
    if made.returncode != 0:
        raise SystemExit(f"store_scale: the seed run failed: {made.stderr.strip()[-400:]}")
    (run,) = [p for p in store.iterdir() if (p / RECORDS).is_file()]
    return run


def widened(records: list[dict], cells: int) -> list[dict]:
    """``cells`` records a night: the seed's cells repeated under devices ``lab-01``, ..."""
    out = []
    for index in range(cells):
        record = dict(records[index % len(records)])
        device = f"lab-{index // len(records) + 1:02d}"
        record["cell_id"] = record["cell_id"].replace(record["device"], device, 1)
        record["device"] = device
        out.append(record)
    return out


def write_nights(store: Path, seed_run: Path, nights: int, cells: int) -> int:
    """``nights`` runs in ``store``, the newest today; the bytes written."""
    meta = json.loads((seed_run / RUN_FILE).read_text())
    records = widened(
        [json.loads(line) for line in (seed_run / RECORDS).read_text().splitlines() if line],
        cells,
    )
    rng = random.Random(0)
    today = datetime.now(UTC).replace(hour=2, minute=0, second=0, microsecond=0)
    written = 0
    for night in range(nights):
        when = today - timedelta(days=nights - 1 - night)
        run_id = when.strftime("%Y%m%d-%H%M%S-") + f"{night:04x}"
        folder = store / run_id
        folder.mkdir(parents=True)
        factor = 1.0 + rng.gauss(0.0, 0.02)
        night_meta = dict(meta, run_id=run_id, started_at=when.isoformat().replace("+00:00", "Z"))
        (folder / RUN_FILE).write_text(json.dumps(night_meta))
        lines = []
        for record in records:
            samples = [int(s * factor) for s in record.get("samples_ns") or []]
            lines.append(json.dumps(dict(record, run_id=run_id, samples_ns=samples)))
        text = "\n".join(lines) + "\n"
        (folder / RECORDS).write_text(text)
        written += len(text)
    return written


def timed(args: list[str], env: dict[str, str], repeats: int) -> float:
    """The median wall time of ``edgebench ARGS`` in a fresh process, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = edgebench(args, env)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"store_scale: edgebench {' '.join(args)}: {done.stderr[-400:]}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", default="30,365")
    parser.add_argument("--cells", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-store-scale-") as tmp:
        folder = Path(tmp)
        env = dict(os.environ, HOME=str(folder / "home"), EDGEBENCH_CACHE=str(folder / "cache"))
        models = Path(os.environ.get("EDGEBENCH_CACHE", Path.home() / ".cache/edgebench"))
        if (models / "models").is_dir():  # reuse the generated built-in models
            (folder / "cache").mkdir()
            (folder / "cache" / "models").symlink_to(models / "models")
        seed = real_run(folder, env)
        first = json.loads((seed / RECORDS).read_text().splitlines()[0])
        print(
            f"seed run: {seed.name}, {first['model']} · {first['framework']}; "
            f"{args.cells} cells a night"
        )
        print(
            f"{'nights':>7} {'store MB':>9} {'show s':>7} {'compare s':>10} "
            f"{'history s':>10} {'recommend s':>12}"
        )
        for nights in (int(n) for n in args.nights.split(",")):
            store = folder / f"store-{nights}"
            size = write_nights(store, seed, nights, args.cells)
            runs = sorted(p.name for p in store.iterdir())
            night_env = dict(env, EDGEBENCH_RESULTS=str(store))
            cell = [
                "--device",
                "lab-01",
                "--model",
                first["model"],
                "--framework",
                first["framework"],
                "--plot",
                str(folder / "trend.svg"),
            ]
            devices = ",".join(f"lab-{i:02d}" for i in range(1, 4))
            figures = [
                timed(["show", runs[-1]], night_env, args.repeats),
                timed(["compare", runs[-2], runs[-1]], night_env, args.repeats),
                timed(["history", *cell], night_env, args.repeats),
                timed(
                    ["recommend", "--devices", devices, "--model", first["model"]],
                    night_env,
                    args.repeats,
                ),
            ]
            print(
                f"{nights:>7} {size / 1e6:>9.1f} {figures[0]:>7.2f} {figures[1]:>10.2f} "
                f"{figures[2]:>10.2f} {figures[3]:>12.2f}",
                flush=True,
            )
            shutil.rmtree(store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
