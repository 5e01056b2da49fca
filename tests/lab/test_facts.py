"""Device facts, part by part (lab/facts.py): each collect_* reads the text a device returned,
and collect_facts composes them into the device_info every record stores."""

from __future__ import annotations

from collections.abc import Sequence

from edgebench.lab.facts import (
    SYSTEM_FILES,
    DeviceFacts,
    collect_android,
    collect_cpu,
    collect_cpufreq,
    collect_facts,
    collect_memory,
    collect_os,
    collect_runner,
    cpufreq_files,
)
from edgebench.lab.runner_choice import Probe, RunnerChoice
from edgebench.lab.runner_kinds import RunnerKind

#: The keys of a stored record's device_info, in order: reports and old runs read these.
STORED_KEYS = [
    "hostname",
    "os",
    "kernel",
    "machine",
    "cpu_model",
    "cpus",
    "max_freq_khz",
    "clusters",
    "governors",
    "python",
    "numpy",
    "frameworks",
    "model",
    "soc",
    "os_version",
    "profile",
    "profile_differences",
    "probe_error",
    "emulated",
    "emulation",
    "boot_id",
    "runner",
    "runner_choice",
    "mem_total_kb",
    "accelerators",
    "accelerator_problems",
]

BOARD = {
    "/proc/sys/kernel/hostname": "orin\n",
    "/proc/sys/kernel/osrelease": "5.15.136-tegra\n",
    "/proc/sys/kernel/ostype": "Linux\n",
    "/proc/cpuinfo": "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\n",
    "/sys/devices/system/cpu/online": "0-3\n",
    "/etc/os-release": 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n',
    "/proc/device-tree/model": "NVIDIA Jetson Orin Nano\x00",
    "/sys/class/dmi/id/product_name": None,
    "/proc/meminfo": "MemTotal:        7813924 kB\nMemFree:  100 kB\n",
}
CLOCKS = {0: "1510400", 1: "1510400", 2: "2201600", 3: "2201600"}


def cpufreq(governor: str = "schedutil") -> dict[str, str | None]:
    files: dict[str, str | None] = {}
    for cpu, khz in CLOCKS.items():
        folder = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
        files[f"{folder}/cpuinfo_max_freq"] = khz + "\n"
        files[f"{folder}/scaling_governor"] = governor + "\n"
    return files


class FileTransport:
    """read_many from a dict, counting round trips."""

    def __init__(self, files: dict[str, str | None]) -> None:
        self.files = files
        self.round_trips: list[list[str]] = []

    def read_many(self, paths: Sequence[str]) -> dict[str, str | None]:
        self.round_trips.append(list(paths))
        return {path: self.files.get(path) for path in paths}


def test_os_memory_and_cpu_from_the_system_files() -> None:
    assert collect_os(BOARD) == {
        "hostname": "orin",
        "kernel": "5.15.136-tegra",
        "os": "Linux",
        "os_version": "Ubuntu 22.04.4 LTS",
        "model": "NVIDIA Jetson Orin Nano",
    }
    assert collect_memory(BOARD) == {"mem_total_kb": 7813924}
    assert collect_cpu(BOARD, Probe()) == {
        "cpu_model": "ARMv8 Processor rev 1 (v8l)",
        "cpus": [0, 1, 2, 3],
    }


def test_unreadable_files_leave_facts_unknown_and_cpus_from_the_runner() -> None:
    nothing: dict[str, str | None] = dict.fromkeys(SYSTEM_FILES)
    assert set(collect_os(nothing).values()) == {None}
    assert collect_memory(nothing) == {"mem_total_kb": None}
    assert collect_cpu(nothing, Probe({"affinity": [2, 3]}))["cpus"] == [2, 3]
    assert collect_cpu(nothing, Probe({"cpu_count": 2}))["cpus"] == [0, 1]


def test_cpufreq_gives_clocks_governors_and_clusters() -> None:
    part = collect_cpufreq(cpufreq(), [0, 1, 2, 3])
    assert part["max_freq_khz"] == {0: 1510400, 1: 1510400, 2: 2201600, 3: 2201600}
    assert part["governors"] == ["schedutil"]
    assert part["clusters"] == {"little": [0, 1], "big": [2, 3]}
    assert len(cpufreq_files([0, 1])) == 4


def test_android_properties_state_only_what_the_phone_says() -> None:
    assert collect_android("Pixel 8\n14\nTensor G3\ngs301\n") == {
        "model": "Pixel 8",
        "os": "Android",
        "os_version": "Android 14",
        "soc": "Tensor G3",
    }
    assert collect_android("\n\n\nkalama\n") == {"soc": "kalama"}
    assert collect_android("") == {}


def test_the_runner_part_names_the_choice() -> None:
    choice = RunnerChoice(RunnerKind.FRAMEWORK_TOOLS, why="no usable Python")
    part = collect_runner(Probe(error="python3: not found"), choice)
    assert (part["runner"], part["runner_choice"]) == ("framework-tools", "no usable Python")
    assert part["probe_error"] == "python3: not found" and part["frameworks"] == {}


def test_collect_facts_composes_the_parts_in_two_round_trips() -> None:
    transport = FileTransport({**BOARD, **cpufreq("performance")})
    probe = Probe({"python": "3.10.12", "machine": "aarch64", "frameworks": {"ncnn": {}}})
    facts = collect_facts(
        transport,  # type: ignore[arg-type]
        probe,
        RunnerChoice(RunnerKind.PYTHON),
        own_facts=lambda part: {"soc": f"{part['model']} SoC"},
        profile="jetson-orin-nano",
        lab_says_emulated=None,
    )
    assert len(transport.round_trips) == 2
    assert list(facts.as_dict()) == STORED_KEYS
    assert facts.as_dict() == {
        **DeviceFacts().as_dict(),
        "hostname": "orin",
        "os": "Linux",
        "kernel": "5.15.136-tegra",
        "machine": "aarch64",
        "cpu_model": "ARMv8 Processor rev 1 (v8l)",
        "cpus": [0, 1, 2, 3],
        "max_freq_khz": {0: 1510400, 1: 1510400, 2: 2201600, 3: 2201600},
        "clusters": {"little": [0, 1], "big": [2, 3]},
        "governors": ["performance"],
        "python": "3.10.12",
        "frameworks": {"ncnn": {}},
        "model": "NVIDIA Jetson Orin Nano",
        "soc": "NVIDIA Jetson Orin Nano SoC",
        "os_version": "Ubuntu 22.04.4 LTS",
        "profile": "jetson-orin-nano",
        "runner": "python",
        "mem_total_kb": 7813924,
        "accelerator_problems": {"accelerators": "the runner did not report them"},
    }


def test_the_lab_word_on_emulation_is_applied_last() -> None:
    transport = FileTransport(dict(BOARD))
    facts = collect_facts(
        transport,  # type: ignore[arg-type]
        Probe({"machine": "aarch64"}),
        RunnerChoice(RunnerKind.PYTHON),
        own_facts=lambda part: {},
        profile=None,
        lab_says_emulated=True,
    )
    assert facts.emulated and facts.emulation == "the lab file says emulated = true"
