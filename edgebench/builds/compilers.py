"""Which C/C++ compiler builds for a target on this host, and what CMake and the linker need
to hear about it.

Linux targets link fully static (a static binary runs on any Linux, and on Android too);
Android targets use the NDK's clang and link libc++ and OpenMP statically.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from edgebench import process_group
from edgebench.builds import BuildError
from edgebench.builds.targets import Target, normalize_machine

log = logging.getLogger(__name__)

#: How every compiler compiles the runner. -ffp-contract=off: the runner's seeded inputs must be
#: bit-identical to numpy's, so no fused multiply-add may merge a multiply and an add.
RUNNER_CXXFLAGS = ("-std=c++17", "-O2", "-ffp-contract=off", "-fno-fast-math", "-Wall")
# -s: no symbol table; the binary is pushed to every device, and nothing reads its symbols.
LINUX_LINK_FLAGS = ("-static", "-fopenmp", "-pthread", "-s")
#: A Linux runner that loads a GPU driver at run time (ncnn's Vulkan loads libvulkan.so.1, which
#: loads the driver): glibc must be the shared one, since a static glibc's dlopen crashes inside
#: the Vulkan loader (docs/edgebench-native.md); the C++ and OpenMP runtimes stay static.
LINUX_DRIVER_LINK_FLAGS = ("-static-libstdc++", "-static-libgcc", "-pthread", "-s")
ANDROID_LINK_FLAGS = ("-static-libstdc++", "-fopenmp", "-static-openmp", "-pthread", "-s")

NDK_ENV = ("ANDROID_NDK_HOME", "ANDROID_NDK_ROOT")
NDK_API = 24
NDK_TOOLCHAIN_FILE = "build/cmake/android.toolchain.cmake"
NDK_BIN = "toolchains/llvm/prebuilt/linux-x86_64/bin"
NDK_CXX = f"{NDK_BIN}/aarch64-linux-android{NDK_API}-clang++"
NDK_CC = f"{NDK_BIN}/aarch64-linux-android{NDK_API}-clang"

AARCH64_MISSING = (
    "no aarch64 compiler: install Debian's cross compiler (apt-get install "
    "g++-aarch64-linux-gnu) or give --ndk PATH for an Android build"
)
X86_64_MISSING = "no x86_64 compiler: install g++ (apt-get install g++)"
VERSION_TIMEOUT_S = 30.0


@dataclass
class Compiler:
    kind: str  # "gcc" | "cross-gcc" | "ndk"
    cc: Path
    cxx: Path
    cmake_args: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)
    version: str = ""  # the first line of `cxx --version`

    @property
    def short(self) -> str:
        """``aarch64-linux-gnu-g++ 12.2.0``: the compiler's name and release."""
        return f"{self.cxx.name} {short_version(self.version)}".strip()


def short_version(line: str) -> str:
    """The release number in a ``--version`` line (gcc prints it last, clang after
    ``version``), else the line itself."""
    found = re.search(r"\bversion\s+(\d+(?:\.\d+)+)", line)
    if found:
        return found.group(1)
    last = line.split()[-1:] or [""]
    return last[0] if re.fullmatch(r"\d+(?:\.\d+)+", last[0]) else line


def ask_compiler(cxx: Path, argument: str) -> subprocess.CompletedProcess[str]:
    """``cxx argument``, run for what it prints; BuildError when it does not run."""
    return ask_tool([str(cxx), argument])


