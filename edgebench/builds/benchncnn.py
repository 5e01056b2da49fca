"""ncnn's own benchmark tool, ``benchncnn``, compiled against the ncnn library edgebench-native
links (the same source, target and flags, so with Vulkan where that library has it), for the
benchmarks that set edgebench's figures beside the tool's::

    <root>/tools/<target>/benchncnn-<key>/benchncnn    the tool (written last)
    <root>/tools/<target>/benchncnn-<key>/build.log    the compiler command and its output

``benchncnn.cpp`` comes from the ncnn source's ``benchmark/`` folder (a release archive or a
checkout has it) or, since the sdist leaves that folder out, from a file the user gives: the
same release's ``benchmark/benchncnn.cpp``. The key covers that file's bytes, the library's
folder and the compiler.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from edgebench.builds import BuildError, native_root
from edgebench.builds.compilers import driver_link_flags, find_compiler
from edgebench.builds.libraries import Library, Progress, build_library
from edgebench.builds.logged import compile_into
from edgebench.builds.sources import PROJECT_PAGES, find_source
from edgebench.builds.targets import Target
from edgebench.paths import exclusive_lock

TOOL = "benchncnn"
COMPILE_TIMEOUT_S = 600.0
CXXFLAGS = ("-std=c++17", "-O2")


def benchncnn_source(source_root: Path, version: str, given: Path | None) -> Path:
    """``given``, else the source tree's ``benchmark/benchncnn.cpp``; BuildError naming where
    to get the file when neither exists."""
    if given is not None:
        if not given.is_file():
            raise BuildError(f"--benchncnn-source {given}: no such file")
        return given
    bundled = source_root / "benchmark" / "benchncnn.cpp"
    if bundled.is_file():
        return bundled
    raise BuildError(
        f"the ncnn {version} source at {source_root} has no benchmark/benchncnn.cpp (the sdist "
        f"leaves it out): give --benchncnn-source FILE, that file from ncnn's {version} release "
        f"({PROJECT_PAGES['ncnn']}, tag {version.rsplit('.', 1)[-1]})"
    )


def build_benchncnn(
    target: Target,
    cpp: Path | None = None,
    features: str = "lean",
    progress: Progress | None = None,
    ncnn_source: Path | None = None,
    library: Library | None = None,
) -> Path:
    """The benchncnn binary for ``target``: compiled now unless this key's is there. Against
    ``library`` when given (an edgebench-native's own), else ncnn's library (from
    ``ncnn_source``, else the sources folder's), built first when it is not yet (minutes)."""
    say = progress or (lambda _line: None)
    source = find_source("ncnn", ncnn_source)
    cpp = benchncnn_source(source.root, source.version, cpp)
    compiler = find_compiler(target)
    if library is None:
        library = build_library(source, target, compiler, progress=say, features=features)
    link_flags = driver_link_flags(compiler) if library.gpu_apis else list(compiler.link_flags)
    argv = [str(compiler.cxx), *CXXFLAGS, f"-I{library.include_dir}", str(cpp)]
    argv += [*library.link_args, *link_flags]
    parts = {
        "cpp": hashlib.sha256(cpp.read_bytes()).hexdigest(),
        "library": library.folder.name,
        "compiler": compiler.version,
        "argv": argv[1:],
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]
    folder = native_root() / "tools" / target.name / f"{TOOL}-{key}"
    binary = folder / TOOL
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder.with_name(f"{folder.name}.lock")):
        if binary.is_file():
            return binary
        say(f"compiling {TOOL} ({cpp}) against {library.folder.name}")
        compile_into(argv, binary, folder / "build.log", COMPILE_TIMEOUT_S, TOOL)
    return binary
