"""What a native runner binary is built for: a CPU architecture and an OS flavour."""

from __future__ import annotations

import platform
from dataclasses import dataclass

from edgebench.builds import BuildError


@dataclass(frozen=True)
class Target:
    name: str  # "x86_64-linux" | "aarch64-linux" | "aarch64-android"
    machine: str  # "x86_64" | "aarch64"
    android: bool

    def __str__(self) -> str:
        return self.name


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("x86_64-linux", "x86_64", False),
        Target("aarch64-linux", "aarch64", False),
        Target("aarch64-android", "aarch64", True),
    )
}

#: What ``uname -m``, Android's ABI list and Python's platform.machine() call the two machines.
MACHINE_ALIASES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "x64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "arm64-v8a": "aarch64",
    "armv8": "aarch64",
}


def normalize_machine(machine: str) -> str | None:
    """``"aarch64"`` or ``"x86_64"`` for any of their usual names; None for other machines."""
    return MACHINE_ALIASES.get(machine.strip().lower())


def parse_target(text: str) -> Target:
    target = TARGETS.get(text.strip().lower())
    if target is None:
        raise BuildError(f"unknown target {text!r}: choose one of {', '.join(TARGETS)}")
    return target


def host_target() -> Target:
    """The Linux target of the machine edgebench runs on."""
    machine = normalize_machine(platform.machine())
    if machine is None:
        raise BuildError(
            f"no native-runner target for this host's machine {platform.machine()!r}: "
            f"give --target ({', '.join(TARGETS)})"
        )
    return TARGETS[f"{machine}-linux"]


def targets_for_device(machine: str, android: bool) -> list[Target]:
    """The targets whose binary runs on a device, best first; empty for a machine edgebench
    builds no runner for (32-bit ARM, say). A fully static Linux binary runs on Android too,
    so an Android arm64 device takes aarch64-linux after its own aarch64-android."""
    normal = normalize_machine(machine)
    if normal == "aarch64":
        if android:
            return [TARGETS["aarch64-android"], TARGETS["aarch64-linux"]]
        return [TARGETS["aarch64-linux"]]
    if normal == "x86_64":
        return [TARGETS["x86_64-linux"]]
    return []
