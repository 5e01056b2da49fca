"""Devices reached over ADB or SSH: the runner and models deployed into a work dir."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.builds.native_runner import BuiltRunner
from edgebench.converters.artifact_cache import file_sha256
from edgebench.device_shell import RECORD_PID_THEN_EXEC, taskset_mask
from edgebench.lab.accelerator_facts import ANDROID_ACCELERATOR_COMMAND
from edgebench.lab.device import Device, LabSettings, RunnerOutcome, outcome_of
from edgebench.lab.facts import ANDROID_PROPERTIES, collect_android
from edgebench.lab.runner_choice import RunnerChoice
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.runner_tree import ENTRY_SCRIPT, runner_tree
from edgebench.lab.transports.base import CommandResult, Transport, TransportError, quote_argv

log = logging.getLogger(__name__)

#: Written into the work dir before anything else is deployed there; ``clean`` removes only
#: what it lists, so a work dir shared with other files keeps them.
DEPLOYED_MARKER = ".edgebench-deployed"
#: Everything edgebench creates in a work dir: the runner, staged models, native tools, cell
#: outputs, the measuring PID and the native telemetry loop's files.
DEPLOYED_ENTRIES = ("runner", "models", "bin", "outputs", "run.pid", "telemetry")
MARKER_HEADER = "# edgebench deployed these entries here; `edgebench clean` removes them\n"


@dataclass
class DeployReport:
    sent: int = 0
    unchanged: int = 0
    bytes_sent: int = 0


def local_sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256_of(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _sha256_of(path: str, mtime_ns: int, size: int) -> str:
    """Keyed by mtime and size too, so a changed file is hashed again."""
    return file_sha256(Path(path))


class RemoteDevice(Device):
    """A phone or board: everything edgebench sends lives under ``work_dir``."""

    runs_framework_tools = True

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        work_dir: str,
        python: str = "python3",
        tools_bin: Path | None = None,
        settings: LabSettings | None = None,
    ) -> None:
        super().__init__(name, transport, python, "", settings)
        self._work_dir_spec = work_dir.rstrip("/") or "/"
        self._work_dir: str | None = None
        self.deployed = DeployReport()
        #: Host folder with the frameworks' benchmark binaries to push (lab: tools_bin).
        self.tools_bin = tools_bin
        self._runners_ready: set[RunnerKind] = set()  # the kinds deployed in this process
        self._abi: tuple[str, bool] | None = None
        self._staged: set[str] = set()
        self._marked = False  # DEPLOYED_MARKER checked on the device in this process
        self._staging = Path(tempfile.mkdtemp(prefix=f"edgebench-{name}-"))
        self._measuring = False

    @property
    def work_dir(self) -> str:
        """The work dir as an absolute device path; "~/" is the login home there."""
        if self._work_dir is None:
            spec = self._work_dir_spec
            if spec == "~" or spec.startswith("~/"):
                home = self.transport.shell('printf %s "$HOME"', timeout=30).stdout.strip()
                if not home:
                    raise TransportError(f"device {self.name}: could not resolve ~ on the device")
                spec = home + spec[1:]
            self._work_dir = spec
        return self._work_dir

    @property
    def runner_path(self) -> str:
        return self.path("runner", ENTRY_SCRIPT)

    @runner_path.setter
    def runner_path(self, _value: str | None) -> None:
        """Derived from the work dir; the base class's assignment is ignored."""

    def path(self, *parts: str) -> str:
        return posixpath.join(self.work_dir, *parts)

    # --- deployment -----------------------------------------------------------------------

    def deploy(self, pairs: Sequence[tuple[Path, str]]) -> DeployReport:
        """Push files whose device copy is missing or differs (sha256 checked on the device).

        The first deploy of a run also checks the marker (``DEPLOYED_MARKER``) that lets
        ``clean`` tell what edgebench put in the work dir, in the same sha256 round trip, and
        pushes it before anything else."""
        report = DeployReport()
        marker = None if self._marked else self._marker_file()
        remotes = [remote for _, remote in pairs] + ([marker[1]] if marker else [])
        remote_hashes = self.transport.sha256(remotes)
        outdated = []
        if marker is not None and remote_hashes.get(marker[1]) != local_sha256(marker[0]):
            outdated.append(marker)
        for local, remote in pairs:
            if remote_hashes.get(remote) == local_sha256(local):
                report.unchanged += 1
                continue
            outdated.append((local, remote))
            report.sent += 1
            report.bytes_sent += local.stat().st_size
        self.transport.push_many(outdated)
        self._marked = True
        self.deployed.sent += report.sent
        self.deployed.unchanged += report.unchanged
        self.deployed.bytes_sent += report.bytes_sent
        return report

    def ensure_runner(self, choice: RunnerChoice | None = None) -> None:
        choice = choice or self.runner or RunnerChoice(self.requested_runner)
        if choice.kind in self._runners_ready:
            return
        if choice.kind == RunnerKind.EDGEBENCH_NATIVE:
            # One binary per device, sent when its sha256 there differs from the build's.
            assert choice.build is not None
            self.deploy_executable(choice.build.path, self.native_runner_path(choice.build))
        else:
            self.deploy([(f, self.path("runner", where)) for f, where in runner_tree()])
        self._runners_ready.add(choice.kind)

    def deploy_executable(self, local: Path, remote: str) -> None:
        """Push a binary (when its sha256 there differs) and make it executable."""
        self.deploy([(local, remote)])
        self.transport.run(["chmod", "755", remote], timeout=30)

    def native_runner_path(self, build: BuiltRunner) -> str:
        return self.path("bin", "edgebench-native")

    def abi(self) -> tuple[str, bool]:
        if self._abi is None:
            machine = self.transport.shell("uname -m", timeout=30).stdout.strip()
            self._abi = (machine or "unknown", self.transport.kind == "adb")
        return self._abi

    def stage_model(self, files: list[Path]) -> str:
        """Models go under models/<hash of their files>/, so names never collide.

        Checked against the device once per run; later cells of the same run reuse it.
        """
        digest = hashlib.sha256("".join(local_sha256(f) for f in files).encode()).hexdigest()
        folder = self.path("models", digest[:20])
        if digest not in self._staged:
            self.deploy([(f, posixpath.join(folder, f.name)) for f in files])
            self._staged.add(digest)
        return posixpath.join(folder, files[0].name)

    def _marker_file(self) -> tuple[Path, str]:
        local = self._staging / DEPLOYED_MARKER
        if not local.is_file():
            local.write_text(MARKER_HEADER + "".join(f"{n}\n" for n in DEPLOYED_ENTRIES))
        return local, self.path(DEPLOYED_MARKER)

    def clean(self) -> str:
        """Remove what edgebench deployed, going by the marker it wrote: the entries it lists
        (only names edgebench uses, whatever the file says), the marker, then the work dir
        itself when nothing else is left in it. Without a marker nothing is removed."""
        work_dir = self.work_dir
        listing = self.transport.run(["cat", self.path(DEPLOYED_MARKER)], timeout=30)
        self._runners_ready.clear()
        self._staged.clear()
        self._marked = False
        if listing.returncode != 0:
            if not self.transport.exists(work_dir):
                return f"nothing to clean ({work_dir} does not exist)"
            return (
                f"nothing removed: {work_dir} has no {DEPLOYED_MARKER}, so edgebench did not "
                "deploy there (or a version before the marker did: remove its runner/ and "
                "models/ by hand)"
            )
        names = [n for n in DEPLOYED_ENTRIES if n in listing.stdout.split()]
        paths = [self.path(n) for n in names] + [self.path(DEPLOYED_MARKER)]
        self.transport.run(["rm", "-rf", "--", *paths], timeout=120)
        self.transport.run(["rmdir", work_dir], timeout=30)  # fails, harmlessly, unless empty
        if self.transport.exists(work_dir):
            return f"removed {', '.join(names)} from {work_dir}; its other files were kept"
        return f"removed {work_dir}"

    # --- running --------------------------------------------------------------------------

    def run_runner(
        self,
        spec: dict[str, Any],
        cores: list[int] | None,
        timeout: float,
        wrap: Callable[[str], str] | None = None,
    ) -> RunnerOutcome:
        """Run the runner on ``spec``. ``wrap`` puts the runner's shell line inside another
        (the telemetry loop beside edgebench-native)."""
        choice = self.runner_for(str(spec.get("framework")))
        self.ensure_runner(choice)
        # The spec travels as one quoted argument: no file to push and remove per cell.
        argv = self.runner_argv(json.dumps(spec, separators=(",", ":")), choice)
        if cores and self.use_taskset:
            argv = ["taskset", taskset_mask(cores), *argv]
        # The runner's PID is recorded before it starts, so a timed-out runner can be killed on
        # the device: dropping the connection does not stop it there. Inside a wrapper the
        # line runs in a subshell, whose $$ is the wrapper's: a new sh then records its own.
        cd = f"cd {quote_argv([self.work_dir])}"
        if wrap is None:
            script = f"{cd} && echo $$ > {quote_argv([self.pid_file])} && exec {quote_argv(argv)}"
        else:
            record_pid = quote_argv(["sh", "-c", RECORD_PID_THEN_EXEC, self.pid_file, *argv])
            script = wrap(f"{cd} && {record_pid}")
        return outcome_of(self.run_measuring(script, timeout), timeout)

    @property
    def pid_file(self) -> str:
        """Where the runner or framework tool measuring now records its PID on the device."""
        return self.path("run.pid")

    def run_measuring(self, script: str, timeout: float) -> CommandResult:
        """Run a command that records its PID in ``pid_file``; killed there if it times out
        (dropping the connection would not stop it on the device)."""
        self._measuring = True
        try:
            command = self.transport.shell(script, timeout=timeout)
            if command.timed_out:
                self._kill_measuring(timeout=30)
            return command
        finally:
            self._measuring = False

    def _kill_measuring(self, timeout: float) -> None:
        pid_file = quote_argv([self.pid_file])
        self.transport.shell(f"kill -9 $(cat {pid_file}) 2>/dev/null; true", timeout=timeout)

    def abort_running(self) -> None:
        # Only while something measures: an old PID file could name a reused PID.
        if not self._measuring:
            return
        try:
            self._kill_measuring(timeout=10)
        except TransportError as exc:
            log.warning("%s: could not stop what was measuring: %s", self.name, exc)

    def output_path(self, cell_key: str) -> str:
        return self.path("outputs", f"{cell_key}.npz")

    def fetch_outputs(self, device_path: str) -> Path | None:
        local = self._staging / posixpath.basename(device_path)
        return local if self.transport.pull(device_path, local) else None

    def discard_outputs(self, device_path: str) -> None:
        (self._staging / posixpath.basename(device_path)).unlink(missing_ok=True)
        self.transport.remove(device_path)

    # --- facts ----------------------------------------------------------------------------

    def _own_facts(self, facts: dict[str, Any]) -> dict[str, Any]:
        if self.transport.kind != "adb":
            return {}
        getprop = "".join(f"getprop {name}; " for name in ANDROID_PROPERTIES)
        answer = self.transport.shell(getprop + ANDROID_ACCELERATOR_COMMAND, timeout=30)
        return collect_android(answer.stdout)
