"""A synthetic Jetson: its sysfs and /etc files under a root folder (the runner reads them
through ``EDGEBENCH_SYSFS_ROOT``), and ``nvpmodel``, ``jetson_clocks`` and ``tegrastats``
executables that print what the real tools print, in the formats captured from boards
(JetPack 4, 5 and 6; public logs of Orin Nano, AGX Orin and Xavier NX).

The fake ``tegrastats`` is a real process: it prints a line every ``--interval`` ms until it
is terminated or has printed ``MAX_LINES``, so a source that starts it must stop it.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

#: /etc/nv_tegra_release of L4T 35.4.1 (JetPack 5.1.2) and 36.4.7 (JetPack 6.2.1).
RELEASE_JP5 = (
    "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
    "DATE: Tue Aug  1 19:57:35 UTC 2023\n"
    "# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
)
RELEASE_JP6 = (
    "# R36 (release), REVISION: 4.7, GCID: 42132812, BOARD: generic, EABI: aarch64, "
    "DATE: Thu Sep 18 22:54:44 UTC 2025\n"
)
#: dpkg's status stanza of the JetPack meta package, between two others.
DPKG_STATUS = (
    "Package: nvidia-l4t-core\nStatus: install ok installed\nVersion: 36.4.7-20250918154033\n\n"
    "Package: nvidia-jetpack\nStatus: install ok installed\nArchitecture: arm64\n"
    "Version: 6.2.1+b38\n\n"
    "Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.11.dfsg-2ubuntu9\n"
)
NVPMODEL = "NV Power Mode: {mode}\n{mode_id}\n"
#: ``nvpmodel -q --verbose`` prints its parse log around the mode.
NVPMODEL_VERBOSE = (
    "NVPM VERB: Config file: /etc/nvpmodel.conf\n"
    "NVPM VERB: parsing done for /etc/nvpmodel.conf\n"
    "NV Fan Mode:quiet\n"
    "NVPM VERB: Current mode: NV Power Mode: MODE_15W_6CORE\n"
    "2\n"
    "NVPM VERB: PARAM CPU_ONLINE: ARG CORE_0: PATH /sys/devices/system/cpu/cpu0/online: "
    "REAL_VAL: 1 CONF_VAL: 1\n"
)


def jetson_clocks_show(locked: bool, mode: str = "MAXN") -> str:
    """``jetson_clocks --show`` of an Orin Nano: locked (min = max everywhere, EMC overridden)
    or as nvpmodel leaves it."""
    cpu_min = 1510400 if locked else 115200
    gpu_min = 624750000 if locked else 306000000
    lines = [
        "SOC family:tegra234  Machine:NVIDIA Jetson Orin Nano Developer Kit",
        "Online CPUs: 0-5",
    ]
    for cpu in range(6):
        lines.append(
            f"cpu{cpu}: Online=1 Governor=schedutil MinFreq={cpu_min} MaxFreq=1510400 "
            "CurrentFreq=1510400 IdleStates: WFI=1 c7=1"
        )
    lines += [
        f"GPU MinFreq={gpu_min} MaxFreq=624750000 CurrentFreq=624750000",
        f"EMC MinFreq=204000000 MaxFreq=2133000000 CurrentFreq=2133000000 "
        f"FreqOverride={1 if locked else 0}",
        "FAN Dynamic Speed control=active hwmon2 :: pwm1=102",
        f"NV Power Mode: {mode}",
    ]
    return "\n".join(lines) + "\n"


#: tegrastats lines: Orin Nano JetPack 5, AGX Orin JetPack 5 and 6, Xavier NX JetPack 4.
TEGRASTATS_NANO_JP5 = (
    "RAM 1957/7620MB (lfb 1x4MB) SWAP 0/3810MB (cached 0MB) CPU [2%@1510,1%@1510,0%@1510,"
    "0%@1510,off,off] EMC_FREQ 0%@2133 GR3D_FREQ 45%@[624] VIC_FREQ 115 APE 174 CV0@-256C "
    "CPU@47.687C SOC2@46.031C SOC0@46.281C CV1@-256C GPU@-256C tj@47.687C SOC1@45.312C "
    "CV2@-256C VDD_IN 4763mW/4763mW VDD_CPU_GPU_CV 556mW/556mW VDD_SOC 1429mW/1429mW"
)
TEGRASTATS_AGX_JP5 = (
    "RAM 2448/30536MB (lfb 6572x4MB) SWAP 0/15268MB (cached 0MB) CPU [1%@729,0%@729,0%@729,"
    "0%@729] EMC_FREQ 0%@2133 GR3D_FREQ 12%@[305,306] VIC_FREQ 729 APE 174 CPU@47.5C "
    "Tboard@35C tj@47.5C VDD_GPU_SOC 2400mW/2400mW VDD_CPU_CV 400mW/400mW "
    "VIN_SYS_5V0 2523mW/2523mW NC 0mW/0mW VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW"
)
TEGRASTATS_AGX_JP6 = (
    "10-05-2026 21:03:35 RAM 5137/62841MB (lfb 2x4MB) SWAP 0/31420MB (cached 0MB) "
    "CPU [1%@729,25%@729,1%@729,1%@729] GR3D_FREQ 0% cpu@52.875C soc2@48.656C "
    "tj@52.875C soc1@49.031C VDD_GPU_SOC 3178mW/3178mW VDD_CPU_CV 794mW/794mW "
    "VIN_SYS_5V0 4543mW/4543mW"
)
TEGRASTATS_XAVIER_NX_JP4 = (
    "RAM 2766/7772MB (lfb 896x4MB) SWAP 0/3733MB (cached 0MB) CPU [21%@1190,19%@1190] "
    "EMC_FREQ 13%@2133 GR3D_FREQ 61% APE 150 MTS fg 0% bg 0% VDD_IN 5336/4970 "
    "VDD_CPU_GPU_CV 2617/2336 VDD_SOC 1478/1318 CV0@-256C GPU@49.2C"
)
#: The JetPack 6 spelling with spaces between the number and its unit.
TEGRASTATS_SPACED = "RAM 2158/7620MB GR3D_FREQ 7% VDD_IN 4395 mW/4401 mW VDD_SOC 1429 mW/1429 mW"

#: The fake tegrastats stops by itself after this many lines (every loop is bounded).
MAX_LINES = 10000

TEGRASTATS_SCRIPT = """#!{python}
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
interval = 1000
args = sys.argv[1:]
if "--interval" in args:
    interval = int(args[args.index("--interval") + 1])
