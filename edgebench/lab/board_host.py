"""What this machine must offer to build and enter the emulated arm64 board
(``emulated_board``): Linux, root, mmdebstrap, and aarch64 programs handed to qemu by
binfmt_misc (with the F flag, so they also run after chroot)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from edgebench import process_group

QEMU = "qemu-aarch64-static"
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
BINFMT_ENTRY = "qemu-aarch64"


def emulation_problem() -> str | None:
    """None when aarch64 programs exec here (binfmt_misc hands them to qemu), else what is
    missing and the line that fixes it."""
    if shutil.which(QEMU) is None:
        return f"{QEMU} is not installed: apt-get install qemu-user-static binfmt-support"
    entry = BINFMT_DIR / BINFMT_ENTRY
    try:
        text = entry.read_text()
    except OSError:
        return (
            f"binfmt_misc has no {BINFMT_ENTRY} entry: as root, mount -t binfmt_misc binfmt_misc "
            f"{BINFMT_DIR} && update-binfmts --enable {BINFMT_ENTRY}"
        )
    if not text.startswith("enabled"):
        fix = f"update-binfmts --enable {BINFMT_ENTRY}"
        return f"binfmt_misc's {BINFMT_ENTRY} entry is disabled: {fix}"
    flags = next((ln.split(":", 1)[1] for ln in text.splitlines() if ln.startswith("flags:")), "")
    if "F" not in flags:
        return (
            f"binfmt_misc's {BINFMT_ENTRY} entry lacks the F flag, so aarch64 programs cannot "
            "run after chroot: use Debian's qemu-user-static, which registers it with F"
        )
    return None


def enable_emulation() -> str | None:
    """Mount binfmt_misc and enable qemu-aarch64 when running as root; returns what is still
    missing (None when aarch64 programs now exec)."""
    problem = emulation_problem()
    if problem is None or os.geteuid() != 0 or shutil.which(QEMU) is None:
        return problem
    if not (BINFMT_DIR / "register").exists():
        process_group.run(
            ["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT_DIR)],
            capture_output=True,
            check=False,
        )
    if shutil.which("update-binfmts"):
        process_group.run(
            ["update-binfmts", "--enable", BINFMT_ENTRY], capture_output=True, check=False
        )
    return emulation_problem()


def build_problem() -> str | None:
    """What stops a build on this machine, or None."""
    if sys.platform != "linux":
        return "the emulated board needs Linux (binfmt_misc, chroot, mount namespaces)"
    if os.geteuid() != 0:
        return "building and entering the emulated board needs root (mmdebstrap, chroot, mount)"
    for tool, package in (("mmdebstrap", "mmdebstrap"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: apt-get install {package}"
    return enable_emulation()
