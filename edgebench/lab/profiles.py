"""Device profiles: one TOML per chip or board (clusters, energy source, thermal zones, defaults).

Built-in profiles ship as package data in ``edgebench.device_profiles``; a user profile is any
TOML file with the same schema (see docs/devices.md, "Device profiles"). Every problem in a
profile file is reported as one ``UserError`` line naming the file, the field and the fix.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.lab.cores import detect_clusters, format_cpu_list, parse_cpu_list

SCHEMA = "edgebench.profile/1"
PACKAGE = "edgebench.device_profiles"

TRANSPORTS = ("adb", "ssh", "local")
RUNNERS = ("python", "native")
ENERGY_SOURCES = ("android_fuel_gauge", "android_odpm", "ina3221", "rapl", "none", "auto")

#: Where the runner and artifacts live when neither the lab nor the profile says.
DEFAULT_WORK_DIRS = {"adb": "/data/local/tmp/edgebench", "ssh": "/tmp/edgebench"}
DEFAULT_MAX_TEMP_C = 45.0

#: A detected cluster maximum this far from the profile's is reported by compare_clusters.
FREQ_TOLERANCE = 0.03

MAX_CPU_ID = 4095
MAX_FILE_BYTES = 1 << 20

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_CLUSTER_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_CPU_LIST_RE = re.compile(
    r"\s*[0-9]{1,5}(\s*-\s*[0-9]{1,5})?(\s*,\s*[0-9]{1,5}(\s*-\s*[0-9]{1,5})?)*\s*"
)
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")

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
)
_REQUIRED_TOP = ("schema", "name", "transport", "runner", "clusters", "energy")
_CLUSTER_KEYS = ("name", "cpus", "max_freq_mhz", "core")
_ENERGY_KEYS = ("source",)
_THERMAL_KEYS = ("zones", "max_temp_c")


# --- small helpers shared with lab.py ---------------------------------------------------------


def one_line(text: str) -> str:
    """Collapse anything that could break a message onto a second line."""
    return _LINE_BREAKS.sub(" ", text).strip()


def show(value: Any, limit: int = 40) -> str:
    """A value as it may appear in a message: quoted, escaped, shortened."""
    if isinstance(value, str):
        text = value if len(value) <= limit else value[: limit - 1] + "…"
        return json.dumps(text, ensure_ascii=False)
    if type(value) in (int, float):
        return str(value)[:limit]
    return type_name(value)


def type_name(value: Any) -> str:
    """TOML's name for a parsed value's type, for 'must be X, not Y' messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time" if value is not None else "nothing"


def has_breaks(text: str) -> bool:
    return bool(_LINE_BREAKS.search(text))


def unknown_key_fix(key: str, known: Iterable[str]) -> str:
    """'(did you mean X?)' for a mistyped key, else the list of known keys."""
    names = list(known)
    match = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return f"(did you mean {match[0]}?)" if match else f"(known keys: {', '.join(names)})"


