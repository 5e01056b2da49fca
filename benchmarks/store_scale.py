#!/usr/bin/env python3
"""How do the commands that read the results store scale with the nights a lab has stored?

It makes one real run here (`edgebench run` on the built-in mobilenetv2 with onnxruntime, few
iterations), widens it to ``--cells`` cells a night (copies of its cells under more device
names), and stores N nights of it (one run a day, every latency sample scaled by a seeded
per-night factor), as files copied in: the results index learns of them on the first command,
which builds it ("build"). Then it times, on each store, the commands a lab runs every morning,
each in a fresh process as a user would:
  show       edgebench show LATEST
  compare    edgebench compare PREVIOUS LATEST
  history    edgebench history for one cell (its trend over every night)
  runs       edgebench history (the list of every run)
  recommend  edgebench recommend over the devices of one night
  export     edgebench export LATEST (CSV)
and, after one more night is copied in, `edgebench show` once ("new night": the index syncs
that run first). It prints, per N, the store's size and each command's wall time (the median
of --repeats), then each command's growth between the two largest N and whether the goal of
issue 31 is met: every command under 1 s at 365 nights of 60 cells. Exit status 0 either way.

Usage: python benchmarks/store_scale.py [--nights 30,365,1000] [--cells 60] [--repeats 3]
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
FIRST_NIGHT = datetime(2024, 1, 1, 2, 0, tzinfo=UTC)


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


def write_nights(store: Path, seed_run: Path, nights: int, cells: int, start: int = 0) -> int:
    """``nights`` runs in ``store``, one a day from the ``start``-th night after ``FIRST_NIGHT``;
    the bytes written."""
    meta = json.loads((seed_run / RUN_FILE).read_text())
    records = widened(
        [json.loads(line) for line in (seed_run / RECORDS).read_text().splitlines() if line],
        cells,
    )
    rng = random.Random(start)
    written = 0
    for night in range(start, start + nights):
        when = FIRST_NIGHT + timedelta(days=night)
        run_id = when.strftime("%Y%m%d-%H%M%S-") + f"{night:04x}"
        folder = store / run_id
        folder.mkdir(parents=True)
        factor = 1.0 + rng.gauss(0.0, 0.02)
        stamp = when.isoformat().replace("+00:00", "Z")
        night_meta = dict(meta, run_id=run_id, created_at=stamp, started_at=stamp)
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


#: (column, the command's arguments) timed on each store, the results index already built.
def commands(
    runs: list[str], first: dict, plot: Path, devices_a_night: int
) -> list[tuple[str, list[str]]]:
    cell = ["--device", "lab-01", "--model", first["model"], "--framework", first["framework"]]
    devices = ",".join(f"lab-{i:02d}" for i in range(1, min(3, devices_a_night) + 1))
    return [
        ("show", ["show", runs[-1]]),
        ("compare", ["compare", runs[-2], runs[-1]]),
        ("history", ["history", *cell, "--plot", str(plot)]),
        ("runs", ["history"]),
        ("recommend", ["recommend", "--devices", devices, "--model", first["model"]]),
        ("export", ["export", runs[-1], "--out", str(plot.with_suffix(".csv"))]),
    ]


def run_folders(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir() if p.is_dir())


def verdict(table: dict[int, dict[str, float]], goal_nights: int) -> list[str]:
    """The growth of each command's time between the two largest stores, and whether every
    command met the goal at ``goal_nights``."""
    lines = []
    sizes = sorted(table)
    if len(sizes) >= 2:
        small, large = sizes[-2], sizes[-1]
        growth = ", ".join(
            f"{name} x{table[large][name] / table[small][name]:.2f}"
            for name in table[large]
            if table[small][name] > 0
        )
        lines.append(f"growth {small} -> {large} nights (x{large / small:.2f} data): {growth}")
    if goal_nights in table:
        slow = {name: t for name, t in table[goal_nights].items() if t >= 1.0}
        met = (
            "met"
            if not slow
            else f"not met ({', '.join(f'{n} {t:.2f} s' for n, t in slow.items())})"
        )
        lines.append(f"goal (every command under 1 s at {goal_nights} nights): {met}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", default="30,365,1000")
    parser.add_argument("--cells", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-store-scale-") as tmp:
        folder = Path(tmp)
        env = private_env(folder)
        # As installed: compiled modules cached, so each command is not timed compiling them.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        seed = real_run(folder, env)
        first = json.loads((seed / RECORDS).read_text().splitlines()[0])
        print(
            f"seed run: {seed.name}, {first['model']} · {first['framework']}; "
            f"{args.cells} cells a night"
        )
        seed_cells = sum(1 for line in (seed / RECORDS).read_text().splitlines() if line)
        devices_a_night = -(-args.cells // seed_cells)  # as widened() names them
        names = [name for name, _ in commands(["a", "b"], first, folder, devices_a_night)]
        print(
            f"{'nights':>7} {'store MB':>9} {'build s':>8} "
            + " ".join(f"{n + ' s':>11}" for n in names)
            + f" {'new night s':>12}"
        )
        table: dict[int, dict[str, float]] = {}
        for nights in (int(n) for n in args.nights.split(",")):
            store = folder / f"store-{nights}"
            size = write_nights(store, seed, nights, args.cells)
            night_env = dict(env, EDGEBENCH_RESULTS=str(store))
            build = timed(["history"], night_env, 1)  # the first command builds the index
            todo = commands(run_folders(store), first, folder / "trend.svg", devices_a_night)
            table[nights] = {name: timed(cmd, night_env, args.repeats) for name, cmd in todo}
            write_nights(store, seed, 1, args.cells, start=nights)  # tonight's run, as copied
            fresh = timed(["show"], night_env, 1)  # syncs the one new run first
            print(
                f"{nights:>7} {size / 1e6:>9.1f} {build:>8.2f} "
                + " ".join(f"{table[nights][n]:>11.2f}" for n in names)
                + f" {fresh:>12.2f}",
                flush=True,
            )
            shutil.rmtree(store)
        for line in verdict(table, 365):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
