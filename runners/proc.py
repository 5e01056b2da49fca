"""What /proc says about this process (resident memory, the cores it may run on) and pinning it.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

from .protocol import parse_cpu_list


class PinningError(Exception):
    """The cores asked for could not be applied (the runner reports a ``pinning`` error)."""


def read_proc_status() -> Dict[str, str]:
    fields = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def status_kb(fields: Dict[str, str], key: str) -> Optional[int]:
    value = fields.get(key)
    if not value:
        return None
    try:
        return int(value.split()[0])
    except ValueError:
        return None


def rss_kb() -> Optional[int]:
    return status_kb(read_proc_status(), "VmRSS")


def peak_rss_kb() -> Optional[int]:
    hwm = status_kb(read_proc_status(), "VmHWM")
    if hwm is not None:
        return hwm
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except (ImportError, OSError):
        return None


def effective_cores() -> Optional[List[int]]:
    """The affinity the kernel actually applied, as reported in /proc/self/status."""
    allowed = read_proc_status().get("Cpus_allowed_list")
    if allowed:
        try:
            return parse_cpu_list(allowed)
        except ValueError:
            pass  # not the kernel's syntax: ask the scheduler instead
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return None


def apply_affinity(cores: Optional[Sequence[int]]) -> None:
    """Pin this process to ``cores`` (nothing when None or empty); PinningError when refused."""
    if not cores:
        return
    if not hasattr(os, "sched_setaffinity"):
        raise PinningError("this platform cannot pin threads to cores")
    try:
        os.sched_setaffinity(0, set(int(c) for c in cores))
    except (OSError, ValueError) as exc:
        raise PinningError("could not pin to cores %s: %s" % (list(cores), exc)) from exc
