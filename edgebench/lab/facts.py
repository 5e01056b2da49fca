"""What the host learns about a device, collected part by part.

Each ``collect_*`` function reads one kind of fact from text the device already returned (its
runner's probe, files under /proc and /sys, Android properties) and returns the
``DeviceFacts`` fields it knows as a dict; ``collect_facts`` reads the files in two round trips
and composes the parts.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from edgebench.lab.accelerator_facts import (
    LIBRARIES_MARK,
    Accelerator,
    collect_accelerators,
    collect_android_accelerators,
    merge_accelerators,
)
from edgebench.lab.cores import detect_clusters, parse_cpu_list
from edgebench.lab.runner_choice import Probe, RunnerChoice
from edgebench.lab.transports import Transport
from edgebench.runners.protocol.devices import boot_id as host_boot_id

#: Files read in the first round trip; the per-cpu cpufreq files follow once the cpus are known.
SYSTEM_FILES = (
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/ostype",
    "/proc/cpuinfo",
    "/sys/devices/system/cpu/online",
    "/etc/os-release",
    "/proc/device-tree/model",
    "/sys/class/dmi/id/product_name",
    "/proc/meminfo",
)

#: The Android properties an ADB device's facts read, in the order ``collect_android`` expects.
ANDROID_PROPERTIES = (
    "ro.product.model",
    "ro.build.version.release",
    "ro.soc.model",
    "ro.board.platform",
    "ro.hardware.vulkan",
)

#: Files as ``Transport.read_many`` returns them: path -> text, None when unreadable.
Files = Mapping[str, "str | None"]
Part = dict[str, Any]


@dataclass
class DeviceFacts:
    """What the host learned about a device; recorded with every cell measured on it."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    machine: str | None = None
    cpu_model: str | None = None
    cpus: list[int] = field(default_factory=list)
    max_freq_khz: dict[int, int] = field(default_factory=dict)
    clusters: dict[str, list[int]] = field(default_factory=dict)
    governors: list[str] = field(default_factory=list)
    python: str | None = None
    numpy: str | None = None
    frameworks: dict[str, dict[str, Any]] = field(default_factory=dict)
    model: str | None = None  # product model (getprop ro.product.model, device tree, DMI)
    soc: str | None = None  # ro.soc.model / ro.board.platform / device-tree compatible
    os_version: str | None = None  # Android release or /etc/os-release PRETTY_NAME
    profile: str | None = None
    profile_differences: list[str] = field(default_factory=list)
    probe_error: str | None = None
    #: The CPU is emulated (qemu user mode on another architecture): correctness only.
    emulated: bool = False
    #: How emulation was known: the evidence, or "the lab says so".
    emulation: str | None = None
    #: /proc/sys/kernel/random/boot_id: equal to the host's when both run on one kernel.
    boot_id: str | None = None
    #: What measures there: a runner kind; edgebench-native with its build's target.
    runner: str | None = None
    #: Why that runner, when the lab left the choice to edgebench (runner = "auto").
    runner_choice: str | None = None
    #: MemTotal of /proc/meminfo, kB: what the run's size limits are checked against.
    mem_total_kb: int | None = None
    #: Vulkan, OpenCL and OpenVINO devices (on a phone: its GPU and GPU libraries).
    accelerators: list[Accelerator] = field(default_factory=list)
    #: API -> why it has no device here (no loader: the packages to install; probe failed).
    accelerator_problems: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def framework_available(self, name: str) -> bool:
        return bool(self.frameworks.get(name, {}).get("available"))


def collect_runner(probe: Probe, choice: RunnerChoice) -> Part:
    """What the runner's probe reported, and which runner measures."""
    answer = probe.answer
    return {
        "probe_error": probe.error,
        "python": answer.get("python"),
        "numpy": answer.get("numpy"),
        "machine": answer.get("machine"),
        "frameworks": answer.get("frameworks", {}),
        "emulated": bool(answer.get("emulated")),
        "emulation": answer.get("emulation"),
        "boot_id": answer.get("boot_id"),
        "runner": choice.label(),
        "runner_choice": choice.why,
    }


def collect_os(files: Files) -> Part:
    """Host name, kernel, OS and product model from /proc, /etc/os-release, device tree, DMI."""
    return {
        "hostname": _text(files, "/proc/sys/kernel/hostname"),
        "kernel": _text(files, "/proc/sys/kernel/osrelease"),
        "os": _text(files, "/proc/sys/kernel/ostype"),
        "os_version": pretty_name(files.get("/etc/os-release") or ""),
        "model": (files.get("/proc/device-tree/model") or "").strip("\x00 \n")
        or _text(files, "/sys/class/dmi/id/product_name"),
    }


def collect_memory(files: Files) -> Part:
    return {"mem_total_kb": mem_total_kb(files.get("/proc/meminfo") or "")}