def ask_tool(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A toolchain program run for what it prints; BuildError when it does not run."""
    try:
        return process_group.run(
            argv,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{argv[0]} does not run: {exc}") from None


def compiler_version(cxx: Path) -> str:
    proc = ask_compiler(cxx, "--version")
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise BuildError(f"{cxx} --version failed (exit {proc.returncode})")
    return lines[0]


def find_compiler(target: Target, ndk: Path | None = None) -> Compiler:
    """The compiler that builds for ``target`` here; BuildError naming the package or option
    that provides one when there is none."""
    if target.android:
        return _ndk_compiler(target, ndk)
    host = normalize_machine(platform.machine())
    pairs: list[tuple[str, str, str]] = []  # (kind, cc, cxx), best first
    if host == target.machine:
        pairs.append(("gcc", "gcc", "g++"))
    triple = f"{target.machine}-linux-gnu"
    pairs.append(("cross-gcc", f"{triple}-gcc", f"{triple}-g++"))
    for kind, cc_name, cxx_name in pairs:
        cc, cxx = shutil.which(cc_name), shutil.which(cxx_name)
        if cc and cxx:
            return _linux_compiler(kind, Path(cc), Path(cxx), target)
    raise BuildError(AARCH64_MISSING if target.machine == "aarch64" else X86_64_MISSING)


def _linux_compiler(kind: str, cc: Path, cxx: Path, target: Target) -> Compiler:
    args = []
    if kind == "cross-gcc":
        args += ["-DCMAKE_SYSTEM_NAME=Linux", f"-DCMAKE_SYSTEM_PROCESSOR={target.machine}"]
    args += [f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}"]
    compiler = Compiler(kind, cc, cxx, args, list(LINUX_LINK_FLAGS), compiler_version(cxx))
    log.info("%s: %s (%s)", target.name, compiler.short, cxx)
    return compiler


def driver_link_flags(compiler: Compiler) -> list[str]:
    """The link flags of a runner that loads a GPU driver at run time: ``compiler``'s own on
    Android (bionic is always shared), else glibc shared and the rest static (libgomp.a named
    by path, since ``-fopenmp`` would link libgomp.so)."""
    if compiler.kind == "ndk":
        return list(compiler.link_flags)
    gomp = static_library(compiler, "libgomp.a")
    return [*LINUX_DRIVER_LINK_FLAGS, str(gomp), "-ldl"]


def static_library(compiler: Compiler, name: str) -> Path:
    """Where ``compiler`` finds the static library ``name``; BuildError when it has none."""
    proc = ask_compiler(compiler.cxx, f"-print-file-name={name}")
    path = Path(proc.stdout.strip())
    if proc.returncode != 0 or not path.is_absolute() or not path.is_file():
        raise BuildError(f"{compiler.short} has no {name}: install its gcc's development files")
    return path


def find_ndk(ndk: Path | None = None) -> Path:
    """The NDK given, else $ANDROID_NDK_HOME, else $ANDROID_NDK_ROOT; BuildError naming the
    path checked and the fix when it is missing or lacks the aarch64 clang."""
    origin = "--ndk"
    if ndk is None:
        for var in NDK_ENV:
            if os.environ.get(var):
                ndk, origin = Path(os.environ[var]), f"${var}"
                break
    if ndk is None:
        raise BuildError(
            "no Android NDK for aarch64-android: give --ndk PATH or set ANDROID_NDK_HOME "
            "(an NDK r23 or newer, unpacked)"
        )
    for needed in (NDK_TOOLCHAIN_FILE, NDK_CXX):
        if not (ndk / needed).is_file():
            raise BuildError(
                f"the Android NDK at {ndk} (from {origin}) has no {needed}: give --ndk PATH "
                "or set ANDROID_NDK_HOME to an unpacked NDK (r23 or newer, linux-x86_64)"
            )
    return ndk


def _ndk_compiler(target: Target, ndk: Path | None) -> Compiler:
    root = find_ndk(ndk).resolve()
    cc, cxx = root / NDK_CC, root / NDK_CXX
    args = [
        f"-DCMAKE_TOOLCHAIN_FILE={root / NDK_TOOLCHAIN_FILE}",
        "-DANDROID_ABI=arm64-v8a",
        f"-DANDROID_PLATFORM=android-{NDK_API}",
    ]
    compiler = Compiler("ndk", cc, cxx, args, list(ANDROID_LINK_FLAGS), compiler_version(cxx))
    log.info("%s: %s (%s)", target.name, compiler.short, cxx)
    return compiler