def read_toml(path: Path, kind: str, label: str) -> dict[str, Any]:
    """Parse a TOML file; every failure is one UserError line naming ``kind label``."""
    where = f"{kind} {label}"
    try:
        data = path.read_bytes()[: MAX_FILE_BYTES + 1]
    except FileNotFoundError as exc:
        raise UserError(one_line(f"{where}: file does not exist")) from exc
    except IsADirectoryError as exc:
        raise UserError(one_line(f"{where}: is a folder, not a TOML file")) from exc
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        raise UserError(one_line(f"{where}: cannot be read ({reason})")) from exc
    if len(data) > MAX_FILE_BYTES:
        raise UserError(one_line(f"{where}: larger than 1 MB, not a {kind} file"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            one_line(f"{where}: not UTF-8 text (byte {exc.start}); save it as UTF-8")
        ) from exc
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(
            one_line(f"{where}: TOML syntax error: {exc} (see docs/devices.md for the format)")
        ) from exc
    except (RecursionError, ValueError) as exc:
        raise UserError(one_line(f"{where}: TOML that edgebench cannot read ({exc})")) from exc


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


# --- the profile ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """Cores that share a frequency domain (one cpufreq policy), e.g. "little" = cpus 0-3."""

    name: str
    cpus: tuple[int, ...]
    max_freq_mhz: int | None = None
    core: str | None = None


@dataclass(frozen=True)
class DeviceProfile:
    """What edgebench knows about a chip or board before it talks to it."""

    name: str
    description: str
    transport: str
    runner: str
    work_dir: str
    soc_ids: tuple[str, ...]
    clusters: tuple[Cluster, ...]  # empty: detect clusters on the device at run time
    energy_source: str
    thermal_zones: tuple[str, ...]  # fnmatch patterns for thermal_zone*/type
    max_temp_c: float
    source_path: Path | None = None
    builtin: bool = False

    @property
    def detects_clusters(self) -> bool:
        """True when the profile leaves the cluster layout to run-time detection."""
        return not self.clusters

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(sorted(c for cluster in self.clusters for c in cluster.cpus))

    def ranked_clusters(self) -> dict[str, list[int]]:
        """The names ``cores.detect_clusters`` gives a device laid out like this profile.

        Clusters are ranked by ``max_freq_mhz`` when every cluster has one (clusters at the same
        frequency merge, as they do on a device), else by their order in the file.
        """
        if not self.clusters:
            return {}
        known = all(c.max_freq_mhz is not None for c in self.clusters)
        freq: dict[int, int] = {}
        for rank, cluster in enumerate(self.clusters):
            for cpu in cluster.cpus:
                freq[cpu] = cluster.max_freq_mhz if known else rank  # type: ignore[assignment]
        return detect_clusters(freq)

    def cluster_map(self) -> dict[str, list[int]]:
        """Names usable with ``--cores``: the declared clusters, the rank names detection would
        give the same layout where the profile has no cluster of that name (so a one-core top
        cluster answers to both "big" and "prime"), and "all"."""
        names: dict[str, list[int]] = {c.name: list(c.cpus) for c in self.clusters}
        for name, cpus in self.ranked_clusters().items():
            names.setdefault(name, cpus)
        if self.clusters:
            names["all"] = list(self.cpus)
        return names

    def match_score(self, values: Iterable[str]) -> int:
        """Length of the longest soc_id found (case-insensitively) in any probed value; 0: none.

        Probed values: ro.soc.model, ro.board.platform, ro.hardware, /proc/device-tree/model and
        /proc/device-tree/compatible.
        """
        texts = [v.lower() for v in values if v]
        best = 0
        for soc_id in self.soc_ids:
            if any(soc_id.lower() in text for text in texts):
                best = max(best, len(soc_id))
        return best

    def thermal_zone_matches(self, zone_type: str) -> bool:
        return any(fnmatch.fnmatchcase(zone_type, pattern) for pattern in self.thermal_zones)


# --- loading ----------------------------------------------------------------------------------

#: User profiles loaded in this process, so that their name resolves like a built-in's.
_USER_PROFILES: dict[str, DeviceProfile] = {}


def list_profiles() -> list[str]:
    """Names of the built-in profiles, sorted."""
    folder = resources.files(PACKAGE)
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml") and entry.is_file()
    )


def _builtin_hint() -> str:
    return "built-in profiles: " + ", ".join(list_profiles())


def looks_like_path(text: str) -> bool:
    return text.endswith(".toml") or "/" in text or "\\" in text or text.startswith("~")


