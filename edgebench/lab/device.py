"""A device the host measures on: its transport, the runner it uses, and its facts."""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgebench import runners
from edgebench.builds.native_runner import BuiltRunner, find_runner
from edgebench.builds.targets import targets_for_device
from edgebench.converters.isolation import prepare_private_home
from edgebench.lab.cores import detect_clusters, parse_cpu_list
from edgebench.lab.transports import CommandResult, LocalTransport, Transport
from edgebench.lab.transports.base import TransportError
from edgebench.paths import cache_dir
from edgebench.runners.emulation import boot_id as host_boot_id
from edgebench.runners.protocol import RESULT_PREFIX

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 120.0
#: Runner kinds (profile_schema.RUNNERS) the device code itself tells apart.
PYTHON_RUNNER = "python"
EDGEBENCH_NATIVE = "edgebench-native"
NATIVE_TOOLS = "native"
AUTO_RUNNER = "auto"


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
    #: What measures there: python, edgebench-native (with its build's target) or native.
    runner: str | None = None
    #: Why that runner, when the lab left the choice to edgebench (runner = "auto").
    runner_choice: str | None = None
    #: MemTotal of /proc/meminfo, kB: what the run's size limits are checked against.
    mem_total_kb: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def framework_available(self, name: str) -> bool:
        return bool(self.frameworks.get(name, {}).get("available"))


@dataclass
class RunnerOutcome:
    """The runner's JSON result, or why there is none."""

    result: dict[str, Any] | None
    command: CommandResult
    error: str | None = None


