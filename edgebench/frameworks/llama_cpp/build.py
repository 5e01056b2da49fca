"""llama.cpp's static libraries (libllama and ggml's, CPU only) for edgebench-native, from the
llama.cpp that llama-cpp-python's pinned sdist vendors (``vendor/llama.cpp``), the same source
the Python runner's llama.cpp and llama-bench are built from.

No common library, tools, examples, server or tests, no OpenSSL, no BLAS, OpenMP as the Python
runner's build. ``GGML_NATIVE`` is always off (a cross build must not tune to this host): with
``--cpu-features all`` the library runs on any device of the architecture (x86_64: SSE2 only;
aarch64: the compiler's ARMv8-A baseline); ``lean`` compiles in the usual devices' instruction
sets (x86_64: this host's SSE4.2/AVX/AVX2/BMI2/FMA/F16C; aarch64: ARMv8.2-A with dot product and
fp16).
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.builds.cmake_flags import host_cpu_flags
from edgebench.builds.recipe import UNKNOWN, LibraryRecipe
from edgebench.builds.targets import Target

if TYPE_CHECKING:
    from edgebench.builds.sources import Source

#: Where llama-cpp-python's sdist keeps llama.cpp.
VENDORED = "vendor/llama.cpp"
#: ggml's x86 options by the /proc/cpuinfo flag each needs.
X86_OPTIONS = {
    "GGML_SSE42": "sse4_2",
    "GGML_AVX": "avx",
    "GGML_AVX2": "avx2",
    "GGML_BMI2": "bmi2",
    "GGML_FMA": "fma",
    "GGML_F16C": "f16c",
}
ARM_LEAN_ARCH = "armv8.2-a+dotprod+fp16"


def llama_cpp_version(root: Path) -> str:
    """The version of the llama-cpp-python sdist that vendors this tree (what the Python
    runner's llama.cpp reports), from its PKG-INFO; llama.cpp's own tree states none."""
    for pkg_info in (root / "PKG-INFO", root.parent.parent / "PKG-INFO"):
        if pkg_info.is_file():
            for line in pkg_info.read_text(errors="replace").splitlines():
                if line.startswith("Version:") and line.split(":", 1)[1].strip():
                    return line.split(":", 1)[1].strip()
    return UNKNOWN


def cpu_flags(target: Target, lean: bool) -> list[str]:
    if target.machine == "aarch64":
        return [f"-DGGML_CPU_ARM_ARCH={ARM_LEAN_ARCH}"] if lean else []
    have = host_cpu_flags() if lean and platform.machine() in ("x86_64", "AMD64") else frozenset()
    return [f"-D{name}={'ON' if flag in have else 'OFF'}" for name, flag in X86_OPTIONS.items()]


def llama_cpp_flags(source: Source, target: Target, lean: bool, gpu_devices: str) -> list[str]:
    return [
        "-DBUILD_SHARED_LIBS=OFF",
        "-DLLAMA_BUILD_COMMON=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_TOOLS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_SERVER=OFF",
        "-DLLAMA_BUILD_APP=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DGGML_NATIVE=OFF",
        "-DGGML_BLAS=OFF",
        "-DGGML_OPENMP=ON",
        "-DGGML_CCACHE=OFF",
        *cpu_flags(target, lean),
    ]


def sdist_archive() -> Path | None:
    from edgebench.builds import sources

    archive = sources.sources_dir() / sources.LLAMA_CPP_SDIST.file_name
    return archive if archive.is_file() else None


def missing_llama_cpp_source() -> str:
    from edgebench.builds import sources

    pin = sources.LLAMA_CPP_SDIST
    return (
        f"no llama.cpp source: `{sources.FETCH_COMMAND}` has pip download {pin.file_name} "
        f"(llama-cpp-python {pin.version}, which vendors llama.cpp) into "
        f"{sources.sources_dir()}/; or pass --source llama.cpp=PATH (a llama.cpp checkout)"
    )


BUILD = LibraryRecipe(
    include="include",
    lib="lib/libllama.a",
    whole_archive=False,
    core_minutes=(15, 30),
    project="llama.cpp",
    page="github.com/ggml-org/llama.cpp",
    read_version=llama_cpp_version,
    cmake_flags=llama_cpp_flags,
    missing_source=missing_llama_cpp_source,
    find_archive=sdist_archive,
    source_subfolder=VENDORED,
    runner_backend=("llama_cpp.cpp",),
)
