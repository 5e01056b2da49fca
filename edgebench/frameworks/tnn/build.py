"""TNN's static library for edgebench-native, from a TNN source archive (named by commit)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.builds import CMAKE_HOOKS
from edgebench.builds.cmake_flags import unity_flags
from edgebench.builds.gpu_builds import ANY_OPENCL_DEVICE, gpu_apis
from edgebench.builds.recipe import UNKNOWN, LibraryRecipe
from edgebench.builds.targets import Target

if TYPE_CHECKING:
    from edgebench.builds.sources import Source

#: The macros the runner compiles with too (LibraryRecipe.runner_defines): they change headers.
#: FORWARD_CALLBACK_ENABLE compiles in Instance::ForwardWithCallback, the per-layer hook the
#: runner's op profile uses; it costs nothing when not called.
RUNNER_DEFINES = ("FORWARD_CALLBACK_ENABLE",)


def tnn_version(root: Path) -> str:
    """``MAJOR.MINOR.PATCH.BUILD`` as TNN's CMakeLists.txt sets TNN_*_VERSION, else "unknown".
    TNN has not changed it in years, so the build key also takes the archive's sha256."""
    cmake = root / "CMakeLists.txt"
    text = cmake.read_text(errors="replace") if cmake.is_file() else ""
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH", "BUILD"):
        found = re.search(rf"^\s*set\s*\(\s*TNN_{name}_VERSION\s+(\d+)\s*\)", text, re.M)
        if not found:
            return UNKNOWN
        parts.append(found.group(1))
    return ".".join(parts)


def tnn_gpu_flags(target: Target, gpu_devices: str) -> list[str]:
    """TNN's OpenCL device where GPU_APIS has it (nothing elsewhere), which loads
    ``libOpenCL.so`` with dlopen; with ``gpu_devices`` "any" it also takes a CPU-type device;
    both in ``cmake/tnn_gpu.cmake``."""
    if "opencl" not in gpu_apis("tnn", target):
        return []
    flags = [
        "-DTNN_OPENCL_ENABLE=ON",
        f"-DCMAKE_PROJECT_TNN_INCLUDE_BEFORE={CMAKE_HOOKS / 'tnn_gpu.cmake'}",
    ]
    return [*flags, ANY_OPENCL_DEVICE] if gpu_devices == "any" else flags


def tnn_flags(source: Source, target: Target, lean: bool, gpu_devices: str) -> list[str]:
    """TNN as a static library with the CPU devices only: X86 (and the NAIVE device its missing
    layers fall back to) or ARM with its fp16 kernels, plus its GPU device where GPU_APIS has
    it. A unity build cuts TNN's build from about 20 minutes to about 2 on two cores."""
    devices = (
        ["-DTNN_ARM_ENABLE=ON", "-DTNN_ARM82_ENABLE=ON"]
        if target.machine == "aarch64"
        else ["-DTNN_X86_ENABLE=ON"]
    )
    return [
        "-DTNN_CPU_ENABLE=ON",
        *devices,
        "-DTNN_BUILD_SHARED=OFF",
        "-DTNN_OPENMP_ENABLE=ON",
        "-DTNN_TEST_ENABLE=OFF",
        "-DTNN_UNIT_TEST_ENABLE=OFF",
        "-DTNN_CONVERTER_ENABLE=OFF",
        "-DTNN_BENCHMARK_MODE=OFF",  # ON would fill every model with random weights
        "-DCMAKE_CXX_FLAGS=" + " ".join(f"-D{name}" for name in RUNNER_DEFINES),
        *unity_flags("TNN", "tnn_unity.cmake"),
        *tnn_gpu_flags(target, gpu_devices),
    ]


BUILD = LibraryRecipe(
    include="include",
    lib="lib/libTNN.a",
    whole_archive=True,
    core_minutes=(3, 8),
    project="TNN",
    page="github.com/Tencent/TNN",
    read_version=tnn_version,
    cmake_flags=tnn_flags,
    target_without_install="TNN",
    runner_defines=RUNNER_DEFINES,
    source_includes=("source",),
    archives_name_commits=True,
    runner_backend=("tnn.cpp",),
)
