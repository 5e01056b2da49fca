"""MNN's own LLM benchmark tool, ``llm_bench`` (transformers/llm/engine/tools/llm_bench.cpp of
MNN's source), compiled against the very ``libMNN.a`` a target's current edgebench-native links
(its manifest names it: the library built with MNN's LLM engine, edgebench/frameworks/mnn/
build.py), so the tool and edgebench's mnn-llm cells run one library::

    <root>/tools/<target>/llm_bench-<key>/llm_bench   the tool (written last)
    <root>/tools/<target>/llm_bench-<key>/build.log   the compiler command and its output

MNN's own CMake builds it from llm_bench.cpp and tools/cpp/Profiler.cpp (its operator profile)
with the LLM engine's include folder; the same two files are compiled here with MNN's include
list and the library's link line, for any target the runner is built for (x86_64 and aarch64
Linux: a static binary, as the runner is). The key covers the two files' bytes, the library's
folder, the compiler and the command.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edgebench.builds import BuildError, native_root
from edgebench.builds.compilers import Compiler, driver_link_flags, find_compiler
from edgebench.builds.libraries import Library
from edgebench.builds.logged import compile_into
from edgebench.builds.native_runner import find_runner
from edgebench.builds.sources import Source, find_source
from edgebench.builds.targets import Target
from edgebench.paths import exclusive_lock

TOOL = "llm_bench"
#: What builds it: the runner first (`edgebench runners build --framework mnn-llm`), then this.
BUILD_COMMAND = "python benchmarks/fidelity_tools.py --frameworks mnn-llm"
COMPILE_TIMEOUT_S = 1200.0
#: MNN's own include list (its top CMakeLists.txt's MNN_INCLUDES), for the internal headers
#: MNN's tools use (core/MNNFileUtils.h, core/Macro.h, rapidjson), under the source's root.
MNN_INCLUDES = (
    "include",
    "source",
    "express",
    "tools",
    "tools/cpp",
    "schema/current",
    "3rd_party",
    "3rd_party/flatbuffers/include",
    "3rd_party/half",
)
#: The LLM engine's public headers (llm/llm.hpp), as its CMakeLists.txt includes them.
LLM_INCLUDE = "transformers/llm/engine/include"
#: The tool's sources, as MNN's transformers/llm/engine/tools/CMakeLists.txt lists them.
SOURCES = ("transformers/llm/engine/tools/llm_bench.cpp", "tools/cpp/Profiler.cpp")


def runner_libraries(target: Target) -> dict[str, Library]:
    """framework -> the library the target's current edgebench-native links; BuildError in
    one line when no runner is built for the target."""
    runner = find_runner(target)
    if runner is None:
        raise BuildError(f"no edgebench-native for {target.name}: run `edgebench runners build`")
    return runner.linked_libraries()  # the manifest's, as find_runner read it


def mnn_llm_library(target: Target) -> Library:
    """The MNN library (with its LLM engine) the target's current runner links."""
    library = runner_libraries(target).get("mnn-llm")
    if library is None:
        raise BuildError(
            f"the edgebench-native for {target.name} links no MNN-LLM: run `edgebench runners "
            f"build --target {target.name} --framework mnn-llm` (MNN's source in the sources "
            "folder)"
        )
    return library


def library_source(library: Library) -> Source:
    """The MNN source ``library`` was built from (its archive, else the sources folder's, of
    the same version)."""
    origin = Path(library.origin)
    source = find_source("mnn", origin if origin.exists() else None)
    if source.version != library.version:
        raise BuildError(
            f"{TOOL}: the MNN source found is {source.version}, the runner's library "
            f"{library.version}: put MNN {library.version}'s source archive back in the "
            "sources folder"
        )
    return source


@dataclass(frozen=True)
class LlmBenchBuild:
    """One compile of llm_bench for a target, and where it goes."""

    argv: list[str]
    folder: Path

    @property
    def binary(self) -> Path:
        return self.folder / TOOL


def planned_build(target: Target, library: Library | None = None) -> LlmBenchBuild:
    """The compile of llm_bench for ``target`` against ``library`` (default: the runner's),
    with its key; BuildError in one line when the runner, the source or a compiler is
    missing."""
    library = library or mnn_llm_library(target)
    root = library_source(library).root
    sources = [root / name for name in SOURCES]
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise BuildError(f"{TOOL}: the MNN source at {root} has no {missing[0]}")
    compiler = find_compiler(target)
    includes = [library.include_dir, root / LLM_INCLUDE, *(root / name for name in MNN_INCLUDES)]
    argv = [str(compiler.cxx), "-std=c++17", "-O2", *library.compile_defines]
    argv += [f"-I{path}" for path in includes] + [str(path) for path in sources]
    argv += [*library.link_args, "-lpthread", *link_flags(library, compiler)]
    parts = {
        "sources": [hashlib.sha256(path.read_bytes()).hexdigest() for path in sources],
        "library": library.folder.name,
        "compiler": compiler.version,
        "argv": argv[1:],
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]
    return LlmBenchBuild(argv, native_root() / "tools" / target.name / f"{TOOL}-{key}")


def link_flags(library: Library, compiler: Compiler) -> list[str]:
    """The runner's: fully static, or glibc shared where the library loads a GPU driver."""
    return driver_link_flags(compiler) if library.gpu_apis else list(compiler.link_flags)


def built_llm_bench(target: Target) -> Path | None:
    """The target's llm_bench against its current runner's library when it is built already
    (BuildError when that runner or its source is missing)."""
    binary = planned_build(target).binary
    return binary if binary.is_file() else None


def build_llm_bench(
    target: Target,
    library: Library | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Path:
    """The llm_bench binary for ``target``: compiled now (a minute) unless this key's is there.
    BuildError in one line when something is missing or the compile fails."""
    plan = planned_build(target, library)
    folder, binary = plan.folder, plan.binary
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder.with_name(f"{folder.name}.lock")):
        if binary.is_file():
            return binary
        log_path = folder / "build.log"
        progress(f"compiling {TOOL} for {target.name} (log: {log_path})")
        compile_into(plan.argv, binary, log_path, COMPILE_TIMEOUT_S, TOOL)
    return binary
