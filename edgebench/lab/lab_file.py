"""The lab inventory: which devices exist and how to reach them (``lab.toml``).

Found through ``--lab PATH``, else ``$EDGEBENCH_LAB``, else ``<config dir>/edgebench/lab.toml``
(``$XDG_CONFIG_HOME`` or ``~/.config``). Without a lab file only the built-in ``local`` device
exists. Every problem is one ``UserError`` line naming the file, the device and the field;
messages never contain secrets (edgebench takes no passwords, and key files are only named).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.compute_backends import BACKEND_NAMES
from edgebench.errors import UserError
from edgebench.lab.device import local_work_dir
from edgebench.lab.profile_schema import normalize_work_dir, work_dir_problem
from edgebench.lab.profiles import DeviceProfile, load_profile
from edgebench.lab.runner_kinds import RUNNERS, RunnerKind, renamed_runner, warn_renamed
from edgebench.lab.toml_input import (
    one_line,
    read_toml,
    show,
    string_problem,
    type_name,
    unknown_key_fix,
)
from edgebench.lab.transports import transport_kinds

LAB_SCHEMA = "edgebench.lab/1"
ENV_VAR = "EDGEBENCH_LAB"
LOCAL = "local"

log = logging.getLogger(__name__)

_DEVICE_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")

#: Keys every lab entry may have, whatever its transport; each transport adds its own.
_COMMON_KEYS = (
    "transport",
    "profile",
    "work_dir",
    "python",
    "runner",
    "tools_bin",
    "emulated",
    "backends",
)
#: Keys renamed since a lab file may have been written: old name -> new name. The old one is
#: still read, with one warning line.
RENAMED_KEYS = {"native_bin": "tools_bin"}
#: Keys that would hold a secret. Rejected without ever echoing their value.
_SECRET_KEYS = frozenset(
    {"password", "passwd", "pass", "passphrase", "pwd", "secret", "token", "private_key"}
)


def _transport_keys() -> dict[str, tuple[str, ...]]:
    return {name: kind.keys for name, kind in transport_kinds().items()}


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/edgebench``, else ``~/.config/edgebench``."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "edgebench"


@dataclass(frozen=True)
class LabDevice:
    """One device of the lab, with every default filled in."""

    name: str
    transport: str  # a name in edgebench.lab.transports (adb, ssh, local)
    profile: DeviceProfile | None = None
    python: str = "python3"  # interpreter on the device for the Python runner
    work_dir: str = ""  # on the device; a leading "~/" is the login user's home there
    runner: RunnerKind = RunnerKind.PYTHON
    tools_bin: Path | None = None  # host folder of native benchmark binaries to push
    source: Path | None = None  # the lab file; None for the built-in local device
    #: The lab's word on whether the CPU is emulated; None: edgebench detects it.
    emulated: bool | None = None
    #: The compute backends measured on this device when a run names none (``--backends``).
    backends: tuple[str, ...] | None = None
    #: The transport's own keys (adb: serial, adb_host, adb_port; ssh: host, port, user, key,
    #: known_hosts), checked; also readable as attributes (``entry.serial``).
    endpoint: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __getattr__(self, key: str) -> Any:
        endpoint = self.__dict__.get("endpoint") or {}
        if key in endpoint:
            return endpoint[key]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('name')!r} has no {key}")

    @property
    def builtin(self) -> bool:
        return self.source is None

    def address(self) -> str:
        """Where the device is, for listings: "adb R5CT..", "ssh bench@orin:22", "local"."""
        return transport_kinds()[self.transport].address(self.endpoint)

    def identity(self) -> str:
        """Which device this entry reaches ("this machine", "adb serial R5CT..",
        "ssh orin:22"): two entries with the same identity are two names for one device."""
        return transport_kinds()[self.transport].device_identity(self.endpoint)

    def summary(self) -> str:
        profile = self.profile.name if self.profile else "none (clusters detected)"
        return f"{self.name}: {self.address()}, runner {self.runner}, profile {profile}"

    def remote_work_dir(self, home: str) -> str:
        """``work_dir`` with a leading ``~`` replaced by the device user's home folder."""
        if self.work_dir == "~" or self.work_dir.startswith("~/"):
            return home.rstrip("/") + self.work_dir[1:]
        return self.work_dir