def load_profile(name_or_path: str | Path, *, base_dir: Path | None = None) -> DeviceProfile:
    """A built-in profile by name, or a user profile from a TOML path.

    A string is a path when it ends in ``.toml`` or contains a path separator; a relative path
    is taken from ``base_dir`` (the lab file's folder) when given. A bare name is a built-in, or
    a user profile already loaded in this process under that name.
    """
    if isinstance(name_or_path, Path) or looks_like_path(str(name_or_path)):
        raw = str(name_or_path)
        try:
            path = Path(raw).expanduser()
        except RuntimeError as exc:  # ~user that does not exist
            raise UserError(one_line(f"profile {raw}: cannot expand ~ ({exc})")) from exc
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        try:
            exists = path.exists()
        except (OSError, ValueError):  # a NUL byte, a name too long for the file system
            exists = False
        if not exists:
            raise UserError(
                one_line(
                    f"profile {path}: file does not exist (give a TOML path or one of the "
                    f"{_builtin_hint()})"
                )
            )
        profile = _load_file(path, builtin=False)
        _USER_PROFILES[profile.name] = profile
        return profile
    name = str(name_or_path).strip()
    if name in list_profiles():
        resource = resources.files(PACKAGE) / f"{name}.toml"
        return _load_file(Path(str(resource)), builtin=True)
    if name in _USER_PROFILES:
        return _USER_PROFILES[name]
    raise UserError(
        one_line(
            f"profile {show(name)} is not a built-in profile ({_builtin_hint()}; or give "
            "the path to a .toml profile)"
        )
    )


def builtin_profiles() -> list[DeviceProfile]:
    return [load_profile(name) for name in list_profiles()]


def match_profile(values: Iterable[str]) -> DeviceProfile | None:
    """The built-in profile whose soc_ids best match probed device strings, or None."""
    probed = list(values)
    scored = [(p.match_score(probed), p) for p in builtin_profiles()]
    scored = [(score, p) for score, p in scored if score > 0]
    return max(scored, key=lambda sp: sp[0])[1] if scored else None


def _load_file(path: Path, *, builtin: bool) -> DeviceProfile:
    label = f"{path.name} (built-in)" if builtin else str(path)
    data = read_toml(path, "profile", label)
    return _Validator(label, path).profile(data, builtin=builtin)


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
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string like {example}, not {type_name(value)}")
        if has_breaks(value) or not value.strip():
            raise self.fail(field, f"must be a non-empty one-line string like {example}")
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

    def profile(self, data: dict[str, Any], *, builtin: bool) -> DeviceProfile:
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
        if not builtin and name in list_profiles():
            raise self.fail(
                "name", f"{show(name)} is a built-in profile's name (rename it, e.g. {name}-mine)"
            )
        description = data.get("description", "")
        if not isinstance(description, str):
            raise self.fail("description", f"must be a string, not {type_name(description)}")
        transport = self.choice(data["transport"], "transport", TRANSPORTS)
        runner = self.choice(data["runner"], "runner", RUNNERS)
        work_dir = self.work_dir(data.get("work_dir"), transport)
        soc_ids = self.strings(data.get("soc_ids", []), "soc_ids", '"SM8550"')
        clusters = self.clusters(data["clusters"])
        energy_source = self.energy(data["energy"])
        zones, max_temp = self.thermal(data.get("thermal", {}))
        return DeviceProfile(
            name=name,
            description=one_line(description),
            transport=transport,
            runner=runner,
            work_dir=work_dir,
            soc_ids=soc_ids,
            clusters=clusters,
            energy_source=energy_source,
            thermal_zones=zones,
            max_temp_c=max_temp,
            source_path=self.path,
            builtin=builtin,
        )

    def work_dir(self, value: Any, transport: str) -> str:
        if value is None:
            return DEFAULT_WORK_DIRS.get(transport, "")
        text = self.string(value, "work_dir", '"/data/local/tmp/edgebench"')
        problem = work_dir_problem(text, transport)
        if problem:
            raise self.fail("work_dir", f"{show(text)} {problem}")
        return text

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
            field = f"clusters[{i}]"
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
            if any(c.name == cname for c in clusters):
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
            clusters.append(Cluster(cname, cpus, freq, core))
        if owner:
            missing = sorted(set(range(max(owner) + 1)) - set(owner))
            if missing:
                raise self.fail(
                    "clusters",
                    f"leave cpu {format_cpu_list(missing)} in no cluster (clusters must cover "
                    f"cpus 0-{max(owner)})",
                )
        freqs = [c.max_freq_mhz for c in clusters]
        if all(f is not None for f in freqs) and freqs != sorted(freqs):  # type: ignore[type-var]
            raise self.fail(
                "clusters", "must be listed from the slowest to the fastest (by max_freq_mhz)"
            )
        return tuple(clusters)

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


