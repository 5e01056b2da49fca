"""ncnn's static library for edgebench-native, from the pinned sdist of the ``ncnn`` package
(it carries glslang and the Vulkan shaders)."""

from __future__ import annotations

import platform
import re
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.builds.cmake_flags import host_cpu_flags
from edgebench.builds.gpu_builds import gpu_apis
from edgebench.builds.recipe import UNKNOWN, LibraryRecipe
from edgebench.builds.targets import Target

if TYPE_CHECKING:
    from edgebench.builds.sources import Source


def ncnn_version(root: Path) -> str:
    """PKG-INFO's ``Version:`` (an sdist), else a literal NCNN_VERSION_STRING or NCNN_VERSION
    set in CMakeLists.txt (a checkout), else "unknown"."""
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        for line in pkg_info.read_text(errors="replace").splitlines():
            if line.startswith("Version:") and line.split(":", 1)[1].strip():
                return line.split(":", 1)[1].strip()
    cmake = root / "CMakeLists.txt"
    text = cmake.read_text(errors="replace") if cmake.is_file() else ""
    for name in ("NCNN_VERSION_STRING", "NCNN_VERSION"):
        found = re.search(rf'^\s*set\s*\(\s*{name}\s+"?(\d+(?:\.\d+)*)"?\s*\)', text, re.M)
        if found:
            value = found.group(1)
            return value if "." in value else f"1.0.{value}"
    return UNKNOWN


def ncnn_version_number(version: str) -> str | None:
    """The digits ncnn's CMake takes as NCNN_VERSION: ``1.0.20250428`` -> ``20250428``."""
    last = version.rsplit(".", 1)[-1]
    return last if last.isdigit() else None


def ncnn_vulkan_flags(target: Target) -> list[str]:
    """ncnn's Vulkan compute with NCNN_SIMPLEVK: ncnn loads libvulkan.so.1 itself at run time,
    so the binary starts (and runs CPU cells) on a machine without a Vulkan loader."""
    if "vulkan" not in gpu_apis("ncnn", target):
        return ["-DNCNN_VULKAN=OFF"]
    return ["-DNCNN_VULKAN=ON", "-DNCNN_SIMPLEVK=ON", "-DNCNN_SYSTEM_GLSLANG=OFF"]


def ncnn_lean_flags(target: Target) -> list[str]:
    """ncnn without its run-time CPU dispatch: one variant of every kernel."""
    if target.machine == "aarch64":
        on = ["NCNN_ARM82", "NCNN_ARM82DOT"]
        off = ["NCNN_ARM82FP16FML", "NCNN_ARM84BF16", "NCNN_ARM84I8MM", "NCNN_ARM86SVE"]
    else:
        have = host_cpu_flags() if platform.machine() in ("x86_64", "AMD64") else frozenset()
        wanted = {"NCNN_AVX": "avx", "NCNN_FMA": "fma", "NCNN_F16C": "f16c", "NCNN_AVX2": "avx2"}
        on = [name for name, flag in wanted.items() if flag in have]
        off = [name for name in wanted if name not in on] + [
            "NCNN_AVX512",
            "NCNN_AVXVNNI",
            "NCNN_XOP",
        ]
    return ["-DNCNN_RUNTIME_CPU=OFF", *(f"-D{n}=ON" for n in on), *(f"-D{n}=OFF" for n in off)]


def ncnn_flags(source: Source, target: Target, lean: bool, gpu_devices: str) -> list[str]:
    # Never ncnn's default NCNN_VERSION: it stamps the build date into the library.
    number = ncnn_version_number(source.version) or "0"
    return [
        *ncnn_vulkan_flags(target),
        "-DNCNN_BUILD_TOOLS=OFF",
        "-DNCNN_BUILD_EXAMPLES=OFF",
        "-DNCNN_BUILD_TESTS=OFF",
        "-DNCNN_BUILD_BENCHMARK=OFF",
        "-DNCNN_PYTHON=OFF",
        "-DNCNN_SHARED_LIB=OFF",
        "-DNCNN_OPENMP=ON",
        f"-DNCNN_VERSION={number}",
        *(ncnn_lean_flags(target) if lean else []),
    ]


def missing_ncnn_source() -> str:
    from edgebench.builds import sources

    return (
        f"no ncnn source: {sources.NCNN_SDIST_WHERE} (sha256 {sources.NCNN_SDIST_SHA256}), "
        f"into {sources.sources_dir()}/; or pass --source ncnn=FILE"
    )


BUILD = LibraryRecipe(
    include="include/ncnn",
    lib="lib/libncnn.a",
    whole_archive=False,
    core_minutes=(10, 20),
    project="ncnn",
    page="github.com/Tencent/ncnn",
    read_version=ncnn_version,
    cmake_flags=ncnn_flags,
    missing_source=missing_ncnn_source,
    runner_backend=("ncnn.cpp", "ncnn_param.cpp", "ncnn_vulkan.cpp"),
)
