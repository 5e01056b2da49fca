"""The kit `gpu_first_light.py pack` makes on this host for a GPU machine with no network.

What the GPU machine lacks travels in one folder (``.gpu_kit`` at the repository root, ignored
by git), compressed with xz, since the working tree and the kit together must stay under the
64 MiB a device call carries:

    wheels.tar.xz        the unpacked wheels of edgebench (built from this tree), of ncnn, MNN
                         and pnnx (pinned to the versions edgebench-native and the ncnn
                         toolchain use) and of the transports' libraries, for the GPU
                         machine's Python; rezipped there and installed with pip --no-index
    native/bin/...       this host's edgebench-native build (ncnn and MNN with Vulkan), its
                         manifest and current.json, laid out as EDGEBENCH_NATIVE_DIR expects
    benchncnn.xz         ncnn's benchncnn, compiled against the same ncnn library (when its
                         source file was given)
    lib/libvulkan.so.1.xz  the Vulkan loader, used only where the machine has none
    kit.json             what is in the kit, and the versions

This module runs on the host only (it imports edgebench); the GPU side is in
gpu_first_light.py, which needs nothing but the standard library until it has installed the kit.
"""

from __future__ import annotations

import json
import lzma
import shutil
import subprocess
import sys
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CARRY_LIMIT_BYTES = 64 * 2**20
#: Libraries edgebench imports for every run (the transports) that a GPU image may lack.
TRANSPORT_WHEELS = (
    "paramiko",
    "bcrypt",
    "cryptography",
    "pynacl",
    "invoke",
    "cffi",
    "pycparser",
    "adbutils",
    "deprecation",
    "retry2",
    "decorator",
)
PLATFORMS = (
    *(f"manylinux_2_{n}_x86_64" for n in (17, 24, 26, 27, 28, 31, 34)),
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)


def xz_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as src, lzma.open(target, "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def vulkan_native_runner():
    """This host's edgebench-native build, which must have ncnn's and MNN's Vulkan in it."""
    from edgebench.builds.native_runner import MANIFEST, find_runner
    from edgebench.builds.targets import host_target

    built = find_runner(host_target())
    if built is None:
        raise SystemExit(
            "no edgebench-native build for this host: run "
            "`edgebench runners build --gpu-devices any` first"
        )
    manifest = json.loads((built.path.parent / MANIFEST).read_text())
    libraries = manifest.get("flags", {}).get("libraries", {})
    for framework, flag in (("ncnn", "-DNCNN_VULKAN=ON"), ("mnn", "-DMNN_VULKAN=ON")):
        if flag not in libraries.get(framework, []):
            raise SystemExit(
                f"the edgebench-native build {built.path} has no {framework} Vulkan: run "
                "`edgebench runners build --gpu-devices any` (Vulkan headers: libvulkan-dev)"
            )
    return built, manifest


def pnnx_requirement() -> str:
    from edgebench.converters.toolchain_specs import TOOLCHAINS

    (requirement,) = TOOLCHAINS["ncnn"].requirements
    return requirement


def download_wheels(requirements: list[str], python_version: str, folder: Path) -> None:
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
        *platforms, "--dest", str(folder), *requirements,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"pip download failed: {tail}")


