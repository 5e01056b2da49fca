"""A device the host measures on: its transport, the runner it uses, and its facts."""

from __future__ import annotations

import functools
import json
import logging
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.builds.native_runner import BuiltRunner, find_runner
from edgebench.builds.targets import targets_for_device
from edgebench.converters.isolation import prepare_private_home
from edgebench.device_shell import taskset_mask
from edgebench.frameworks import find_framework
from edgebench.lab.facts import DeviceFacts, collect_facts
from edgebench.lab.runner_choice import TOOLS_NOT_PROBED, Probe, RunnerChoice, choose_runner
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.runner_tree import HOST_MODULE, write_runner_tree
from edgebench.lab.transports import CommandResult, LocalTransport, Transport
from edgebench.lab.transports.base import TransportError
from edgebench.paths import cache_dir
from edgebench.runners.protocol import RESULT_PREFIX

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 120.0


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


@dataclass(frozen=True)
class LabSettings:
    """What a lab entry says of a device beyond how to reach it (lab_file's ``LabDevice``)."""

    #: Its ``runner``: what to measure with (``auto`` lets the device's facts decide).
    runner: RunnerKind = RunnerKind.PYTHON
    #: Its word on emulation (``emulated = true|false``); None: detect it.
    emulated: bool | None = None
    #: Its ``backends``: measured when the run names none.
    backends: tuple[str, ...] | None = None
    #: Its device profile (``profiles.DeviceProfile``), when it names one.
    profile: Any = None