_EXAMPLES = {
    "schema": f'schema = "{SCHEMA}"',
    "name": 'name = "my-board"',
    "transport": 'transport = "adb", "ssh" or "local"',
    "runner": 'runner = "python" or "native"',
    "clusters": "[[clusters]] tables, or clusters = [] to detect them at run time",
    "energy": '[energy] with source = "none" or another energy source',
    "cpus": 'cpus = "4-7"',
}


def work_dir_problem(text: str, transport: str) -> str | None:
    """Why ``text`` cannot be a work dir for ``transport``; None when it can."""
    if has_breaks(text):
        return "must be one line"
    if transport == "adb":
        if not text.startswith("/"):
            return "must be an absolute path on the device (e.g. /data/local/tmp/edgebench)"
    elif not (text.startswith("/") or text == "~" or text.startswith("~/")):
        return "must be absolute or start with ~/ (e.g. /tmp/edgebench or ~/edgebench)"
    if text.rstrip("/") in ("", "~"):
        return "must be a folder of its own, not / or ~ (edgebench clean removes it)"
    return None


# --- comparing a profile with a device --------------------------------------------------------


def compare_clusters(
    profile: DeviceProfile,
    detected: Mapping[str, list[int]],
    *,
    max_freq_khz: Mapping[int, int] | None = None,
) -> list[str]:
    """Human-readable differences between a profile's clusters and a device's.

    ``detected`` is ``cores.detect_clusters(max_freq_khz)`` for the device (an "all" entry is
    ignored). With ``max_freq_khz`` the online cpus and each cluster's top frequency are
    compared too. A profile without clusters detects them, so nothing differs.
    """
    if profile.detects_clusters:
        return []
    expected = profile.ranked_clusters()
    found = {name: sorted(cpus) for name, cpus in detected.items() if name != "all"}
    differences: list[str] = []
    for name in _ordered_names(expected, found):
        want, have = expected.get(name), found.get(name)
        if want == have:
            continue
        if have is None:
            differences.append(
                f"cluster {name}: the profile has cpus {format_cpu_list(want or [])}, "
                "the device has no such cluster"
            )
        elif want is None:
            differences.append(
                f"cluster {name}: the device has cpus {format_cpu_list(have)}, "
                "the profile has no such cluster"
            )
        else:
            differences.append(
                f"cluster {name}: the profile has cpus {format_cpu_list(want)}, "
                f"the device {format_cpu_list(have)}"
            )
    if not expected and found:
        differences.append(
            "the profile's cores all run at one top frequency, the device's do not "
            f"({', '.join(f'{n} {format_cpu_list(c)}' for n, c in found.items())})"
        )
    if max_freq_khz:
        differences += _compare_frequencies(profile, max_freq_khz)
    return differences


def _ordered_names(*maps: Mapping[str, list[int]]) -> list[str]:
    order = ["little", "mid", "big", "prime"]
    names = {name for m in maps for name in m}
    return [n for n in order if n in names] + sorted(names - set(order))


def _compare_frequencies(profile: DeviceProfile, max_freq_khz: Mapping[int, int]) -> list[str]:
    differences: list[str] = []
    online = sorted(max_freq_khz)
    if online != list(profile.cpus):
        differences.append(
            f"cpus: the profile describes {format_cpu_list(list(profile.cpus))}, the device "
            f"reports {format_cpu_list(online) or 'none'}"
        )
    for cluster in profile.clusters:
        freqs = [max_freq_khz[c] for c in cluster.cpus if c in max_freq_khz]
        if cluster.max_freq_mhz is None or not freqs:
            continue
        device_mhz = max(freqs) / 1000
        if abs(device_mhz - cluster.max_freq_mhz) > FREQ_TOLERANCE * cluster.max_freq_mhz:
            differences.append(
                f"cluster {cluster.name} (cpus {format_cpu_list(list(cluster.cpus))}): the "
                f"device runs up to {device_mhz:.0f} MHz, the profile says "
                f"{cluster.max_freq_mhz} MHz"
            )
    return differences
