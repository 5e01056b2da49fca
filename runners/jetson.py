"""A Jetson's own facts (no NVML there before JetPack 7): the power mode (``nvpmodel -q``),
whether the clocks are locked (``jetson_clocks --show``, else cpufreq and devfreq limits), the
GPU's clock and load from sysfs, the process's share of nvmap memory, the L4T release and the
JetPack version.

Every file is read under the sysfs root (``$EDGEBENCH_SYSFS_ROOT``), so a synthetic tree stands
in for a board. Every missing fact is None with its reason; nothing here raises.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Tuple

from .sysfs import sysfs_glob, sysfs_path, try_int, try_text

TEGRA_RELEASE = "/etc/nv_tegra_release"
DPKG_STATUS = "/var/lib/dpkg/status"
JETPACK_PACKAGES = ("nvidia-jetpack", "nvidia-jetpack-runtime")
#: The GPU's devfreq node: Orin on JetPack 6 (17000000.gpu), JetPack 5 (17000000.ga10b),
#: Xavier (17000000.gv11b), TX2 (17000000.gp10b), Nano (57000000.gpu).
DEVFREQ_PATTERNS = (
    "/sys/class/devfreq/*.gpu",
    "/sys/class/devfreq/*.ga10b",
    "/sys/class/devfreq/*.gv11b",
    "/sys/class/devfreq/*.gp10b",
)
#: The GPU load (0.1 % units): beside the devfreq's device first, then the known places.
LOAD_PATHS = (
    "/sys/devices/platform/bus@0/17000000.gpu/load",
    "/sys/devices/platform/17000000.gpu/load",
    "/sys/devices/17000000.ga10b/load",
    "/sys/devices/platform/gpu.0/load",
    "/sys/devices/gpu.0/load",
)
#: Compute capability by the GPU's devfreq name.
CAPABILITIES = {"ga10b": "8.7", "gv11b": "7.2", "gp10b": "6.2", "gm20b": "5.3"}
CHIP_NAMES = {
    "ga10b": "Orin (nvgpu)",
    "gv11b": "Xavier (nvgpu)",
    "gp10b": "TX2 (nvgpu)",
    "gm20b": "Nano (nvgpu)",
}
NVMAP_CLIENTS = "/sys/kernel/debug/nvmap/iovmm/clients"
TOOL_TIMEOUT_S = 10.0


def read_release(root: str) -> Tuple[Optional[str], str]:
    """``# R36 (release), REVISION: 3.0, ...`` -> ``36.3.0``."""
    text = try_text(sysfs_path(root, TEGRA_RELEASE))
    if text is None:
        return None, "%s not readable (not a Jetson)" % TEGRA_RELEASE
    return parse_release(text), "" if parse_release(text) else "%s unparsed" % TEGRA_RELEASE


def parse_release(text: str) -> Optional[str]:
    found = re.search(r"R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)", text)
    return "%s.%s" % (found.group(1), found.group(2)) if found else None


def jetpack_version(root: str) -> Tuple[Optional[str], str]:
    """The installed ``nvidia-jetpack`` package's version (``6.0+b106``), from dpkg's status."""
    path = sysfs_path(root, DPKG_STATUS)
    try:
        with open(path, encoding="utf-8", errors="replace") as status:
            return parse_dpkg_version(status.read(), JETPACK_PACKAGES), ""
    except OSError:
        return None, "%s not readable" % DPKG_STATUS


def parse_dpkg_version(status: str, packages: Tuple[str, ...]) -> Optional[str]:
    for stanza in status.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.MULTILINE))
        if fields.get("Package") in packages and "installed" in fields.get("Status", ""):
            return fields.get("Version")
    return None


