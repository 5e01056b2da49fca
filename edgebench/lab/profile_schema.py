"""The device profile file format (``edgebench.profile/1``): its keys, the values each may take,
and the checks that turn a parsed profile TOML into the fields of a ``profiles.DeviceProfile``.

Every problem is one ``UserError`` line naming the file, the field and the fix (see
docs/devices.md, "Device profiles").
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.lab.cores import format_cpu_list, parse_cpu_list
from edgebench.lab.runner_kinds import RUNNERS, renamed_runner
from edgebench.lab.toml_input import (
    has_breaks,
    one_line,
    show,
    string_problem,
    type_name,
    unknown_key_fix,
)
from edgebench.lab.transports import TRANSPORT_MODULES, transport_kinds
from edgebench.runners.protocol.telemetry import SOURCE_KINDS

SCHEMA = "edgebench.profile/1"

#: Transport names (edgebench.lab.transports lists their modules).
TRANSPORTS = TRANSPORT_MODULES
#: Energy sources a profile may name (the runner's vocabulary).
ENERGY_SOURCES = SOURCE_KINDS

#: Where the runner and artifacts live when neither the lab nor the profile says.
DEFAULT_MAX_TEMP_C = 45.0

MAX_CPU_ID = 4095

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_CLUSTER_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_CPU_LIST_RE = re.compile(
    r"\s*[0-9]{1,5}(\s*-\s*[0-9]{1,5})?(\s*,\s*[0-9]{1,5}(\s*-\s*[0-9]{1,5})?)*\s*"
)

_TOP_KEYS = (
    "schema",
    "name",
    "description",
    "transport",
    "runner",
    "work_dir",
    "soc_ids",
    "clusters",
    "energy",
    "thermal",
    "gpu",
)
_REQUIRED_TOP = ("schema", "name", "transport", "runner", "clusters", "energy")
_CLUSTER_KEYS = ("name", "cpus", "max_freq_mhz", "core")
_ENERGY_KEYS = ("source",)
_THERMAL_KEYS = ("zones", "max_temp_c")
_GPU_KEYS = ("name", "compute_capability", "devfreq", "load")
_CAPABILITY_RE = re.compile(r"[0-9]{1,2}\.[0-9]")

_EXAMPLES = {
    "schema": f'schema = "{SCHEMA}"',
    "name": 'name = "my-board"',
    "transport": 'transport = "adb", "ssh" or "local"',
    "runner": 'runner = "python", "framework-tools", "edgebench-native" or "auto"',
    "clusters": "[[clusters]] tables, or clusters = [] to detect them at run time",
    "energy": '[energy] with source = "none" or another energy source',
    "cpus": 'cpus = "4-7"',
}


@dataclass(frozen=True)
class GpuProfile:
    """A board's NVIDIA GPU (``[gpu]``): what the runner should find (docs/nvidia-facts.md)."""

    name: str
    #: CUDA compute capability, ``8.7`` for Orin.
    compute_capability: str | None = None
    #: Jetson: the GPU's devfreq folder and its load file (0.1 % units), as on the device.
    devfreq: str | None = None
    load: str | None = None


@dataclass(frozen=True)
class Cluster:
    """Cores that share a frequency domain (one cpufreq policy), e.g. "little" = cpus 0-3."""

    name: str
    cpus: tuple[int, ...]
    max_freq_mhz: int | None = None
    core: str | None = None


def parse_cpus(value: Any) -> tuple[int, ...]:
    """A cpu-list string ("0-3,6") or an array of ids; ValueError with the reason otherwise."""
    if isinstance(value, str):
        if not _CPU_LIST_RE.fullmatch(value):
            raise ValueError("is not a cpu list")
        try:
            cpus = parse_cpu_list(value)
        except ValueError:  # a range that runs backwards, "3-1"
            raise ValueError("is not a cpu list") from None
    elif isinstance(value, list):
        if not value or not all(type(c) is int for c in value):
            raise ValueError("must be a non-empty array of integers")
        if any(c < 0 for c in value):
            raise ValueError("has a negative cpu id")
        cpus = sorted(set(value))
    else:
        raise ValueError(f"must be a cpu list string, not {type_name(value)}")
    if cpus and cpus[-1] > MAX_CPU_ID:
        raise ValueError(f"has a cpu id above {MAX_CPU_ID}")
    return tuple(cpus)


