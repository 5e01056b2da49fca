#!/usr/bin/env python3
"""How long does `edgebench publish` take over a year of nights, and what does the site hold?

It makes one real run here and stores --nights synthetic nights of --cells cells from it (as
benchmarks/store_scale.py does), then shapes them like a lab's year: each night's latencies
follow its seeded wobble, and every --step-every'th device steps up by --step from night
--step-night on, the night its framework version changes. Then, each in a fresh process:
  first     edgebench publish into an empty folder (every page and every night's report)
  rebuild   edgebench publish again after one more night (only what changed)
and it prints each one's time, pages written and unchanged, and the site's size. With --shots
DIR it saves headless Chromium screenshots of index.html, a cell page with a step and
regressions.html there. It reports; it does not judge (exit status 0).

Usage: python benchmarks/publish_site.py [--nights 365] [--cells 60] [--shots DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from store_scale import RECORDS, RUN_FILE, edgebench, private_env, real_run, write_nights

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _scaled(record: dict, factor: float) -> dict:
    latency = {
        key: value * factor if key != "cv" and isinstance(value, float) else value
        for key, value in (record.get("latency_ms") or {}).items()
    }
    return dict(record, latency_ms=latency)


def _created_at(run_id: str) -> str:
    return datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").isoformat() + "+00:00"


def shape_nights(store: Path, seed: Path, step_night: int, step_every: int, step: float) -> None:
    """Give each night its date (``created_at``) and its records the latency figures of their
    samples' wobble (write_nights scales the samples only); step up every ``step_every``'th
    device from ``step_night`` on, with a new framework version that night."""
    seed_records = [json.loads(line) for line in (seed / RECORDS).read_text().splitlines() if line]
    for night, folder in enumerate(sorted(p for p in store.iterdir() if p.is_dir())):
        meta = json.loads((folder / RUN_FILE).read_text())
        meta["created_at"] = _created_at(folder.name)
        (folder / RUN_FILE).write_text(json.dumps(meta))
        lines = []
        for index, line in enumerate((folder / RECORDS).read_text().splitlines()):
            record = json.loads(line)
            seed_samples = seed_records[index % len(seed_records)]["samples_ns"]
            samples = record["samples_ns"]
            factor = sum(samples) / max(sum(seed_samples), 1)
            if night >= step_night and int(record["device"].rsplit("-", 1)[1]) % step_every == 1:
                factor *= step
                samples = [int(s * step) for s in samples]
                record["framework_version"] = f"{record.get('framework_version')}-next"
            lines.append(json.dumps(dict(_scaled(record, factor), samples_ns=samples)))
        (folder / RECORDS).write_text("\n".join(lines) + "\n")


def one_more_night(store: Path) -> str:
    """A copy of the newest night, a day later; its run id."""
    newest = max(p for p in store.iterdir() if p.is_dir())
    when = datetime.strptime(newest.name[:15], "%Y%m%d-%H%M%S") + timedelta(days=1)
    run_id = when.strftime("%Y%m%d-%H%M%S-") + "ffff"
    shutil.copytree(newest, store / run_id)
    meta = json.loads((store / run_id / RUN_FILE).read_text())
    meta.update(run_id=run_id, created_at=_created_at(run_id))
    (store / run_id / RUN_FILE).write_text(json.dumps(meta))
    records = (store / run_id / RECORDS).read_text().replace(newest.name, run_id)
    (store / run_id / RECORDS).write_text(records)
    return run_id


def timed_publish(site: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = edgebench(["publish", "--out", str(site)], env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"publish_site: edgebench publish: {done.stderr[-600:]}")
    progress = [line for line in done.stderr.splitlines() if line.startswith("publish:")]
    return seconds, f"{done.stdout.strip()} [{len(progress)} progress lines]"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def screenshots(site: Path, shots: Path, profile: Path) -> list[Path]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("publish_site: no screenshots: chromium not installed (apt-get install -y chromium)")
        return []
    index = (site / "index.html").read_text(encoding="utf-8")
    stepped = re.search(r'<a class="tile[^"]*worse[^"]*" href="([^"]+)"', index)
    pages = {"index": "index.html", "regressions": "regressions.html"}
    if stepped:
        pages["cell"] = stepped.group(1)
    shots.mkdir(parents=True, exist_ok=True)
    made = []
    for name, page in pages.items():
        shot = shots / f"{name}.png"
        subprocess.run(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}",
             "--window-size=1280,1400", (site / page).resolve().as_uri()],
            capture_output=True, timeout=180, check=False,
        )  # fmt: skip
        if shot.exists():
            made.append(shot)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--cells", type=int, default=60)
    parser.add_argument("--step-night", type=int, default=300)
    parser.add_argument("--step-every", type=int, default=5)
    parser.add_argument("--step", type=float, default=1.06)
    parser.add_argument("--shots", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgebench-publish-site-") as tmp:
        folder = Path(tmp)
        env = private_env(folder)
        seed = real_run(folder, env)
        store = folder / "store"
        size = write_nights(store, seed, args.nights, args.cells)
        shape_nights(store, seed, args.step_night, args.step_every, args.step)
        print(
            f"{args.nights} nights of {args.cells} cells ({size / 1e6:.0f} MB); every "
            f"{args.step_every}th device steps {args.step - 1:+.0%} at night {args.step_night}",
            flush=True,
        )
        env = dict(env, EDGEBENCH_RESULTS=str(store))
        site = folder / "site"
        seconds, said = timed_publish(site, env)
        print(f"first build: {seconds:.1f} s: {said}", flush=True)
        one_more_night(store)
        seconds, said = timed_publish(site, env)
        print(f"rebuild after one more night: {seconds:.1f} s: {said}", flush=True)
        reports = _size(site / "reports")
        pages = _size(site) - reports
        print(
            f"site: {pages / 1e6:.1f} MB of dashboard pages, {reports / 1e6:.1f} MB of run reports"
        )
        if args.shots:
            for shot in screenshots(site, args.shots, folder / "profile"):
                print(f"screenshot: {shot} ({shot.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
