"""How both sides name what serves a device: the software implementation behind an
accelerator device (the runner's accelerator probe and the host's readers of benchmark tools
and Android GPU facts classify devices the same way), and the kernel's boot id, equal on a
device and the host when both run on one kernel (an emulated device, runners/emulation.py).

Standard library only, Python 3.8.
"""

from __future__ import annotations

from typing import Optional

#: Where Linux keeps the id of the running kernel's boot.
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def software_kind(api: str, name: str, device_type: str, driver: str = "") -> Optional[str]:
    """Which software implementation serves a device (``lavapipe``, ``SwiftShader``, ``pocl``,
    ...), "a CPU device" for any other device of type CPU, None for hardware."""
    text = " ".join((name, driver)).lower()
    if "llvmpipe" in text or "lavapipe" in text:
        return "lavapipe" if api == "Vulkan" else "llvmpipe"
    if "swiftshader" in text:
        return "SwiftShader"
    if "portable computing language" in text or "pocl" in text:
        return "pocl"
    if device_type == "cpu":
        return "the CPU plugin" if api == "OpenVINO" else "a CPU device"
    return None


def boot_id() -> Optional[str]:
    """This machine's kernel boot id; None where the kernel has none."""
    try:
        with open(BOOT_ID_PATH) as fh:
            return fh.read().strip() or None
    except OSError:
        return None