#: Folders a work dir must not be, after normalising: the root, shared system and temp
#: folders of Linux, Android and macOS. ``edgebench clean`` only removes what edgebench
#: deployed, but a work dir of its own keeps runs from mixing with other files. Home folders
#: themselves (``~``, ``/root``, ``/home/NAME``, ``/Users/NAME``) are refused too.
SYSTEM_FOLDERS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/lost+found",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/snap",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/local",
        "/var",
        "/var/tmp",
        "/var/lib",
        "/data",
        "/data/local",
        "/data/local/tmp",
        "/data/data",
        "/data/media",
        "/data/user",
        "/sdcard",
        "/sdcard/Download",
        "/storage",
        "/storage/emulated",
        "/storage/emulated/0",
        "/storage/self",
        "/storage/self/primary",
        "/mnt/sdcard",
        "/system",
        "/vendor",
        "/product",
        "/odm",
        "/apex",
        "/cache",
        "/config",
        "/acct",
        "/Users",
        "/Volumes",
        "/private",
        "/private/tmp",
        "/private/var",
        "/Library",
        "/Applications",
        "/System",
    }
)
_HOME_PARENTS = ("/home", "/Users")


def normalize_work_dir(text: str) -> str:
    """``text`` with ``.``, ``..``, repeated and trailing slashes resolved (``/tmp/..`` is
    ``/``, ``~/x/..`` is ``~``); a relative result that climbs out of ``~`` keeps its ``..``."""
    if text == "~" or text.startswith("~/"):
        rest = posixpath.normpath(text[1:].lstrip("/") or ".")
        return "~" if rest == "." else "~/" + rest
    return "/" + posixpath.normpath(text).lstrip("/")


def work_dir_problem(text: str, transport: str) -> str | None:
    """Why ``text`` cannot be a work dir for ``transport``; None when it can."""
    if has_breaks(text):
        return "must be one line"
    if not transport_kinds()[transport].home_relative_work_dir:
        if not text.startswith("/"):
            return "must be an absolute path on the device (e.g. /data/local/tmp/edgebench)"
    elif not (text.startswith("/") or text == "~" or text.startswith("~/")):
        return "must be absolute or start with ~/ (e.g. /tmp/edgebench or ~/edgebench)"
    folder = normalize_work_dir(text)
    shown = "" if folder == (text.rstrip("/") or "/") else f"resolves to {folder}, which "
    example = transport_kinds()[transport].default_work_dir or "/tmp/edgebench"
    fix = f"use a folder of its own, e.g. {example}"
    if folder == "~":
        return f"{shown}is the home folder; {fix}"
    if folder.startswith("~/.."):
        return f"{shown}is outside the home folder; {fix}"
    if folder in SYSTEM_FOLDERS or posixpath.dirname(folder) in _HOME_PARENTS:
        what = "the root folder" if folder == "/" else "a shared system or home folder"
        return f"{shown}is {what}; {fix}"
    return None


def validate_profile(
    data: dict[str, Any], label: str, path: Path, *, builtin: bool, builtin_names: Collection[str]
) -> dict[str, Any]:
    """The ``DeviceProfile`` fields a parsed profile file describes, checked in file order.

    ``label`` names the file in messages; a built-in profile's name must be its file's name,
    a user profile's must not be one of ``builtin_names``.
    """
    return _Validator(label, path).profile(data, builtin=builtin, builtin_names=builtin_names)