def run_tool(argv: List[str]) -> Tuple[Optional[str], str]:
    """A tool's stdout, or None and why (missing, failed, timed out)."""
    if shutil.which(argv[0]) is None:
        return None, "%s not found on PATH" % argv[0]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=TOOL_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "%s: %s" % (" ".join(argv), exc)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return None, "%s exited %d%s" % (
            " ".join(argv),
            done.returncode,
            ": " + tail[0] if tail else "",
        )
    return done.stdout.decode(errors="replace"), ""


def parse_nvpmodel(text: str) -> Tuple[Optional[str], Optional[int]]:
    """``NV Power Mode: MAXN`` then the mode's id on its own line."""
    name, mode_id = None, None
    lines = [line.strip() for line in text.splitlines()]
    for number, line in enumerate(lines):
        found = re.search(r"NV Power Mode:\s*(\S.*)$", line)
        if found:
            name = found.group(1).strip()
            following = lines[number + 1] if number + 1 < len(lines) else ""
            mode_id = int(following) if re.fullmatch(r"\d+", following) else None
    return name, mode_id


def parse_clocks(text: str) -> Dict[str, Dict[str, int]]:
    """``jetson_clocks --show``: each engine's MinFreq, MaxFreq and CurrentFreq (cpuN, GPU,
    EMC, DLA cores), with FreqOverride where printed."""
    engines: Dict[str, Dict[str, int]] = {}
    for line in text.splitlines():
        found = re.match(r"\s*([A-Za-z][\w]*?):?\s+(?:.*?\s)?MinFreq=(\d+)", line)
        if not found:
            continue
        values = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)\b", line))
        engines[found.group(1)] = values
    return engines


def clocks_locked(engines: Dict[str, Dict[str, int]]) -> Optional[bool]:
    """Locked when every CPU and the GPU run with MinFreq = MaxFreq and the EMC is pinned
    (MinFreq = MaxFreq, or FreqOverride=1 as jetson_clocks sets it)."""
    checked = [e for n, e in engines.items() if n.startswith("cpu") or n == "GPU"]
    if not checked:
        return None
    locked = all(e.get("MinFreq") == e.get("MaxFreq") for e in checked)
    emc = engines.get("EMC")
    if emc is not None:
        locked = locked and (
            emc.get("MinFreq") == emc.get("MaxFreq") or emc.get("FreqOverride") == 1
        )
    return locked


def gpu_devfreq(root: str) -> Optional[str]:
    """The GPU's devfreq folder, found under the root."""
    for pattern in DEVFREQ_PATTERNS:
        found = sysfs_glob(root, pattern)
        if found:
            return found[0]
    return None


def gpu_load_path(root: str, devfreq: Optional[str]) -> Optional[str]:
    candidates = [os.path.join(devfreq, "device", "load")] if devfreq else []
    candidates += [sysfs_path(root, path) for path in LOAD_PATHS]
    return next((path for path in candidates if os.path.exists(path)), None)


def chip_of(devfreq: str) -> str:
    """``ga10b`` from the devfreq node's name or its ``device/of_node/compatible``."""
    name = os.path.basename(devfreq).split(".")[-1]
    if name in CAPABILITIES:
        return name
    compatible = try_text(os.path.join(devfreq, "device", "of_node", "compatible")) or ""
    return next((chip for chip in CAPABILITIES if chip in compatible), name)