def local_device() -> LabDevice:
    """The built-in device: this machine, running the runner from the installed package."""
    return LabDevice(
        name=LOCAL,
        transport="local",
        python=sys.executable,
        work_dir=str(local_work_dir()),
        runner=RunnerKind.PYTHON,
    )


@dataclass(frozen=True)
class Lab:
    """The lab file's devices. The built-in ``local`` device is not in ``devices``; ``get``,
    ``names`` and ``all_devices`` include it."""

    path: Path | None
    devices: dict[str, LabDevice] = field(default_factory=dict)

    def names(self) -> list[str]:
        return [LOCAL, *self.devices]

    def all_devices(self) -> list[LabDevice]:
        return [local_device(), *self.devices.values()]

    def get(self, name: str) -> LabDevice:
        if name == LOCAL:
            return local_device()
        if name in self.devices:
            return self.devices[name]
        where = (
            f"in lab {self.path}"
            if self.path
            else f"(no lab file; create {config_dir() / 'lab.toml'} or pass --lab)"
        )
        raise UserError(
            one_line(
                f"device {show(name)} is not defined {where}; devices: {', '.join(self.names())}"
            )
        )


def _locate(explicit: Path | None) -> tuple[Path | None, str]:
    if explicit is not None:
        return Path(explicit), "given with --lab"
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env), f"set by ${ENV_VAR}"
    default = config_dir() / "lab.toml"
    return (default if default.is_file() else None), "default location"


def find_lab_path(explicit: Path | None = None) -> Path | None:
    """The lab file to use: ``explicit``, else ``$EDGEBENCH_LAB``, else the config dir's
    ``lab.toml`` when it exists; None when there is none."""
    return _locate(explicit)[0]


def load_lab(path: Path | None = None) -> Lab:
    """Read and validate the lab; an empty lab (only ``local``) when no lab file exists.

    A path given explicitly or through ``$EDGEBENCH_LAB`` must exist.
    """
    found, origin = _locate(path)
    if found is None:
        return Lab(None, {})
    try:
        found = found.expanduser()
    except RuntimeError as exc:
        raise UserError(one_line(f"lab {found}: cannot expand ~ ({exc})")) from exc
    try:
        exists = found.exists()
    except (OSError, ValueError):
        exists = False
    if not exists:
        raise UserError(
            one_line(f"lab {found}: file does not exist ({origin}); create it or fix the path")
        )
    data = read_toml(found, "lab", str(found))
    return _LabReader(found).lab(data)


class _LabReader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = f"lab {path}"

    def fail(self, field: str, problem: str) -> UserError:
        return UserError(one_line(f"{self.where}: {field} {problem}"))

    def lab(self, data: dict[str, Any]) -> Lab:
        for key in data:
            if key not in ("schema", "devices"):
                raise self.fail(
                    key, f"is not a known key {unknown_key_fix(key, ['schema', 'devices'])}"
                )
        if "schema" in data and data["schema"] != LAB_SCHEMA:
            raise self.fail(
                "schema", f'{show(data["schema"])} is not supported (use "{LAB_SCHEMA}")'
            )
        tables = data.get("devices", {})
        if not isinstance(tables, dict):
            raise self.fail(
                "devices", f"must be a table of devices ([devices.NAME]), not {type_name(tables)}"
            )
        devices: dict[str, LabDevice] = {}
        for name, table in tables.items():
            devices[name] = self.device(name, table)
        return Lab(self.path, devices)

    def device(self, name: str, table: Any) -> LabDevice:
        if not _DEVICE_NAME_RE.fullmatch(name):
            raise self.fail(
                f"devices.{show(name)}",
                "is not a valid device name (use letters, digits, '_', '.', '-'; e.g. pixel8)",
            )
        if name == LOCAL:
            raise self.fail(
                "devices.local",
                "redefines the built-in device local (pick another name, e.g. local2)",
            )
        prefix = f"devices.{name}"
        if not isinstance(table, dict):
            raise self.fail(prefix, f"must be a table ([{prefix}]), not {type_name(table)}")
        reader = _DeviceReader(self, name, table)
        return reader.read()


