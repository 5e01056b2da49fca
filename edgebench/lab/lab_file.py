"""The lab inventory: which devices exist and how to reach them (``lab.toml``).

Found through ``--lab PATH``, else ``$EDGEBENCH_LAB``, else ``<config dir>/edgebench/lab.toml``
(``$XDG_CONFIG_HOME`` or ``~/.config``). Without a lab file only the built-in ``local`` device
exists. Every problem is one ``UserError`` line naming the file, the device and the field;
messages never contain secrets (edgebench takes no passwords, and key files are only named).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.lab.profile_schema import (
    DEFAULT_WORK_DIRS,
    RUNNERS,
    TRANSPORTS,
    work_dir_problem,
)
from edgebench.lab.profiles import DeviceProfile, load_profile
from edgebench.lab.toml_input import (
    one_line,
    read_toml,
    show,
    string_problem,
    type_name,
    unknown_key_fix,
)
from edgebench.paths import cache_dir

LAB_SCHEMA = "edgebench.lab/1"
ENV_VAR = "EDGEBENCH_LAB"
LOCAL = "local"

DEFAULT_SSH_PORT = 22
DEFAULT_ADB_HOST = "127.0.0.1"
DEFAULT_ADB_PORT = 5037
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"

_DEVICE_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_HOST_RE = re.compile(r"[A-Za-z0-9_.:%\[\]-]{1,253}")
_SERIAL_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")

_COMMON_KEYS = ("transport", "profile", "work_dir", "python", "runner", "native_bin")
_ADB_KEYS = ("serial", "adb_host", "adb_port")
_SSH_KEYS = ("host", "port", "user", "key", "known_hosts")
_KEYS_BY_TRANSPORT = {
    "adb": _COMMON_KEYS + _ADB_KEYS,
    "ssh": _COMMON_KEYS + _SSH_KEYS,
    "local": _COMMON_KEYS,
}
_ALL_KEYS = _COMMON_KEYS + _ADB_KEYS + _SSH_KEYS
#: Keys that would hold a secret. Rejected without ever echoing their value.
_SECRET_KEYS = frozenset(
    {"password", "passwd", "pass", "passphrase", "pwd", "secret", "token", "private_key"}
)


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/edgebench``, else ``~/.config/edgebench``."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "edgebench"


@dataclass(frozen=True)
class LabDevice:
    """One device of the lab, with every default filled in."""

    name: str
    transport: str  # adb | ssh | local
    profile: DeviceProfile | None = None
    serial: str | None = None  # adb
    adb_host: str = DEFAULT_ADB_HOST
    adb_port: int = DEFAULT_ADB_PORT
    host: str | None = None  # ssh
    port: int = DEFAULT_SSH_PORT
    user: str | None = None  # None: ssh's own default (the local user name)
    key: Path | None = None  # None: the ssh agent and the default ~/.ssh keys
    known_hosts: Path = field(default_factory=lambda: Path(DEFAULT_KNOWN_HOSTS).expanduser())
    python: str = "python3"  # interpreter on the device for the Python runner
    work_dir: str = ""  # on the device; a leading "~/" is the login user's home there
    runner: str = "python"  # python | native
    native_bin: Path | None = None  # host folder of native benchmark binaries to push
    source: Path | None = None  # the lab file; None for the built-in local device

    @property
    def builtin(self) -> bool:
        return self.source is None

    def address(self) -> str:
        """Where the device is, for listings: "adb R5CT..", "ssh bench@orin:22", "local"."""
        if self.transport == "adb":
            server = ""
            if (self.adb_host, self.adb_port) != (DEFAULT_ADB_HOST, DEFAULT_ADB_PORT):
                server = f" via {self.adb_host}:{self.adb_port}"
            return f"adb {self.serial}{server}"
        if self.transport == "ssh":
            user = f"{self.user}@" if self.user else ""
            return f"ssh {user}{self.host}:{self.port}"
        return "local"

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
        work_dir=str(cache_dir() / "local"),
        runner="python",
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

    def host_path(self, key: str, example: str) -> Path | None:
        value = self.text(key, example)
        if value is None:
            return None
        try:
            path = Path(value).expanduser()
        except RuntimeError as exc:
            raise self.fail(key, f"{show(value)}: cannot expand ~ ({exc})") from exc
        return path if path.is_absolute() else self.lab.path.parent / path

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
        for key in table:
            if key not in _ALL_KEYS:
                raise self.fail(key, f"is not a known key {unknown_key_fix(key, _ALL_KEYS)}")
        profile = self.profile()
        transport = self.transport(profile)
        for key in table:
            if key not in _KEYS_BY_TRANSPORT[transport]:
                users = "adb" if key in _ADB_KEYS else "ssh"
                raise self.fail(
                    key, f"is only used by {users} devices; this one uses {transport} (remove it)"
                )
        runner = table.get("runner")
        if runner is None and "python" in table:
            runner = "python"  # naming an interpreter means: use the Python runner
        elif runner is None:
            runner = profile.runner if profile else ("native" if transport == "adb" else "python")
        elif not isinstance(runner, str):
            raise self.fail("runner", f"must be python or native, not {type_name(runner)}")
        elif runner not in RUNNERS:
            raise self.fail("runner", f"{show(runner)} is not a runner (use python or native)")
        device = LabDevice(
            name=self.name,
            transport=transport,
            profile=profile,
            python=self.pattern(
                "python", re.compile(r"\S+"), '"/opt/venv/bin/python3"', "an interpreter path"
            )
            or "python3",
            work_dir=self.work_dir(transport, profile),
            runner=runner,
            native_bin=self.host_path("native_bin", '"~/bench/bin"'),
            source=self.lab.path,
            **self.endpoint(transport),
        )
        return device

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
        if value is None:
            if profile is None:
                raise self.fail("transport", f"is missing (use one of {', '.join(TRANSPORTS)})")
            return profile.transport
        if not isinstance(value, str):
            raise self.fail("transport", f"must be adb, ssh or local, not {type_name(value)}")
        if value not in TRANSPORTS:
            raise self.fail(
                "transport", f"{show(value)} is not a transport (use adb, ssh or local)"
            )
        return value

    def work_dir(self, transport: str, profile: DeviceProfile | None) -> str:
        value = self.text("work_dir", '"/data/local/tmp/edgebench"')
        if value is not None:
            problem = work_dir_problem(value, transport)
            if problem:
                raise self.fail("work_dir", f"{show(value)} {problem}")
            if transport == "local":
                return str(Path(value).expanduser())
            return value
        if profile is not None and profile.transport == transport and profile.work_dir:
            return profile.work_dir
        if transport == "local":
            return str(cache_dir() / "local")
        return DEFAULT_WORK_DIRS[transport]

    def endpoint(self, transport: str) -> Mapping[str, Any]:
        if transport == "adb":
            serial = self.pattern("serial", _SERIAL_RE, '"R5CT1234ABC"', "an adb serial")
            if serial is None:
                raise self.fail(
                    "serial", "is missing (adb devices need one; `adb devices` lists them)"
                )
            return {
                "serial": serial,
                "adb_host": self.pattern("adb_host", _HOST_RE, '"127.0.0.1"', "a host name")
                or DEFAULT_ADB_HOST,
                "adb_port": self.number("adb_port", _default_adb_port()),
            }
        if transport == "ssh":
            host = self.pattern("host", _HOST_RE, '"orin.lab.local"', "a host name or address")
            if host is None:
                raise self.fail("host", 'is missing (ssh devices need one, e.g. "orin.lab.local")')
            key = self.table.get("key")
            if isinstance(key, str) and ("PRIVATE KEY" in key or "\n" in key or len(key) > 1024):
                # Someone pasted the key itself: say so without repeating any of it.
                raise self.fail(
                    "key",
                    "must be the path to a private key file, not the key itself (save the key "
                    'to a file such as ~/.ssh/id_ed25519 and set key = "~/.ssh/id_ed25519")',
                )
            known_hosts = self.host_path("known_hosts", '"~/.ssh/known_hosts"')
            return {
                "host": host,
                "port": self.number("port", DEFAULT_SSH_PORT),
                "user": self.pattern("user", _USER_RE, '"bench"', "a user name"),
                "key": self.host_path("key", '"~/.ssh/id_ed25519"'),
                "known_hosts": known_hosts or Path(DEFAULT_KNOWN_HOSTS).expanduser(),
            }
        return {}


def _is_secret_key(key: str) -> bool:
    """password, passwd, pasword, ssh_password, ...: anything that looks like a secret."""
    lowered = key.lower()
    if lowered in _SECRET_KEYS or any(part in _SECRET_KEYS for part in re.split(r"[_.-]", lowered)):
        return True
    return bool(difflib.get_close_matches(lowered, _SECRET_KEYS, n=1, cutoff=0.8))


def _default_adb_port() -> int:
    """adb's own default: $ANDROID_ADB_SERVER_PORT when set, else 5037."""
    value = os.environ.get("ANDROID_ADB_SERVER_PORT", "")
    if value.isascii() and value.isdigit() and 1 <= int(value) <= 65535:
        return int(value)
    return DEFAULT_ADB_PORT