class _Validator:
    def __init__(self, label: str, path: Path) -> None:
        self.where = f"profile {label}"
        self.path = path

    def fail(self, field: str, problem: str) -> UserError:
        return UserError(one_line(f"{self.where}: {field} {problem}"))

    def keys(self, table: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key not in known:
                raise self.fail(
                    f"{prefix}{key}", f"is not a known key {unknown_key_fix(key, known)}"
                )

    def string(self, value: Any, field: str, example: str) -> str:
        problem = string_problem(value, example)
        if problem:
            raise self.fail(field, problem)
        return value

    def choice(self, value: Any, field: str, choices: tuple[str, ...]) -> str:
        options = ", ".join(choices)
        if not isinstance(value, str):
            raise self.fail(field, f"must be one of {options}, not {type_name(value)}")
        if value not in choices:
            raise self.fail(field, f"{show(value)} is not known (use one of {options})")
        return value

    def strings(self, value: Any, field: str, example: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(field, f"must be an array of strings like [{example}]")
        return tuple(self.string(v, f"{field}[{i}]", example) for i, v in enumerate(value))

    def profile(
        self, data: dict[str, Any], *, builtin: bool, builtin_names: Collection[str]
    ) -> dict[str, Any]:
        self.keys(data, _TOP_KEYS, "")
        for key in _REQUIRED_TOP:
            if key not in data:
                raise self.fail(key, f"is missing (add {_EXAMPLES[key]})")
        schema = data["schema"]
        if schema != SCHEMA:
            raise self.fail(
                "schema", f'{show(schema)} is not supported (this edgebench reads "{SCHEMA}")'
            )
        name = self.string(data["name"], "name", '"my-board"')
        if not _NAME_RE.fullmatch(name):
            raise self.fail(
                "name", f"{show(name)} must be lower-case letters, digits, '.', '_' or '-'"
            )
        if builtin and name != self.path.stem:
            raise self.fail("name", f"{show(name)} must match the file name {self.path.stem!r}")
        if not builtin and name in builtin_names:
            raise self.fail(
                "name", f"{show(name)} is a built-in profile's name (rename it, e.g. {name}-mine)"
            )
        description = data.get("description", "")
        if not isinstance(description, str):
            raise self.fail("description", f"must be a string, not {type_name(description)}")
        transport = self.choice(data["transport"], "transport", tuple(transport_kinds()))
        runner = self.choice(renamed_runner(data["runner"], self.where), "runner", RUNNERS)
        work_dir = self.work_dir(data.get("work_dir"), transport)
        soc_ids = self.strings(data.get("soc_ids", []), "soc_ids", '"SM8550"')
        clusters = self.clusters(data["clusters"])
        energy_source = self.energy(data["energy"])
        zones, max_temp = self.thermal(data.get("thermal", {}))
        gpu = self.gpu(data["gpu"]) if "gpu" in data else None
        return {
            "gpu": gpu,
            "name": name,
            "description": one_line(description),
            "transport": transport,
            "runner": runner,
            "work_dir": work_dir,
            "soc_ids": soc_ids,
            "clusters": clusters,
            "energy_source": energy_source,
            "thermal_zones": zones,
            "max_temp_c": max_temp,
        }

    def work_dir(self, value: Any, transport: str) -> str:
        if value is None:
            return transport_kinds()[transport].default_work_dir
        text = self.string(value, "work_dir", '"/data/local/tmp/edgebench"')
        problem = work_dir_problem(text, transport)
        if problem:
            raise self.fail("work_dir", f"{show(text)} {problem}")
        return normalize_work_dir(text)

    def clusters(self, value: Any) -> tuple[Cluster, ...]:
        if not isinstance(value, list):
            raise self.fail(
                "clusters",
                f"must be an array of [[clusters]] tables (or [] to detect them), not "
                f"{type_name(value)}",
            )
        clusters: list[Cluster] = []
        owner: dict[int, str] = {}
        for i, item in enumerate(value):
            clusters.append(self.cluster(item, f"clusters[{i}]", clusters, owner))
        if owner:
            missing = sorted(set(range(max(owner) + 1)) - set(owner))
            if missing:
                raise self.fail(
                    "clusters",
                    f"leave cpu {format_cpu_list(missing)} in no cluster (clusters must cover "
                    f"cpus 0-{max(owner)})",
                )
        freqs = [c.max_freq_mhz for c in clusters]
        if all(f is not None for f in freqs) and freqs != sorted(freqs):  # type: ignore[type-var]  # all() above: no None left
            raise self.fail(
                "clusters", "must be listed from the slowest to the fastest (by max_freq_mhz)"
            )
        return tuple(clusters)

    def cluster(
        self, item: Any, field: str, earlier: list[Cluster], owner: dict[int, str]
    ) -> Cluster:
        """One [[clusters]] table; ``owner`` (cpu -> cluster name) gains its cpus."""
        if not isinstance(item, dict):
            raise self.fail(field, f"must be a table ([[clusters]]), not {type_name(item)}")
        self.keys(item, _CLUSTER_KEYS, f"{field}.")
        for key in ("name", "cpus"):
            if key not in item:
                raise self.fail(f"{field}.{key}", f"is missing (add {_EXAMPLES[key]})")
        cname = self.string(item["name"], f"{field}.name", '"big"')
        if not _CLUSTER_NAME_RE.fullmatch(cname) or cname == "all":
            raise self.fail(
                f"{field}.name",
                f"{show(cname)} must be a lower-case word like little, mid, big, prime "
                "(and not all)",
            )
        if any(c.name == cname for c in earlier):
            raise self.fail(f"{field}.name", f"{show(cname)} is used twice (rename one)")
        try:
            cpus = parse_cpus(item["cpus"])
        except ValueError as exc:
            given = f"{show(item['cpus'])} " if isinstance(item["cpus"], str) else ""
            raise self.fail(f"{field}.cpus", f'{given}{exc} (use e.g. "4-7")') from exc
        for cpu in cpus:
            if cpu in owner:
                raise self.fail(
                    f"{field}.cpus",
                    f"{show(item['cpus'])} overlaps cluster {owner[cpu]!r} at cpu {cpu} "
                    "(each cpu belongs to one cluster)",
                )
            owner[cpu] = cname
        freq = item.get("max_freq_mhz")
        if freq is not None and (type(freq) is not int or not 1 <= freq <= 100_000):
            raise self.fail(
                f"{field}.max_freq_mhz",
                f"must be a whole number of MHz like 2800, not {show(freq)}",
            )
        core = item.get("core")
        if core is not None:
            core = self.string(core, f"{field}.core", '"Cortex-A715"')
        return Cluster(cname, cpus, freq, core)

    def energy(self, value: Any) -> str:
        if not isinstance(value, dict):
            raise self.fail("energy", f"must be a table ([energy]), not {type_name(value)}")
        self.keys(value, _ENERGY_KEYS, "energy.")
        if "source" not in value:
            raise self.fail("energy.source", f"is missing (use one of {', '.join(ENERGY_SOURCES)})")
        return self.choice(value["source"], "energy.source", ENERGY_SOURCES)

    def thermal(self, value: Any) -> tuple[tuple[str, ...], float]:
        if not isinstance(value, dict):
            raise self.fail("thermal", f"must be a table ([thermal]), not {type_name(value)}")
        self.keys(value, _THERMAL_KEYS, "thermal.")
        zones = self.strings(value.get("zones", []), "thermal.zones", '"cpu-thermal"')
        temp = value.get("max_temp_c", DEFAULT_MAX_TEMP_C)
        if isinstance(temp, bool) or not isinstance(temp, int | float) or not 0 < temp <= 150:
            raise self.fail(
                "thermal.max_temp_c", f"must be degrees Celsius from 1 to 150, not {show(temp)}"
            )
        return zones, float(temp)

    def gpu(self, value: Any) -> GpuProfile:
        if not isinstance(value, dict):
            raise self.fail("gpu", f"must be a table ([gpu]), not {type_name(value)}")
        self.keys(value, _GPU_KEYS, "gpu.")
        if "name" not in value:
            raise self.fail("gpu.name", 'is missing (add name = "Orin (nvgpu)")')
        name = self.string(value["name"], "gpu.name", '"Orin (nvgpu)"')
        capability = value.get("compute_capability")
        if capability is not None and (
            not isinstance(capability, str) or not _CAPABILITY_RE.fullmatch(capability)
        ):
            raise self.fail(
                "gpu.compute_capability",
                f'must be "major.minor" (e.g. "8.7"), not {show(capability)}',
            )
        paths = {}
        for key in ("devfreq", "load"):
            path = value.get(key)
            if path is not None and (not isinstance(path, str) or not path.startswith("/sys/")):
                raise self.fail(
                    f"gpu.{key}", f"must be an absolute path under /sys/, not {show(path)}"
                )
            paths[key] = path
        return GpuProfile(name, capability, paths["devfreq"], paths["load"])
