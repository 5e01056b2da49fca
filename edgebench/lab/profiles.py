"""Device profiles: one TOML per chip or board (clusters, energy source, thermal zones, defaults).

Built-in profiles ship as package data in ``edgebench.device_profiles``; a user profile is any
TOML file with the same schema (see docs/devices.md, "Device profiles"). The file format and its
validation live in ``profile_schema``; this module loads profiles, matches them to probed devices
and compares them with what a device reports.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from edgebench.errors import UserError
from edgebench.lab.cores import detect_clusters, format_cpu_list
from edgebench.lab.profile_schema import Cluster, GpuProfile, validate_profile
from edgebench.lab.toml_input import one_line, read_toml, show

PACKAGE = "edgebench.device_profiles"

#: A detected cluster maximum this far from the profile's is reported by compare_clusters.
FREQ_TOLERANCE = 0.03


# --- the profile ------------------------------------------------------------------------------


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
    #: A board's NVIDIA GPU ([gpu]), None where the profile names none.
    gpu: GpuProfile | None = None
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
                freq[cpu] = cluster.max_freq_mhz if known else rank  # type: ignore[assignment]  # known: no None left
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
    fields = validate_profile(data, label, path, builtin=builtin, builtin_names=list_profiles())
    return DeviceProfile(**fields, source_path=path, builtin=builtin)


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
