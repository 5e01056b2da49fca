"""CPU governors and clocks and thermal-zone temperatures: where they are in sysfs, and one
snapshot of them (``read_state``) for the before/after records and the cool-down.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import fnmatch
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .sysfs import sysfs_glob, sysfs_path, try_int, try_text

MAX_ZONES = 16

CPU_DIR = "/sys/devices/system/cpu"
THERMAL_DIR = "/sys/class/thermal"


def list_cpus(root: str = "/") -> List[int]:
    cpus = []
    for path in sysfs_glob(root, CPU_DIR + "/cpu[0-9]*"):
        name = os.path.basename(path)[3:]
        if name.isdigit():
            cpus.append(int(name))
    return sorted(cpus)


def cpufreq_path(root: str, cpu: int, attribute: str) -> str:
    return sysfs_path(root, "%s/cpu%d/cpufreq/%s" % (CPU_DIR, cpu, attribute))


def find_zones(
    root: str = "/", names: Optional[Sequence[str]] = None, cap: int = MAX_ZONES
) -> List[Tuple[str, str]]:
    """[(key, temp path)] of the thermal zones whose ``type`` matches one of ``names``
    (fnmatch patterns such as ``cpu_*``); all zones when ``names`` is empty; at most ``cap``.
    The key is the zone type, or ``type@thermal_zoneN`` when two zones share a type."""
    zones = []
    seen = set()
    for folder in sysfs_glob(root, THERMAL_DIR + "/thermal_zone*"):
        zone_type = try_text(os.path.join(folder, "type"))
        temp = os.path.join(folder, "temp")
        if not zone_type or not os.path.exists(temp):
            continue
        if names and not any(fnmatch.fnmatchcase(zone_type, pattern) for pattern in names):
            continue
        key = zone_type
        if key in seen:
            key = "%s@%s" % (zone_type, os.path.basename(folder))
        seen.add(key)
        zones.append((key, temp))
        if len(zones) >= cap:
            break
    return zones


def read_state(
    root: str = "/",
    cpus: Optional[Sequence[int]] = None,
    zone_names: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """One-shot snapshot for before/after-cell records and cool-down: per cpu the governor,
    the current frequency and the limits (kHz: cpuinfo's hardware min/max, scaling's policy
    min/max), and temperatures (°C) by zone type. ``cpus`` None = all cpus."""
    if cpus is None:
        cpus = list_cpus(root)
    per_cpu: Dict[str, Dict[str, Any]] = {}
    for cpu in cpus:
        per_cpu[str(cpu)] = {
            "governor": try_text(cpufreq_path(root, cpu, "scaling_governor")),
            "cur_khz": try_int(cpufreq_path(root, cpu, "scaling_cur_freq")),
            "max_khz": try_int(cpufreq_path(root, cpu, "cpuinfo_max_freq")),
            "min_khz": try_int(cpufreq_path(root, cpu, "cpuinfo_min_freq")),
            "scaling_max_khz": try_int(cpufreq_path(root, cpu, "scaling_max_freq")),
            "scaling_min_khz": try_int(cpufreq_path(root, cpu, "scaling_min_freq")),
        }
    temps: Dict[str, Optional[float]] = {}
    for key, path in find_zones(root, zone_names):
        milli = try_int(path)
        temps[key] = None if milli is None else milli / 1000.0
    return {
        "t_mono_ns": time.monotonic_ns(),
        "t_perf_ns": time.perf_counter_ns(),
        "cpus": per_cpu,
        "temp_c": temps,
    }


# --- sampling --------------------------------------------------------------------------------
