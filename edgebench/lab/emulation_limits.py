"""What a device under a user-mode emulator (qemu on another architecture) cannot run, whatever
is installed there: the framework and the one-line reason its cells there are ``unsupported``,
decided from the device facts before anything is sent.

Each entry was seen on the emulated arm64 board (docs/arm-board.md); a real device of the same
architecture is not affected.
"""

from __future__ import annotations

from edgebench.lab.facts import DeviceFacts

#: (machine, framework) -> why it cannot run under emulation.
UNDER_EMULATION: dict[tuple[str, str], str] = {
    ("aarch64", "openvino-genai"): (
        "OpenVINO's aarch64 CPU plugin finds no matmul kernel under a user-mode emulator "
        "(oneDNN cannot read the CPU's ID register, MIDR_EL1, from sysfs there, so OpenVINO "
        "GenAI 2026.4.1 fails to load llm-tiny after minutes); measure it on a real ARM device"
    ),
}


def unsupported_under_emulation(facts: DeviceFacts, framework: str) -> str | None:
    """Why ``framework`` cannot run on the device of ``facts``; None where it may."""
    if not facts.emulated or facts.machine is None:
        return None
    return UNDER_EMULATION.get((facts.machine, framework))
