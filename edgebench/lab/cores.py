"""Core selections: explicit ids ("0", "0-3", "0,2"), "all", or cluster names."""

from __future__ import annotations

from collections.abc import Mapping

from edgebench.errors import UserError
from edgebench.runners.protocol import parse_cpu_list  # shared with the runner; re-exported


def format_cpu_list(cpus: list[int]) -> str:
    """Sorted ids back to compact cpu-list syntax: [0,1,2,5] -> "0-2,5"."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def detect_clusters(max_freq_khz: Mapping[int, int]) -> dict[str, list[int]]:
    """Cores with equal cpuinfo_max_freq form a cluster, named by rank.

    Two clusters: little/big. Three: little/mid/big. A top cluster of one core on a chip with
    three or more clusters is also called "prime". One cluster: no names (only "all").
    """
    groups: dict[int, list[int]] = {}
    for cpu, freq in max_freq_khz.items():
        groups.setdefault(freq, []).append(cpu)
    ordered = [sorted(groups[f]) for f in sorted(groups)]
    if len(ordered) < 2:
        return {}
    names: dict[str, list[int]] = {"little": ordered[0], "big": ordered[-1]}
    if len(ordered) == 3:
        names["mid"] = ordered[1]
    if len(ordered) >= 4:
        names["mid"] = sorted(c for group in ordered[1:-2] for c in group)
        names["big"] = ordered[-2]
        names["prime"] = ordered[-1]
    elif len(ordered) == 3 and len(ordered[-1]) == 1:
        names["prime"] = ordered[-1]
    return names


def resolve_cores(
    selection: str, available: list[int], clusters: Mapping[str, list[int]], device: str
) -> list[int] | None:
    """Cpu ids for ``selection`` on a device; None means "all" (no restriction)."""
    text = selection.strip().lower()
    if text in ("", "all"):
        return None
    if text in clusters:
        cluster = list(clusters[text])
        missing = [c for c in cluster if c not in available]
        if missing and available:
            # A profile written for another board: the runner could not pin to these cpus.
            raise UserError(
                f"--cores {selection}: cluster {text!r} is cpus {format_cpu_list(cluster)}, "
                f"but device {device} has cpus {format_cpu_list(available)}; fix the cluster "
                "in its profile or pick another one"
            )
        return cluster
    if text[0].isalpha():
        known = ", ".join(["all", *sorted(clusters)])
        raise UserError(f"--cores {selection}: device {device} has no cluster {text!r} ({known})")
    try:
        cpus = parse_cpu_list(text)
    except ValueError as exc:
        raise UserError(f"--cores {selection}: {exc}; use e.g. 0, 0-3, 0,2 or all") from exc
    missing = [c for c in cpus if c not in available]
    if missing:
        raise UserError(
            f"--cores {selection}: cpu {format_cpu_list(missing)} is not available on device "
            f"{device} (cpus {format_cpu_list(available)})"
        )
    return cpus
