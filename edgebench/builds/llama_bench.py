"""llama.cpp's own benchmark tool, ``llama-bench``, built from the llama.cpp that
llama-cpp-python's pinned sdist vendors, with the options the Python runner's llama.cpp was
built with, for benchmarks/llm_fidelity.py::

    <root>/tools/<target>/llama-bench-<key>/llama-bench   the tool (copied there last)
    <root>/tools/<target>/llama-bench-<key>/build/        the CMake tree (its shared libraries)
    <root>/tools/<target>/llama-bench-<key>/build.log     cmake's commands and output

The pip build installs no tools: llama-cpp-python's top CMakeLists.txt adds llama.cpp as a
subproject, where ``LLAMA_BUILD_TOOLS`` defaults to off. So the same top CMakeLists.txt is
configured here, as scikit-build-core does (Release, its forced settings: shared libraries,
the common library, no curl), with the documented ``CMAKE_ARGS`` of the llama-cpp extra
(runners/backends/llama_cpp_backend.py: ``-DLLAVA_BUILD=OFF -DGGML_NATIVE=ON -DGGML_BLAS=OFF``;
no CUDA, Vulkan or Metal, which are off by default) and only ``LLAMA_BUILD_TOOLS`` turned on;
then only the ``llama-bench`` target is built. The tool is built for this host only
(``GGML_NATIVE`` tunes it to this CPU). The key covers the sdist's sha256, the options and the
compiler.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edgebench.builds import BuildError, native_root
from edgebench.builds.compilers import Compiler, find_compiler
from edgebench.builds.logged import first_error, run_logged
from edgebench.builds.sources import (
    FETCH_COMMAND,
    LLAMA_CPP_SDIST,
    archive_stem,
    extract_archive,
    sources_dir,
)
from edgebench.builds.targets import host_target
from edgebench.converters.artifact_cache import file_sha256
from edgebench.paths import exclusive_lock

TOOL = "llama-bench"
#: The Python runner's llama.cpp build (the llama-cpp extra's CMAKE_ARGS) and scikit-build-core's
#: build type; LLAMA_BUILD_TOOLS is the one addition.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAVA_BUILD=OFF",
    "-DGGML_NATIVE=ON",
    "-DGGML_BLAS=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
)
BUILD_COMMAND = "python benchmarks/llm_fidelity.py --build-only"
CONFIGURE_TIMEOUT_S = 600.0
BUILD_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class LlamaBenchBuild:
    """What a build of llama-bench for this host takes, and where it goes."""

    archive: Path
    digest: str
    cmake: str
    compiler: Compiler
    options: list[str]
    folder: Path

    @property
    def binary(self) -> Path:
        return self.folder / TOOL


def planned_build() -> LlamaBenchBuild:
    """The build of llama-bench for this host with its key; BuildError in one line when the
    sdist, cmake or a compiler is missing."""
    archive = sources_dir() / LLAMA_CPP_SDIST.file_name
    if not archive.is_file():
        raise BuildError(
            f"cannot build {TOOL}: no {LLAMA_CPP_SDIST.file_name} in {sources_dir()}/ "
            f"(`{FETCH_COMMAND}` has pip download it)"
        )
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError(f"cannot build {TOOL}: cmake is not installed (apt-get install cmake)")
    compiler = find_compiler(host_target())
    digest = file_sha256(archive)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    options = [*CMAKE_OPTIONS, *generator, *compiler.cmake_args]
    parts = {"sdist": digest, "options": options, "compiler": compiler.version}
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]
    folder = native_root() / "tools" / host_target().name / f"{TOOL}-{key}"
    return LlamaBenchBuild(archive, digest, cmake, compiler, options, folder)


def built_llama_bench() -> Path | None:
    """This host's llama-bench of the current sdist and options when it is built already."""
    binary = planned_build().binary
    return binary if binary.is_file() else None


def build_llama_bench(
    progress: Callable[[str], None] = lambda line: None, jobs: int | None = None
) -> Path:
    """The llama-bench binary for this host: built now (minutes) unless this key's is there.
    BuildError in one line when the sdist, cmake or a compiler is missing, or the build fails."""
    plan = planned_build()
    folder, binary = plan.folder, plan.binary
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder.with_name(f"{folder.name}.lock")):
        if binary.is_file():
            return binary
        root = extract_archive(plan.archive, plan.digest) / archive_stem(plan.archive)
        build_dir, log_path = folder / "build", folder / "build.log"
        jobs = max(1, jobs or os.cpu_count() or 1)
        progress(
            f"building {TOOL} from {plan.archive.name} with {plan.compiler.short} (minutes; "
            f"log: {log_path})"
        )
        configure = [plan.cmake, "-S", str(root), "-B", str(build_dir), *plan.options]
        build = [plan.cmake, "--build", str(build_dir), "-j", str(jobs), "--target", TOOL]
        for step, argv, timeout in (
            ("configure", configure, CONFIGURE_TIMEOUT_S),
            ("build", build, BUILD_TIMEOUT_S),
        ):
            code, start = run_logged(argv, log_path, timeout)
            if code != 0:
                why = (
                    "timed out" if code is None else first_error(log_path, start) or f"exit {code}"
                )
                raise BuildError(f"{TOOL}: cmake {step} failed ({why}); full log: {log_path}")
        made = build_dir / "bin" / TOOL
        if not made.is_file():
            raise BuildError(f"{TOOL}: cmake built no {made}; full log: {log_path}")
        tmp = folder / f".{TOOL}.{os.getpid()}.tmp"
        shutil.copy2(made, tmp)
        os.replace(tmp, binary)
        progress(f"{TOOL} built: {binary}")
    return binary
