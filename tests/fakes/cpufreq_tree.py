"""A synthetic cpufreq tree with the kernel's layout, under a root folder that stands for ``/``.

As on a real phone, each policy's attributes live in ``/sys/devices/system/cpu/cpufreq/policyN``
(N its first core) and every core's ``cpuK/cpufreq`` is a link to its policy, so changing a
policy's limit moves every core of the cluster at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

CPU_DIR = Path("sys/devices/system/cpu")


def write_policy(
    root: Path,
    cpus: Sequence[int],
    *,
    governor: str = "schedutil",
    hardware_khz: tuple[int, int] = (300000, 2400000),
    limits_khz: tuple[int, int] | None = None,
    cur_khz: int | None = None,
) -> Path:
    """One cluster's policy (cpuinfo min/max ``hardware_khz``, scaling min/max ``limits_khz``,
    default the hardware's), linked from each of its cores; returns the policy folder."""
    policy = root / CPU_DIR / "cpufreq" / f"policy{cpus[0]}"
    policy.mkdir(parents=True, exist_ok=True)
    low, high = limits_khz or hardware_khz
    values = {
        "scaling_governor": governor,
        "scaling_available_governors": "performance schedutil powersave",
        "cpuinfo_min_freq": hardware_khz[0],
        "cpuinfo_max_freq": hardware_khz[1],
        "scaling_min_freq": low,
        "scaling_max_freq": high,
        "scaling_cur_freq": cur_khz or high,
        "related_cpus": " ".join(str(cpu) for cpu in cpus),
        "affected_cpus": " ".join(str(cpu) for cpu in cpus),
    }
    for name, value in values.items():
        (policy / name).write_text(f"{value}\n")
    for cpu in cpus:
        folder = root / CPU_DIR / f"cpu{cpu}"
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / "cpufreq"
        if not link.exists():
            link.symlink_to(Path("..") / "cpufreq" / policy.name)
    return policy


def write_phone_cpus(root: Path, governor: str = "schedutil") -> dict[str, Path]:
    """A big.LITTLE phone: cpu0-3 at 0.3-1.8 GHz, cpu4-7 at 0.6-2.4 GHz; the policy folders
    by cluster name."""
    return {
        "little": write_policy(root, range(4), governor=governor, hardware_khz=(300000, 1804800)),
        "big": write_policy(root, range(4, 8), governor=governor, hardware_khz=(600000, 2400000)),
    }


def set_limit(policy: Path, attribute: str, khz: int) -> None:
    """What a thermal daemon or the Power HAL does: write one scaling limit of a policy."""
    (policy / attribute).write_text(f"{khz}\n")