def build_edgebench_wheel(folder: Path) -> None:
    """edgebench itself as a wheel, built here: the GPU machine installs without building."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir"]
    done = subprocess.run(
        [*command, str(folder), str(REPO)], capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"building the edgebench wheel failed: {tail}")


def pack_wheels(folder: Path, target: Path) -> list[str]:
    """Every wheel in ``folder`` unpacked into one tar.xz (xz packs them far smaller than the
    wheels' own zip does); the names of the wheels, which the GPU side zips up again."""
    names = sorted(w.name for w in folder.glob("*.whl"))
    unpacked = folder / "unpacked"
    for name in names:
        with zipfile.ZipFile(folder / name) as wheel:
            into = unpacked / name.removesuffix(".whl")
            wheel.extractall(into)
            for info in wheel.infolist():  # extractall drops the modes (pnnx is a program)
                if mode := (info.external_attr >> 16) & 0o777:
                    (into / info.filename).chmod(mode)
    subprocess.run(
        ["tar", "-C", str(unpacked), "-cJf", str(target), "."],
        check=True,
        env={"XZ_OPT": "-9 -T2", "PATH": "/usr/bin:/bin"},
    )
    return names


def vulkan_loader() -> Path | None:
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:  # no ldconfig on PATH: the kit goes without the loader
        return None
    for line in listing.splitlines():
        if line.strip().startswith("libvulkan.so.1 ") and "x86-64" in line:
            return Path(line.rsplit("=>", 1)[1].strip()).resolve()
    return None


def travelling_bytes() -> int:
    """The working tree a device call sends: tracked files and untracked ones git keeps."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    files = (REPO / name for name in listed.decode().split("\0") if name)
    return sum(f.stat().st_size for f in files if f.is_file())


def pack(
    kit: Path, python_version: str, benchncnn_source: Path | None, download: bool = True
) -> int:
    built, manifest = vulkan_native_runner()
    if kit.exists():
        shutil.rmtree(kit)
    kit.mkdir(parents=True)
    frameworks = manifest["frameworks"]
    key_dir = kit / "native" / "bin" / built.target.name / manifest["key"]
    xz_copy(built.path, key_dir / "edgebench-native.xz")
    shutil.copy2(built.path.parent / "manifest.json", key_dir / "manifest.json")
    (key_dir.parent / "current.json").write_text(json.dumps({"key": manifest["key"]}))
    print(f"edgebench-native {manifest['key']} ({built.describe()})")

    benchncnn = None
    if benchncnn_source is not None:
        from edgebench.builds.benchncnn import build_benchncnn
        from edgebench.builds.targets import host_target

        benchncnn = build_benchncnn(host_target(), benchncnn_source, progress=print)
        xz_copy(benchncnn, kit / "benchncnn.xz")
    else:
        print("benchncnn: left out (give --benchncnn-source, ncnn's benchmark/benchncnn.cpp)")

    requirements = [
        f"ncnn=={frameworks['ncnn']}",
        f"mnn=={frameworks['mnn']}",
        pnnx_requirement(),
        *TRANSPORT_WHEELS,
    ]
    wheels: list[str] = []
    if download:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"pip download (Python {python_version}): {' '.join(requirements)}")
            download_wheels(requirements, python_version, Path(scratch))
            build_edgebench_wheel(Path(scratch))
            wheels = pack_wheels(Path(scratch), kit / "wheels.tar.xz")
    else:
        print("wheels: left out (--no-download): `run` uses the environment it runs in")

    loader = vulkan_loader()
    if loader is not None:
        xz_copy(loader, kit / "lib" / "libvulkan.so.1.xz")
    (kit / "kit.json").write_text(
        json.dumps(
            {
                "made_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": python_version,
                "native_key": manifest["key"],
                "target": built.target.name,
                "frameworks": frameworks,
                "wheels": wheels,
                "benchncnn": benchncnn is not None,
                "vulkan_loader": loader is not None,
            },
            indent=1,
        )
    )
    kit_bytes = sum(f.stat().st_size for f in kit.rglob("*") if f.is_file())
    tree = travelling_bytes()
    total = kit_bytes + tree
    print(
        f"kit {kit}: {kit_bytes / 2**20:.1f} MiB; with the working tree "
        f"({tree / 2**20:.1f} MiB) {total / 2**20:.1f} MiB of the {CARRY_LIMIT_BYTES // 2**20} "
        "MiB a device call carries"
    )
    if total > CARRY_LIMIT_BYTES:
        print("too large to carry: leave out benchncnn or the transports' wheels")
        return 1
    relative = kit.resolve().relative_to(REPO) if kit.resolve().is_relative_to(REPO) else kit
    print(
        f"on the GPU machine, carrying {relative}: PYTHONUNBUFFERED=1 python3 "
        f'benchmarks/gpu_first_light.py run --kit {relative} --out "$OUT"  (about 8 minutes)'
    )
    return 0