class TegraGpu:
    """The Jetson GPU's sysfs: clock (Hz) and load, read cheaply for sampling."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.devfreq = gpu_devfreq(root)
        self.load_path = gpu_load_path(root, self.devfreq)
        self.chip = chip_of(self.devfreq) if self.devfreq else None

    @property
    def found(self) -> bool:
        return self.devfreq is not None or self.load_path is not None

    def _freq_mhz(self, name: str) -> Optional[float]:
        value = try_int(os.path.join(self.devfreq, name)) if self.devfreq else None
        return round(value / 1e6, 1) if value is not None else None

    def sample(self) -> Dict[str, Any]:
        load = try_int(self.load_path) if self.load_path else None
        return {
            "sm_clock_mhz": self._freq_mhz("cur_freq"),
            "load_pct": load / 10.0 if load is not None else None,
        }

    def facts(self) -> Dict[str, Any]:
        facts = {
            "name": CHIP_NAMES.get(self.chip or "", self.chip),
            "type": "integrated",
            "compute_capability": CAPABILITIES.get(self.chip or ""),
            "sm_clock_min_mhz": self._freq_mhz("min_freq"),
            "sm_clock_max_mhz": self._freq_mhz("max_freq"),
            "devfreq": self.devfreq,
            "load_path": self.load_path,
        }
        facts.update(self.sample())
        return facts


def sysfs_clocks_locked(root: str, gpu: TegraGpu) -> Optional[bool]:
    """Without jetson_clocks: every online CPU's and the GPU's min limit at its max."""
    pairs = []
    for policy in sysfs_glob(root, "/sys/devices/system/cpu/cpufreq/policy*"):
        pairs.append((try_int(policy + "/scaling_min_freq"), try_int(policy + "/scaling_max_freq")))
    if gpu.devfreq:
        pairs.append((try_int(gpu.devfreq + "/min_freq"), try_int(gpu.devfreq + "/max_freq")))
    pairs = [(low, high) for low, high in pairs if low is not None and high is not None]
    return all(low == high for low, high in pairs) if pairs else None


def nvmap_memory_mb(root: str, pid: int) -> Tuple[Optional[float], str]:
    """The process's nvmap (GPU-visible unified) memory from debugfs's client list."""
    path = sysfs_path(root, NVMAP_CLIENTS)
    try:
        with open(path, encoding="utf-8", errors="replace") as listing:
            text = listing.read()
    except OSError as exc:
        return None, "%s not readable (%s; debugfs needs root)" % (NVMAP_CLIENTS, exc.strerror)
    total_kb: float = 0
    for line in text.splitlines():
        found = re.match(r"\s*\S+\s+\S+\s+(\d+)\s+(\d+)([KMG]?)\s*$", line)
        if found and int(found.group(1)) == pid:
            scale = {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024}[found.group(3)]
            total_kb += int(found.group(2)) * scale
    return round(total_kb / 1024, 1), ""


def jetson_facts(root: str, pid: int) -> Optional[Dict[str, Any]]:
    """The Jetson facts, None on a device that is no Jetson (no release file, no Tegra GPU)."""
    release, release_why = read_release(root)
    gpu = TegraGpu(root)
    if release is None and not gpu.found:
        return None
    unavailable: Dict[str, str] = {}
    facts: Dict[str, Any] = {"l4t": release, "gpu": gpu.facts() if gpu.found else None}
    if release is None:
        unavailable["l4t"] = release_why
    facts["jetpack"], why = jetpack_version(root)
    if facts["jetpack"] is None:
        unavailable["jetpack"] = why or "no nvidia-jetpack package installed"
    text, why = run_tool(["nvpmodel", "-q"])
    facts["power_mode"], facts["power_mode_id"] = parse_nvpmodel(text or "")
    if facts["power_mode"] is None:
        unavailable["power_mode"] = why or "nvpmodel -q printed no 'NV Power Mode' line"
    text, why = run_tool(["jetson_clocks", "--show"])
    engines = parse_clocks(text or "")
    facts["clocks"] = engines or None
    facts["clocks_locked"] = clocks_locked(engines)
    facts["clocks_source"] = "jetson_clocks --show"
    if facts["clocks_locked"] is None:
        facts["clocks_locked"] = sysfs_clocks_locked(root, gpu)
        facts["clocks_source"] = "cpufreq and devfreq limits (%s)" % (why or "no engines")
    facts["gpu_memory_mb"], why = nvmap_memory_mb(root, pid)
    if facts["gpu_memory_mb"] is None:
        unavailable["gpu_memory_mb"] = why
    facts["unavailable"] = unavailable
    return facts