def parse_runner_output(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                payload = json.loads(line[len(RESULT_PREFIX) :])
            except ValueError:
                return None
            return payload if isinstance(payload, dict) else None
    return None


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


class Device:
    """A named device reached through a transport and running the Python runner."""

    #: Launch the runner under taskset so it is pinned from its first instruction.
    use_taskset = True

    def __init__(self, name: str, transport: Transport, python: str, runner_path: str) -> None:
        self.name = name
        self.transport = transport
        self.python = python
        self.runner_path = runner_path
        #: Cluster names from the device profile (they take precedence over detected ones).
        self.profile_clusters: dict[str, list[int]] = {}
        self.profile_name: str | None = None
        self.profile: Any = None  # profiles.DeviceProfile, when the lab names one
        #: Why the device could not be reached, when it could not (its cells fail with this).
        self.unreachable: str | None = None
        #: What measures on the device (the lab entry's ``runner``): "python" (runner.py) or
        #: "native" (the frameworks' own benchmark binaries).
        self.runner_kind = "python"
        #: The edgebench-native build this device runs, once chosen (builds.BuiltRunner).
        self.native_build: BuiltRunner | None = None
        #: The lab's word on emulation (``emulated = true|false``); None: detect it.
        self.emulated_override: bool | None = None
        #: The lock on the device itself, while this run holds it (remote devices).
        self.device_lock: Any = None  # device_lock.DeviceLockFile
        self._facts: DeviceFacts | None = None

    def runner_env(self) -> dict[str, str] | None:
        return None

    def runner_argv(self, arg: str) -> list[str]:
        """The runner's command line with its one argument: the Python runner, or the
        edgebench-native binary."""
        if self.runner_kind == EDGEBENCH_NATIVE:
            return [self.native_runner_path(), arg]
        return [self.python, self.runner_path, arg]

    def native_runner_path(self) -> str:
        """Where the edgebench-native binary is, as the device sees it."""
        assert self.native_build is not None
        return str(self.native_build.path)

    def abi(self) -> tuple[str, bool]:
        """(machine, android) of the device, to choose an edgebench-native build."""
        return platform.machine(), False

    def choose_native_build(self) -> BuiltRunner | None:
        """The newest edgebench-native build for this device's ABI, or None."""
        machine, android = self.abi()
        for target in targets_for_device(machine, android):
            built = find_runner(target)
            if built is not None:
                return built
        return None

    def _no_build(self) -> str:
        machine, android = self.abi()
        targets = targets_for_device(machine, android)
        name = targets[0].name if targets else machine
        return (
            f"no edgebench-native build for {name} ({machine}); build one with "
            f"`edgebench runners build --target {name}`"
        )

    def _runner_argv(self, cores: list[int] | None, arg: str) -> list[str]:
        argv = self.runner_argv(arg)
        if cores and self.use_taskset:
            # Pin from the first instruction; the runner re-applies and reads back the mask.
            argv = ["taskset", taskset_mask(cores), *argv]
        return argv

    def ensure_runner(self) -> None:
        """Make sure the runner is on the device (a no-op on the host)."""

    def stage_model(self, files: list[Path]) -> str:
        """Put a model's files on the device; returns the device path of the first one."""
        return str(files[0])

    def run_runner(
        self, spec: dict[str, Any], cores: list[int] | None, timeout: float
    ) -> RunnerOutcome:
        command = self.transport.run(
            self._runner_argv(cores, "-"),
            timeout=timeout,
            stdin=json.dumps(spec),
            env=self.runner_env(),
        )
        return outcome_of(command, timeout)

    def output_path(self, cell_key: str) -> str:
        """Where on the device the runner writes a cell's full outputs (.npz)."""
        raise NotImplementedError

    def fetch_outputs(self, device_path: str) -> Path | None:
        """Bring a cell's outputs file to the host; None when it is not there."""
        raise NotImplementedError

    def discard_outputs(self, device_path: str) -> None:
        """Remove the outputs file from the device (and any host copy)."""

    def renew_lock(self, force: bool = False) -> str | None:
        """Extend this run's lease on the device lock before a cell. Returns who holds the
        lock instead, when another host has taken it over."""
        if self.device_lock is None:
            return None
        try:
            return self.device_lock.renew(force)
        except TransportError:
            return None  # the cell meets the dropped link itself, and retries

    def abort_running(self) -> None:
        """Kill the runner or tool measuring on the device now (the second Ctrl-C)."""
        self.transport.abort()

    def clean(self) -> str:
        """Remove what edgebench put on the device; returns what was removed."""
        return "nothing to clean on the host"

    def facts(self) -> DeviceFacts:
        if self._facts is None:
            self._facts = self._gather_facts()
        return self._facts

    def _probe(self) -> dict[str, Any]:
        if self.runner_kind == AUTO_RUNNER:
            return self._probe_auto()
        if self.runner_kind == EDGEBENCH_NATIVE and self.native_build is None:
            self.native_build = self.choose_native_build()
            if self.native_build is None:
                return {"error": self._no_build()}
        self.ensure_runner()
        command = self.transport.run(
            self.runner_argv("--probe"), timeout=PROBE_TIMEOUT_S, env=self.runner_env()
        )
        probe = parse_runner_output(command.stdout)
        if probe is None:
            tail = (command.stderr or command.stdout).strip().splitlines()[-1:] or ["no output"]
            who = self.native_runner_path() if self.native_build is not None else self.python
            return {"error": f"{who} could not run the runner: {tail[0][:200]}"}
        return probe

    def _probe_auto(self) -> dict[str, Any]:
        """runner = "auto": Python when it runs the runner here, else edgebench-native when a
        build for this ABI exists, else the frameworks' own benchmark binaries."""
        self.runner_kind = PYTHON_RUNNER
        probe = self._probe()
        if not probe.get("error"):
            probe["runner_choice"] = "the device runs Python"
            return probe
        why = probe["error"]
        self.native_build = self.choose_native_build()
        if self.native_build is not None:
            self.runner_kind = EDGEBENCH_NATIVE
            probe = self._probe()
            probe["runner_choice"] = f"no usable Python ({why}); an edgebench-native build fits"
            return probe
        self.runner_kind = NATIVE_TOOLS
        return {
            "error": "runs the frameworks' own benchmark tools",
            "runner_choice": f"no usable Python ({why}) and {self._no_build()}",
        }

    def _extra_facts(self, facts: DeviceFacts) -> None:
        """Transport-specific facts (Android properties, ...)."""

    def _gather_facts(self) -> DeviceFacts:
        facts = DeviceFacts()
        probe = self._probe()
        facts.probe_error = probe.get("error")
        facts.python = probe.get("python")
        facts.numpy = probe.get("numpy")
        facts.machine = probe.get("machine")
        facts.frameworks = probe.get("frameworks", {})
        facts.emulated = bool(probe.get("emulated"))
        facts.emulation = probe.get("emulation")
        facts.boot_id = probe.get("boot_id")
        facts.runner = self.runner_kind
        if self.runner_kind == EDGEBENCH_NATIVE and self.native_build is not None:
            facts.runner = f"{EDGEBENCH_NATIVE} ({self.native_build.target.name})"
        facts.runner_choice = probe.get("runner_choice")
        base = [
            "/proc/sys/kernel/hostname",
            "/proc/sys/kernel/osrelease",
            "/proc/sys/kernel/ostype",
            "/proc/cpuinfo",
            "/sys/devices/system/cpu/online",
            "/etc/os-release",
            "/proc/device-tree/model",
            "/sys/class/dmi/id/product_name",
            "/proc/meminfo",
        ]
        first = self.transport.read_many(base)
        facts.mem_total_kb = mem_total_kb(first["/proc/meminfo"] or "")
        facts.hostname = (first["/proc/sys/kernel/hostname"] or "").strip() or None
        facts.kernel = (first["/proc/sys/kernel/osrelease"] or "").strip() or None
        facts.os = (first["/proc/sys/kernel/ostype"] or "").strip() or None
        facts.cpu_model = cpu_model_from_cpuinfo(first["/proc/cpuinfo"] or "")
        facts.os_version = _pretty_name(first["/etc/os-release"] or "")
        facts.model = (
            (first["/proc/device-tree/model"] or "").strip("\x00 \n")
            or (first["/sys/class/dmi/id/product_name"] or "").strip()
            or None
        )
        try:
            facts.cpus = parse_cpu_list((first["/sys/devices/system/cpu/online"] or "").strip())
        except ValueError:
            facts.cpus = list(probe.get("affinity") or range(probe.get("cpu_count") or 1))
        per_cpu = []
        for cpu in facts.cpus:
            folder = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
            per_cpu += [f"{folder}/cpuinfo_max_freq", f"{folder}/scaling_governor"]
        second = self.transport.read_many(per_cpu)
        governors = set()
        for cpu in facts.cpus:
            folder = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
            freq = (second[f"{folder}/cpuinfo_max_freq"] or "").strip()
            if freq.isdigit():
                facts.max_freq_khz[cpu] = int(freq)
            governor = (second[f"{folder}/scaling_governor"] or "").strip()
            if governor:
                governors.add(governor)
        facts.governors = sorted(governors)
        facts.clusters = detect_clusters(facts.max_freq_khz)
        self._extra_facts(facts)
        facts.profile = self.profile_name
        self._judge_emulation(facts)
        return facts

    def _judge_emulation(self, facts: DeviceFacts) -> None:
        """The runner's evidence, else the host's (one kernel, two machine names), and the
        lab's word over both."""
        host_machine = platform.machine()
        if (
            not facts.emulated
            and facts.boot_id
            and facts.boot_id == host_boot_id()
            and facts.machine
            and facts.machine != host_machine
        ):
            facts.emulated = True
            facts.emulation = (
                f"it runs on this host's kernel (same boot id) yet reports {facts.machine} on "
                f"a {host_machine} host: an emulator translates its instructions"
            )
        if self.emulated_override is not None:
            facts.emulated = self.emulated_override
            facts.emulation = (
                (facts.emulation or "the lab file says emulated = true") if facts.emulated else None
            )

    def core_names(self) -> dict[str, list[int]]:
        """Cluster names usable with --cores: the profile's, else the detected ones."""
        return dict(self.profile_clusters) or dict(self.facts().clusters)


def taskset_mask(cores: list[int]) -> str:
    """Hex affinity mask: taskset in util-linux and Android's toybox both take it."""
    mask = 0
    for cpu in cores:
        mask |= 1 << cpu
    return f"{mask:x}"


def outcome_of(command: CommandResult, timeout: float) -> RunnerOutcome:
    if command.timed_out:
        return RunnerOutcome(None, command, f"runner timed out after {timeout:.0f} s")
    result = parse_runner_output(command.stdout)
    if result is None:
        rc = command.returncode
        signum = -rc if rc is not None and rc < 0 else (rc - 128 if rc and rc > 128 else None)
        if signum == 9:
            # Nothing in edgebench sends SIGKILL before the timeout: the kernel's OOM killer does.
            return RunnerOutcome(
                None,
                command,
                "runner was killed by SIGKILL, most likely out of memory (the kernel's OOM "
                "killer; see dmesg): use a smaller model, input or --concurrency",
            )
        how = f"was killed by signal {signum}" if signum else f"exited {rc}"
        return RunnerOutcome(None, command, f"runner {how} without a result")
    return RunnerOutcome(result, command)


def _pretty_name(os_release: str) -> str | None:
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"') or None
    return None


def local_work_dir() -> Path:
    """Where a local device's runner keeps its files when the lab names no work_dir."""
    return cache_dir() / "runner-home"


class LocalDevice(Device):
    """The host: the runner runs from the installed package, with edgebench's interpreter or
    the lab's ``python``; its private HOME and each cell's outputs live in ``work_dir``."""

    def __init__(
        self, name: str = "local", python: str | None = None, work_dir: Path | None = None
    ) -> None:
        runner = Path(runners.__file__).with_name("runner.py")
        super().__init__(name, LocalTransport(), python or sys.executable, str(runner))
        # Without taskset the runner still pins itself with sched_setaffinity.
        self.use_taskset = shutil.which("taskset") is not None
        self._home = work_dir or local_work_dir()

    def runner_env(self) -> dict[str, str]:
        # A private HOME: frameworks that drop ids or caches into $HOME write there, not into
        # the user's home.
        prepare_private_home(self._home)
        env = dict(os.environ)
        env["HOME"] = str(self._home)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.setdefault("PYTHONHASHSEED", "0")
        return env

    def output_path(self, cell_key: str) -> str:
        folder = self._home / "outputs"
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder / f"{cell_key}.npz")

    def fetch_outputs(self, device_path: str) -> Path | None:
        path = Path(device_path)
        return path if path.is_file() else None

    def discard_outputs(self, device_path: str) -> None:
        Path(device_path).unlink(missing_ok=True)

    def _probe(self) -> dict[str, Any]:
        if self.runner_kind == PYTHON_RUNNER and shutil.which(self.python) is None:
            return {
                "error": f"{self.python} could not run the runner: no such executable (the lab's "
                f"python for {self.name}; give an interpreter that exists)"
            }
        return super()._probe()

    def _probe_auto(self) -> dict[str, Any]:
        probe = super()._probe_auto()
        if self.runner_kind != NATIVE_TOOLS:
            return probe
        # The frameworks' benchmark binaries are pushed to ADB and SSH devices only.
        self.runner_kind = PYTHON_RUNNER
        return {"error": probe["runner_choice"]}

    def _gather_facts(self) -> DeviceFacts:
        facts = super()._gather_facts()
        facts.hostname = facts.hostname or platform.node()
        facts.os = platform.system()
        if not facts.cpus and hasattr(os, "sched_getaffinity"):
            facts.cpus = sorted(os.sched_getaffinity(0))
        return facts