def collect_cpu(files: Files, probe: Probe) -> Part:
    """The CPU model and the online cpus; the runner's affinity when the list is unreadable."""
    try:
        cpus = parse_cpu_list((files.get("/sys/devices/system/cpu/online") or "").strip())
    except ValueError:
        answer = probe.answer
        cpus = list(answer.get("affinity") or range(answer.get("cpu_count") or 1))
    return {"cpu_model": cpu_model_from_cpuinfo(files.get("/proc/cpuinfo") or ""), "cpus": cpus}


def cpufreq_files(cpus: list[int]) -> list[str]:
    names = ("cpuinfo_max_freq", "scaling_governor")
    return [f"{_cpufreq(cpu)}/{name}" for cpu in cpus for name in names]


def collect_cpufreq(files: Files, cpus: list[int]) -> Part:
    """Each cpu's maximum clock, the governors in use, and the clusters the clocks imply."""
    max_freq_khz: dict[int, int] = {}
    governors = set()
    for cpu in cpus:
        freq = (files.get(f"{_cpufreq(cpu)}/cpuinfo_max_freq") or "").strip()
        if freq.isdigit():
            max_freq_khz[cpu] = int(freq)
        governor = (files.get(f"{_cpufreq(cpu)}/scaling_governor") or "").strip()
        if governor:
            governors.add(governor)
    return {
        "max_freq_khz": max_freq_khz,
        "governors": sorted(governors),
        "clusters": detect_clusters(max_freq_khz),
    }


def collect_android(answer: str) -> Part:
    """From ``getprop`` of ``ANDROID_PROPERTIES`` (one per line), then the answer to the
    accelerator command: only the facts the phone states."""
    head, mark, accelerators = answer.partition(LIBRARIES_MARK)
    props = [line.strip() for line in head.splitlines()] + [""] * len(ANDROID_PROPERTIES)
    model, release, soc, platform_name, vulkan_hal = props[: len(ANDROID_PROPERTIES)]
    part: Part = {}
    if mark:
        part |= collect_android_accelerators(mark + accelerators, vulkan_hal)
    if model:
        part["model"] = model
    if release:
        part["os"] = "Android"
        part["os_version"] = f"Android {release}"
    if soc or platform_name:
        part["soc"] = soc or platform_name
    return part


def collect_emulation(facts: Part, lab_says: bool | None) -> Part:
    """Emulated or not: the runner's evidence, else the host's (one kernel, two machine names),
    and the lab's word (``emulated = true|false``) over both."""
    emulated, evidence = facts.get("emulated", False), facts.get("emulation")
    host_machine = platform.machine()
    machine, boot_id = facts.get("machine"), facts.get("boot_id")
    same_kernel = bool(boot_id) and boot_id == host_boot_id()
    if not emulated and same_kernel and machine and machine != host_machine:
        emulated = True
        evidence = (
            f"it runs on this host's kernel (same boot id) yet reports {machine} on "
            f"a {host_machine} host: an emulator translates its instructions"
        )
    if lab_says is not None:
        emulated = lab_says
        evidence = (evidence or "the lab file says emulated = true") if emulated else None
    return {"emulated": emulated, "emulation": evidence}


def collect_facts(
    transport: Transport,
    probe: Probe,
    choice: RunnerChoice,
    *,
    own_facts: Callable[[Part], Part],
    profile: str | None,
    lab_says_emulated: bool | None,
) -> DeviceFacts:
    """Every part, in order: a later part overrides what an earlier one said. ``own_facts``
    adds what only this kind of device knows (Android properties, the host's own names)."""
    facts = collect_runner(probe, choice) | collect_accelerators(probe)
    system = transport.read_many(list(SYSTEM_FILES))
    facts |= collect_os(system) | collect_memory(system) | collect_cpu(system, probe)
    facts |= collect_cpufreq(transport.read_many(cpufreq_files(facts["cpus"])), facts["cpus"])
    own = own_facts(facts)
    if "accelerators" in own:
        own |= merge_accelerators(facts, own)
    facts |= own
    facts["profile"] = profile
    facts |= collect_emulation(facts, lab_says_emulated)
    return DeviceFacts(**facts)


def mem_total_kb(meminfo: str) -> int | None:
    """``MemTotal:  16330228 kB`` from /proc/meminfo, in kB; None when it is not there."""
    for line in meminfo.splitlines():
        name, _, value = line.partition(":")
        number = value.split()[:1]
        if name.strip() == "MemTotal" and number and number[0].isdigit():
            return int(number[0])
    return None


def cpu_model_from_cpuinfo(text: str) -> str | None:
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return None


def pretty_name(os_release: str) -> str | None:
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"') or None
    return None


def _text(files: Files, path: str) -> str | None:
    return (files.get(path) or "").strip() or None


def _cpufreq(cpu: int) -> str:
    return f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