class Device:
    """A named device reached through a transport: runs the runner there, puts files there
    and holds its lock. What it is (facts) and which runner measures (``runner``) are decided
    once, on first use of ``facts()``."""

    #: Launch the runner under taskset so it is pinned from its first instruction.
    use_taskset = True
    #: Whether the frameworks' own benchmark binaries can be pushed here (ADB and SSH devices).
    runs_framework_tools = False

    def __init__(
        self,
        name: str,
        transport: Transport,
        python: str,
        runner_path: str | None,
        settings: LabSettings | None = None,
    ) -> None:
        settings = settings or LabSettings()
        self.name = name
        self.transport = transport
        self.python = python
        self.runner_path = runner_path
        self.profile: Any = settings.profile  # profiles.DeviceProfile, when the lab names one
        self.profile_name: str | None = settings.profile.name if settings.profile else None
        #: Cluster names from the device profile (they take precedence over detected ones).
        self.profile_clusters: dict[str, list[int]] = (
            {n: cpus for n, cpus in settings.profile.cluster_map().items() if n != "all"}
            if settings.profile
            else {}
        )
        #: Why the device could not be reached, when it could not (its cells fail with this).
        self.unreachable: str | None = None
        #: What the lab entry asks to measure with (its ``runner``).
        self.requested_runner = settings.runner
        #: What measures, once ``facts()`` has chosen it.
        self.runner: RunnerChoice | None = None
        #: The lab's word on emulation (``emulated = true|false``); None: detect it.
        self.emulated_override: bool | None = settings.emulated
        #: The lab entry's ``backends``: measured when the run names none.
        self.lab_backends: tuple[str, ...] | None = settings.backends
        #: The lock on the device itself, while this run holds it (remote devices).
        self.device_lock: Any = None  # device_lock.DeviceLockFile
        self._facts: DeviceFacts | None = None

    def mark_unreachable(self, why: str | None) -> None:
        """Record why the device could not be reached (None: it could); its cells fail so."""
        self.unreachable = why

    def hold_lock(self, lock: Any) -> None:
        """This run holds ``lock`` (a ``device_lock.DeviceLockFile``) on the device, or None."""
        self.device_lock = lock

    @property
    def runner_kind(self) -> RunnerKind:
        """The chosen runner's kind; before the choice, the lab's (which may be ``auto``)."""
        return self.runner.kind if self.runner is not None else self.requested_runner

    @property
    def native_build(self) -> BuiltRunner | None:
        """The edgebench-native build this device runs, once chosen."""
        return self.runner.build if self.runner is not None else None

    @functools.cached_property
    def side_build(self) -> BuiltRunner | None:
        """The edgebench-native build an ``auto`` device that runs Python uses for the
        frameworks Python cannot run (looked up once)."""
        return self.choose_native_build()

    def runner_for(self, framework: str) -> RunnerChoice | None:
        """The runner that measures ``framework`` here: the chosen one, except on an ``auto``
        device that runs Python, where a framework with no Python runtime (TNN) goes to the
        edgebench-native build for the device's ABI when that build links it."""
        choice = self.runner
        if (
            choice is None
            or choice.kind != RunnerKind.PYTHON
            or self.requested_runner != RunnerKind.AUTO
        ):
            return choice
        known = find_framework(framework)
        if known is None or known.native_only is None:
            return choice
        build = self.side_build
        if build is None or framework not in build.frameworks:
            return choice
        why = f"{framework} has no Python runtime; the edgebench-native build links it"
        return RunnerChoice(RunnerKind.EDGEBENCH_NATIVE, build=build, why=why)

    def runner_env(self) -> dict[str, str] | None:
        return None

    def runner_argv(self, arg: str, choice: RunnerChoice | None = None) -> list[str]:
        """The command line of ``choice`` (default: the chosen runner) with its one argument:
        the Python runner, or the edgebench-native binary."""
        choice = choice or self.runner
        if choice is not None and choice.kind == RunnerKind.EDGEBENCH_NATIVE:
            assert choice.build is not None
            return [self.native_runner_path(choice.build), arg]
        # No runner path: the installed package's runner (python -m edgebench.runners).
        entry = ["-m", HOST_MODULE] if self.runner_path is None else [self.runner_path]
        return [self.python, *entry, arg]

    def native_runner_path(self, build: BuiltRunner) -> str:
        """Where the edgebench-native binary is, as the device sees it."""
        return str(build.path)

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

    def _runner_argv(
        self, cores: list[int] | None, arg: str, choice: RunnerChoice | None = None
    ) -> list[str]:
        argv = self.runner_argv(arg, choice)
        if cores and self.use_taskset:
            # Pin from the first instruction; the runner re-applies and reads back the mask.
            argv = ["taskset", taskset_mask(cores), *argv]
        return argv

    def ensure_runner(self, choice: RunnerChoice | None = None) -> None:
        """Make sure the runner of ``choice`` (default: the chosen one) is on the device (a
        no-op on the host)."""

    def stage_model(self, files: list[Path]) -> str:
        """Put a model's files on the device; returns the device path of the first one."""
        return str(files[0])

    def run_runner(
        self, spec: dict[str, Any], cores: list[int] | None, timeout: float
    ) -> RunnerOutcome:
        choice = self.runner_for(str(spec.get("framework")))
        command = self.transport.run(
            self._runner_argv(cores, "-", choice),
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
        """Probe the device, choose its runner and collect its facts, once."""
        if self._facts is None:
            self.runner, probe = self._settle_runner()
            self._facts = collect_facts(
                self.transport,
                probe,
                self.runner,
                own_facts=self._own_facts,
                profile=self.profile_name,
                lab_says_emulated=self.emulated_override,
            )
        return self._facts

    def probe_runner(self, choice: RunnerChoice) -> Probe:
        """Run ``choice``'s runner with ``--probe``: its answer, or why it gave none."""
        self.ensure_runner(choice)
        command = self.transport.run(
            self.runner_argv("--probe", choice), timeout=PROBE_TIMEOUT_S, env=self.runner_env()
        )
        answer = parse_runner_output(command.stdout)
        if answer is None:
            tail = (command.stderr or command.stdout).strip().splitlines()[-1:] or ["no output"]
            who = self.native_runner_path(choice.build) if choice.build else self.python
            return Probe(error=f"{who} could not run the runner: {tail[0][:200]}")
        return Probe(answer)

    def _settle_runner(self) -> tuple[RunnerChoice, Probe]:
        """The probes the lab's ``runner`` needs, the choice they lead to, and the chosen
        runner's probe (the facts are read from it)."""
        requested = self.requested_runner
        python = None
        if requested == RunnerKind.AUTO:
            python = self.probe_runner(RunnerChoice(RunnerKind.PYTHON))
        wants_build = requested == RunnerKind.EDGEBENCH_NATIVE or (
            python is not None and not python.ok
        )
        build = self.choose_native_build() if wants_build else None
        choice = choose_runner(
            requested,
            python,
            build,
            no_build=self._no_build() if wants_build and build is None else "",
            runs_tools=self.runs_framework_tools,
        )
        if choice.unusable is not None:
            return choice, Probe(error=choice.unusable)
        if choice.kind == RunnerKind.FRAMEWORK_TOOLS:
            return choice, Probe(error=TOOLS_NOT_PROBED)
        if choice.kind == RunnerKind.PYTHON and python is not None:
            return choice, python
        return choice, self.probe_runner(choice)

    def _own_facts(self, facts: dict[str, Any]) -> dict[str, Any]:
        """Facts only this kind of device knows (Android properties, ...), given the others."""
        return {}

    def core_names(self) -> dict[str, list[int]]:
        """Cluster names usable with --cores: the profile's, else the detected ones."""
        return dict(self.profile_clusters) or dict(self.facts().clusters)


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


def local_work_dir() -> Path:
    """Where a local device's runner keeps its files when the lab names no work_dir."""
    return cache_dir() / "runner-home"


class LocalDevice(Device):
    """The host: the runner runs from the installed package with edgebench's interpreter, or,
    with the lab's ``python`` (another environment, which need not have edgebench), laid out as
    a device has it under ``work_dir``; its private HOME and each cell's outputs live there."""

    def __init__(
        self,
        name: str = "local",
        python: str | None = None,
        work_dir: Path | None = None,
        settings: LabSettings | None = None,
    ) -> None:
        super().__init__(name, LocalTransport(), python or sys.executable, None, settings)
        # Without taskset the runner still pins itself with sched_setaffinity.
        self.use_taskset = shutil.which("taskset") is not None
        self._home = work_dir or local_work_dir()

    def runner_argv(self, arg: str, choice: RunnerChoice | None = None) -> list[str]:
        if self.runner_path is None and self.python != sys.executable:
            self.runner_path = str(write_runner_tree(self._home / "runner"))
        return super().runner_argv(arg, choice)

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

    def probe_runner(self, choice: RunnerChoice) -> Probe:
        if choice.kind == RunnerKind.PYTHON and shutil.which(self.python) is None:
            return Probe(
                error=f"{self.python} could not run the runner: no such executable (the lab's "
                f"python for {self.name}; give an interpreter that exists)"
            )
        return super().probe_runner(choice)

    def _own_facts(self, facts: dict[str, Any]) -> dict[str, Any]:
        """The host's own names where /proc has none; cpus from affinity when unreadable."""
        own: dict[str, Any] = {"hostname": facts["hostname"] or platform.node()}
        own["os"] = platform.system()
        if not facts["cpus"] and hasattr(os, "sched_getaffinity"):
            own["cpus"] = sorted(os.sched_getaffinity(0))
        return own