line = {line!r}
for _ in range({max_lines}):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
    time.sleep(interval / 1000.0)
"""


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _printer(text: str) -> str:
    return f"#!{sys.executable}\nimport sys\nsys.stdout.write({text!r})\n"


def jetson_tools(
    bin_dir: Path,
    *,
    mode: str = "MAXN",
    mode_id: int = 0,
    locked: bool = True,
    tegrastats_line: str = TEGRASTATS_NANO_JP5,
) -> Path:
    """``nvpmodel``, ``jetson_clocks`` and ``tegrastats`` in ``bin_dir``, printing the real
    formats; put ``bin_dir`` first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    _executable(bin_dir / "nvpmodel", _printer(NVPMODEL.format(mode=mode, mode_id=mode_id)))
    _executable(bin_dir / "jetson_clocks", _printer(jetson_clocks_show(locked, mode)))
    script = TEGRASTATS_SCRIPT.format(
        python=sys.executable, line=tegrastats_line, max_lines=MAX_LINES
    )
    _executable(bin_dir / "tegrastats", script)
    return bin_dir


def write(root: Path, path: str, text: str) -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def jetson_tree(
    root: Path,
    *,
    release: str = RELEASE_JP6,
    gpu_hz: int = 624750000,
    gpu_min_hz: int = 306000000,
    load_permille: int = 450,
    cpu_locked: bool = False,
    nvmap_clients: str | None = None,
) -> Path:
    """An Orin Nano on JetPack 6 under ``root``: the release file, dpkg's JetPack entry, the
    GPU's devfreq node (``/sys/class/devfreq/17000000.gpu``, its ``device`` a link to
    ``/sys/devices/platform/bus@0/17000000.gpu`` where ``load`` is), two cpufreq policies,
    and nvmap's client list when given."""
    write(root, "/etc/nv_tegra_release", release)
    write(root, "/var/lib/dpkg/status", DPKG_STATUS)
    device = root / "sys/devices/platform/bus@0/17000000.gpu"
    write(root, "/sys/devices/platform/bus@0/17000000.gpu/load", f"{load_permille}\n")
    write(root, "/sys/devices/platform/bus@0/17000000.gpu/of_node/compatible", "nvidia,ga10b\0")
    devfreq = device / "devfreq/17000000.gpu"
    for name, value in (("cur_freq", gpu_hz), ("min_freq", gpu_min_hz), ("max_freq", gpu_hz)):
        write(root, str(devfreq / name).removeprefix(str(root)), f"{value}\n")
    (devfreq / "device").symlink_to(device)
    (root / "sys/class/devfreq").mkdir(parents=True, exist_ok=True)
    (root / "sys/class/devfreq/17000000.gpu").symlink_to(devfreq)
    for policy, cpus in ((0, "0-3"), (4, "4-5")):
        folder = f"/sys/devices/system/cpu/cpufreq/policy{policy}"
        write(root, f"{folder}/related_cpus", cpus + "\n")
        write(root, f"{folder}/scaling_min_freq", "1510400\n" if cpu_locked else "115200\n")
        write(root, f"{folder}/scaling_max_freq", "1510400\n")
    if nvmap_clients is not None:
        write(root, "/sys/kernel/debug/nvmap/iovmm/clients", nvmap_clients)
    return root


def nvmap_listing(pid: int) -> str:
    """nvmap's iovmm client list with ``pid`` holding two handles' worth of memory."""
    return (
        "CLIENT                        PROCESS      PID        SIZE\n"
        "user                          nvargus-daemon 812     10240K\n"
        f"user                          python3      {pid}      51200K\n"
        f"user                          python3      {pid}      2M\n"
        "total                                                63488K\n"
    )


def path_with(bin_dir: Path) -> str:
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
