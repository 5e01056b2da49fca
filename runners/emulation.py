"""Is this CPU emulated? Read on the device by the runner's probe (Python 3.8+, stdlib only).

Under qemu's user mode the process sees the guest architecture (``uname -m`` says aarch64) but
the kernel is the host's, and so is its /proc/cpuinfo: an x86 vendor and x86 flags under an ARM
process, or ARM features under an x86 one, mean a translator sits between the program and the
chip. The host adds its own check (the same kernel boot id as the host under another machine
name), and the lab file can say it outright.
"""

from __future__ import annotations

import platform
from typing import Dict, Optional, Tuple

ARM_MACHINES = ("aarch64", "arm64", "armv7l", "armv8l", "armv7", "arm")
X86_MACHINES = ("x86_64", "amd64", "i386", "i686", "x86")
X86_VENDORS = ("GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "Shanghai")


def machine_family(machine: str) -> Optional[str]:
    machine = machine.lower()
    if machine in ARM_MACHINES or machine.startswith("arm"):
        return "arm"
    if machine in X86_MACHINES:
        return "x86"
    return None


def cpuinfo_family(cpuinfo: str) -> Tuple[Optional[str], Optional[str]]:
    """The architecture /proc/cpuinfo describes ("x86", "arm" or None) and the CPU's name."""
    fields: Dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or fields.get("Hardware") or fields.get("Processor")
    if fields.get("vendor_id") in X86_VENDORS or " sse2" in " " + fields.get("flags", ""):
        return "x86", name
    if "CPU implementer" in fields or "asimd" in fields.get("Features", "").split():
        return "arm", name
    return None, name


def detect(
    machine: Optional[str] = None, cpuinfo_path: str = "/proc/cpuinfo"
) -> Tuple[bool, Optional[str]]:
    """(emulated, evidence). Unknown counts as not emulated: the host and the lab can still say
    otherwise."""
    machine = machine or platform.machine()
    try:
        with open(cpuinfo_path, errors="replace") as fh:
            cpuinfo = fh.read(1 << 16)
    except OSError:
        return False, None
    own = machine_family(machine)
    described, name = cpuinfo_family(cpuinfo)
    if own and described and own != described:
        cpu = " (%s)" % name if name else ""
        return True, (
            "the process runs as %s but the kernel's /proc/cpuinfo describes an %s CPU%s: "
            "a user-mode emulator such as qemu translates every instruction"
            % (machine, described, cpu)
        )
    return False, None
