"""What this machine's own GPU tools print, for the accelerator probe's tests to check it
against: ``vulkaninfo --summary``'s devices and ``clinfo``'s platforms and devices (empty when
the tool or a device is missing), and the skip reasons naming the Debian packages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

VULKAN_SKIP = "needs a Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1 vulkan-tools"
OPENCL_SKIP = "needs an OpenCL device: apt-get install pocl-opencl-icd ocl-icd-libopencl1 clinfo"


def driver_manifest(path: Path, library: str = "libedgebench_no_such_driver.so") -> Path:
    """A Vulkan driver manifest naming ``library``. Given in VK_DRIVER_FILES, the default (a
    library found nowhere) leaves the loader with no driver, as a machine without one; a path
    that names no manifest at all is the variable's fault instead (runners/vulkan_env.py)."""
    icd = {"library_path": library, "api_version": "1.3.0"}
    path.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": icd}))
    return path


def tool_output(*argv: str) -> str:
    if shutil.which(argv[0]) is None:
        return ""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return done.stdout if done.returncode == 0 else ""


def vulkaninfo_devices() -> list[dict[str, str]]:
    """``vulkaninfo --summary``'s GPU sections as key -> value."""
    summary = tool_output("vulkaninfo", "--summary")
    devices: list[dict[str, str]] = []
    for line in summary.split("Devices:", 1)[-1].splitlines():
        if re.match(r"^GPU\d+:", line.strip()):
            devices.append({})
        elif "=" in line and devices:
            key, _, value = line.partition("=")
            devices[-1][key.strip()] = value.strip()
    return devices


def clinfo_devices() -> list[dict[str, str]]:
    """Each device of ``clinfo``'s full listing, with its platform's name."""
    devices: list[dict[str, str]] = []
    platform = ""
    listing = tool_output("clinfo").split("NULL platform behavior", 1)[0]
    for line in listing.splitlines():
        key, value = line[:50].strip(), line[50:].strip()
        if key == "Platform Name" and not devices:
            platform = value
        if key == "Device Name":
            devices.append({"Platform Name": platform})
        if devices and key in ("Device Name", "Device Type", "Device Version", "Driver Version"):
            devices[-1].setdefault(key, value)
    return devices
