"""The conditions a cell runs under, set up on the device: a cpufreq governor for its cores
(restored afterwards), a cool-down before it, and a marker file while its window runs.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .device_state import cpufreq_path, read_state


class Governor:
    """The cores switched to ``wanted`` while the cell runs; ``report`` says what each had
    before and what failed (setting a governor needs root on the device)."""

    def __init__(self, root: str, cpus: Sequence[int], wanted: str) -> None:
        self.root = root
        self.cpus = list(cpus)
        self.report: Dict[str, Any] = {"wanted": wanted, "previous": {}, "errors": []}

    def __enter__(self) -> Governor:
        wanted = self.report["wanted"]
        for cpu in self.cpus:
            path = cpufreq_path(self.root, cpu, "scaling_governor")
            try:
                with open(path) as fh:
                    previous = fh.read().strip()
                if previous != wanted:
                    with open(path, "w") as fh:
                        fh.write(wanted)
                self.report["previous"][str(cpu)] = previous
            except OSError as exc:
                self.report["errors"].append(
                    "cpu%d: cannot set governor (%s); needs root on the device"
                    % (cpu, exc.strerror or exc)
                )
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for cpu, previous in self.report["previous"].items():
            path = cpufreq_path(self.root, int(cpu), "scaling_governor")
            try:
                with open(path, "w") as fh:
                    fh.write(previous)
            except OSError as exc:
                self.report["errors"].append("cpu%s: could not restore: %s" % (cpu, exc))
        self.report["restored"] = True


def hottest_zone_c(root: str, zones: Optional[List[str]]) -> Optional[float]:
    temps = read_state(root, [], zones).get("temp_c") or {}
    values = [v for v in temps.values() if isinstance(v, (int, float))]
    return max(values) if values else None


def cool_down(
    root: str, zones: Optional[List[str]], limit_c: float, max_wait_s: float
) -> Dict[str, Any]:
    """Wait (at most ``max_wait_s``) until the hottest zone is below ``limit_c``."""
    start = time.monotonic()
    first = current = hottest_zone_c(root, zones)
    while current is not None and current > limit_c and time.monotonic() - start < max_wait_s:
        time.sleep(min(0.5, max(0.0, max_wait_s - (time.monotonic() - start))))
        current = hottest_zone_c(root, zones)
    return {
        "limit_c": limit_c,
        "start_c": first,
        "end_c": current,
        "waited_s": round(time.monotonic() - start, 3),
        "reached": current is None or current <= limit_c,
    }


@contextmanager
def sync_marker(path: str) -> Iterator[None]:
    """A timed-region hook: ``path`` exists (holding this PID) while the window runs, for an
    external power meter to align its own trace with."""
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    try:
        yield
    finally:
        if os.path.exists(path):
            os.unlink(path)