class _DeviceReader:
    def __init__(self, lab: _LabReader, name: str, table: dict[str, Any]) -> None:
        self.lab = lab
        self.name = name
        self.table = table
        self.prefix = f"devices.{name}"

    def fail(self, key: str, problem: str) -> UserError:
        return self.lab.fail(f"{self.prefix}.{key}", problem)

    # -- value readers ------------------------------------------------------------------------

    def text(self, key: str, example: str) -> str | None:
        value = self.table.get(key)
        if value is None:
            return None
        problem = string_problem(value, example)
        if problem:
            raise self.fail(key, problem)
        return value

    def pattern(self, key: str, regex: re.Pattern[str], example: str, what: str) -> str | None:
        value = self.text(key, example)
        if value is not None and (not regex.fullmatch(value) or value.startswith("-")):
            raise self.fail(key, f"{show(value)} is not {what} (e.g. {example})")
        return value

    def number(self, key: str, default: int) -> int:
        value = self.table.get(key, default)
        if type(value) is not int or not 1 <= value <= 65535:
            shown = str(value) if type(value) in (int, float) else show(value)
            raise self.fail(key, f"must be a port number from 1 to 65535, not {shown}")
        return value

    def flag(self, key: str) -> bool | None:
        value = self.table.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, not {type_name(value)}")
        return value

    def backends(self) -> tuple[str, ...] | None:
        """The ``backends`` list: compute backend names (edgebench/compute_backends.py)."""
        value = self.table.get("backends")
        if value is None:
            return None
        example = '["cpu", "vulkan"]'
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise self.fail("backends", f"must be a list of backend names, e.g. {example}")
        unknown = [v for v in value if v not in BACKEND_NAMES]
        if unknown:
            raise self.fail(
                "backends",
                f"{show(unknown[0])} is not a backend (use {', '.join(BACKEND_NAMES)})",
            )
        return tuple(dict.fromkeys(value))

    def host_path(self, key: str, example: str) -> Path | None:
        value = self.text(key, example)
        if value is None:
            return None
        try:
            path = Path(value).expanduser()
        except RuntimeError as exc:
            raise self.fail(key, f"{show(value)}: cannot expand ~ ({exc})") from exc
        return path if path.is_absolute() else self.lab.path.parent / path

    def new_key_names(self, table: dict[str, Any]) -> dict[str, Any]:
        """``table`` with each renamed key under its new name, saying so in one warning line."""
        renamed = {old: new for old, new in RENAMED_KEYS.items() if old in table}
        for old, new in renamed.items():
            if new in table:
                raise self.fail(old, f'is the old name of "{new}", which is set too; remove it')
            warn_renamed(f"{self.lab.where}, device {self.name}", f'"{old}"', new)
        return {renamed.get(key, key): value for key, value in table.items()}

    # -- the device ---------------------------------------------------------------------------

    def read(self) -> LabDevice:
        table = self.table
        for key in table:
            if _is_secret_key(key):
                raise self.fail(
                    key,
                    "is not accepted: edgebench never stores passwords or secrets; it "
                    "authenticates with SSH keys and the ssh agent (remove it; set key = "
                    '"~/.ssh/id_ed25519" or ssh-add your key)',
                )
        table = self.table = self.new_key_names(table)
        by_transport = _transport_keys()
        every_key = [*_COMMON_KEYS, *(k for keys in by_transport.values() for k in keys)]
        for key in table:
            if key not in every_key:
                raise self.fail(key, f"is not a known key {unknown_key_fix(key, every_key)}")
        profile = self.profile()
        transport = self.transport(profile)
        for key in table:
            if key not in _COMMON_KEYS and key not in by_transport[transport]:
                users = " or ".join(n for n, keys in by_transport.items() if key in keys)
                raise self.fail(
                    key, f"is only used by {users} devices; this one uses {transport} (remove it)"
                )
        runner = renamed_runner(table.get("runner"), f"{self.lab.where}, device {self.name}")
        if runner is None and "python" in table:
            runner = RunnerKind.PYTHON  # naming an interpreter means: use the Python runner
        elif runner is None:
            runner = profile.runner if profile else transport_kinds()[transport].default_runner
        elif not isinstance(runner, str):
            raise self.fail(
                "runner", f"must be one of {', '.join(RUNNERS)}, not {type_name(runner)}"
            )
        elif runner not in RUNNERS:
            raise self.fail("runner", f"{show(runner)} is not a runner (use {', '.join(RUNNERS)})")
        if transport == LOCAL:
            self.refuse_for_local(runner, profile)
        device = LabDevice(
            name=self.name,
            transport=transport,
            profile=profile,
            python=self.python(transport),
            work_dir=self.work_dir(transport, profile),
            runner=RunnerKind(runner),
            tools_bin=self.host_path("tools_bin", '"~/bench/bin"'),
            source=self.lab.path,
            emulated=self.flag("emulated"),
            backends=self.backends(),
            endpoint=transport_kinds()[transport].read_endpoint(self),
        )
        return device

    def python(self, transport: str) -> str:
        """The interpreter: a path on the device; on this machine (local) a path expands ~ and
        is taken from the lab file's folder, and the default is edgebench's own interpreter."""
        value = self.pattern(
            "python", re.compile(r"\S+"), '"/opt/venv/bin/python3"', "an interpreter path"
        )
        if transport != LOCAL:
            return value or "python3"
        if value is None:
            return sys.executable
        if "/" not in value:
            return value  # a command name, found through PATH like any other
        path = self.host_path("python", '"~/venv/bin/python3"')
        return os.path.abspath(path) if path is not None else value

    def refuse_for_local(self, runner: str, profile: DeviceProfile | None) -> None:
        """What a local device cannot do: the frameworks' benchmark binaries (runner
        "framework-tools" and tools_bin) are pushed to adb and ssh devices only."""
        if "tools_bin" in self.table:
            raise self.fail(
                "tools_bin",
                "is not used by local devices (native benchmark binaries are pushed to adb or "
                'ssh devices only); remove it, or use runner = "edgebench-native"',
            )
        if runner == RunnerKind.FRAMEWORK_TOOLS:
            origin = (
                f" (from profile {profile.name})"
                if "runner" not in self.table and profile is not None
                else ""
            )
            raise self.fail(
                "runner",
                f'"framework-tools"{origin} is not available for local devices (it pushes '
                'benchmark binaries to adb or ssh devices); use "python", "edgebench-native" or '
                '"auto"',
            )

    def profile(self) -> DeviceProfile | None:
        value = self.text("profile", '"snapdragon-8-gen-2"')
        if value is None:
            return None
        try:
            return load_profile(value, base_dir=self.lab.path.parent)
        except UserError as exc:
            raise self.fail("profile", f"is not usable: {exc}") from exc

    def transport(self, profile: DeviceProfile | None) -> str:
        value = self.table.get("transport")
        names = list(transport_kinds())
        if value is None:
            if profile is None:
                raise self.fail("transport", f"is missing (use one of {', '.join(names)})")
            return profile.transport
        if not isinstance(value, str):
            raise self.fail("transport", f"must be {_either(names)}, not {type_name(value)}")
        if value not in names:
            raise self.fail("transport", f"{show(value)} is not a transport (use {_either(names)})")
        return value

    def work_dir(self, transport: str, profile: DeviceProfile | None) -> str:
        value = self.text("work_dir", '"/data/local/tmp/edgebench"')
        if value is not None:
            problem = work_dir_problem(value, transport)
            if problem:
                raise self.fail("work_dir", f"{show(value)} {problem}")
            if transport == "local":
                return str(Path(value).expanduser())
            return normalize_work_dir(value)
        if profile is not None and profile.transport == transport and profile.work_dir:
            return profile.work_dir
        if transport == LOCAL:
            return str(local_work_dir())
        return transport_kinds()[transport].default_work_dir

    def raw(self, key: str) -> Any:
        """The key's value as written, unchecked (None when absent)."""
        return self.table.get(key)


def _either(names: list[str]) -> str:
    """ "adb, ssh or local"."""
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def _is_secret_key(key: str) -> bool:
    """password, passwd, pasword, ssh_password, ...: anything that looks like a secret."""
    lowered = key.lower()
    if lowered in _SECRET_KEYS or any(part in _SECRET_KEYS for part in re.split(r"[_.-]", lowered)):
        return True
    return bool(difflib.get_close_matches(lowered, _SECRET_KEYS, n=1, cutoff=0.8))
