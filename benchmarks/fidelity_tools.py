#!/usr/bin/env python3
"""Build the framework tools benchmarks/fidelity.py sets edgebench-native beside, against the very
static libraries this host's current edgebench-native links (its manifest names them), so the
native rows compare one library with itself:

  ncnn  benchncnn       benchmark/benchncnn.cpp of ncnn's release (the sdist leaves it out:
                        --benchncnn-source FILE)
  mnn   benchmark.out   benchmark/benchmark.cpp of MNN's release (the source archive leaves the
                        folder out: --mnn-benchmark-source FILE) with the archive's
                        tools/cpp/revertMNNModel.cpp, as MNN's benchmark/CMakeLists.txt builds it
  tnn   TNNTest         the archive's test/*.cc with its bundled gflags, as TNN_TEST_ENABLE builds
                        it, but linked to the runner's libTNN.a instead of a second TNN build
  mnn-llm llm_bench     the archive's transformers/llm/engine/tools/llm_bench.cpp, MNN's own LLM
                        benchmark (edgebench/builds/llm_bench.py): the framework-tools runner's
                        tool for mnn-llm cells, against the libMNN.a with the LLM engine in

Each lands in ``<cache>/native-runner/tools/<target>/<tool>-<key>/`` (the key covers the tool's
sources, the library folder and the compiler), where fidelity.py looks for the newest. A tool
whose library the runner does not link, or whose source is not given, is skipped with the reason.

``--dry-run`` builds nothing: it prints the library each tool would link and the tools already
built for the target. ``--target`` (default: this host's) builds for another target whose
edgebench-native is built (aarch64-linux: static binaries a phone or board runs).

Usage: python benchmarks/fidelity_tools.py [--benchncnn-source FILE]
           [--mnn-benchmark-source FILE] [--frameworks ncnn,mnn,tnn,mnn-llm] [--target T]
           [--dry-run]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from edgebench.builds import BuildError, native_root
from edgebench.builds.benchncnn import build_benchncnn
from edgebench.builds.compilers import find_compiler
from edgebench.builds.libraries import Library
from edgebench.builds.llm_bench import MNN_INCLUDES, build_llm_bench, link_flags, runner_libraries
from edgebench.builds.logged import first_error, run_logged
from edgebench.builds.native_runner import bin_dir
from edgebench.builds.sources import find_source
from edgebench.builds.targets import Target, host_target, parse_target

COMPILE_TIMEOUT_S = 1200.0
TOOLS = {"ncnn": "benchncnn", "mnn": "benchmark.out", "tnn": "TNNTest", "mnn-llm": "llm_bench"}


def tool_folder(target: Target, tool: str, parts: dict[str, object]) -> Path:
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]
    return native_root() / "tools" / target.name / f"{tool}-{key}"


def run_step(argv: list[str], log: Path, what: str) -> None:
    code, start = run_logged(argv, log, COMPILE_TIMEOUT_S)
    if code != 0:
        why = "timed out" if code is None else first_error(log, start) or f"exit {code}"
        raise BuildError(f"{what} failed ({why}); full log: {log}")


def mnn_benchmark(target: Target, library: Library, cpp: Path) -> Path:
    compiler = find_compiler(target)
    root = find_source("mnn", None).root
    sources = [cpp, root / "tools" / "cpp" / "revertMNNModel.cpp"]
    # MNN's own include list (its CMakeLists.txt), for the internal headers benchmark.cpp uses.
    includes = [library.include_dir, *(root / name for name in MNN_INCLUDES)]
    argv = [str(compiler.cxx), "-std=c++17", "-O2", *library.compile_defines]
    argv += [f"-I{path}" for path in includes] + [str(path) for path in sources]
    argv += [*library.link_args, "-lpthread", *link_flags(library, compiler)]
    parts = {"cpp": [hashlib.sha256(p.read_bytes()).hexdigest() for p in sources]}
    folder = tool_folder(
        target, "mnn-benchmark", {**parts, "lib": library.folder.name, "argv": argv}
    )
    binary = folder / "benchmark.out"
    if not binary.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".benchmark.{os.getpid()}.tmp"
        run_step([*argv, "-o", str(tmp)], folder / "build.log", "compiling MNN's benchmark.out")
        os.replace(tmp, binary)
    return binary


TNNTEST_CMAKE = """\
cmake_minimum_required(VERSION 3.10)
project(tnntest C CXX)
set(CMAKE_CXX_STANDARD 11)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(BUILD_SHARED_LIBS OFF)
add_subdirectory("{root}/third_party/gflags" gflags)
file(GLOB TEST_SRCS "{root}/test/*.cc")
add_executable(TNNTest ${{TEST_SRCS}})
target_compile_definitions(TNNTest PRIVATE {defines})
target_include_directories(TNNTest PRIVATE "{root}" "{root}/include" "{root}/source" "{include}")
target_link_libraries(TNNTest {link} gflags pthread dl)
"""


def tnntest(target: Target, library: Library) -> Path:
    compiler = find_compiler(target)
    root = find_source("tnn", None).root
    defines = " ".join(d.removeprefix("-D") for d in library.compile_defines if "VERSION" not in d)
    link = " ".join([*library.link_args, *link_flags(library, compiler)])
    text = TNNTEST_CMAKE.format(root=root, defines=defines, include=library.include_dir, link=link)
    sources = sorted((root / "test").glob("*.cc"))
    parts = {"cmake": text, "cc": [hashlib.sha256(p.read_bytes()).hexdigest() for p in sources]}
    folder = tool_folder(target, "tnntest", {**parts, "lib": library.folder.name})
    binary = folder / "TNNTest"
    if binary.is_file():
        return binary
    project, build = folder / "project", folder / "build"
    project.mkdir(parents=True, exist_ok=True)
    (project / "CMakeLists.txt").write_text(text)
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake is not installed (apt-get install cmake)")
    log = folder / "build.log"
    configure = [cmake, "-S", str(project), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"]
    configure += [f"-DCMAKE_C_COMPILER={compiler.cc}", f"-DCMAKE_CXX_COMPILER={compiler.cxx}"]
    run_step(configure, log, "configuring TNNTest")
    jobs = str(os.cpu_count() or 1)
    run_step(
        [cmake, "--build", str(build), "--target", "TNNTest", "-j", jobs], log, "building TNNTest"
    )
    shutil.copy2(build / "TNNTest", binary)
    return binary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchncnn-source", type=Path)
    parser.add_argument("--mnn-benchmark-source", type=Path)
    parser.add_argument("--frameworks", default="ncnn,mnn,tnn")
    parser.add_argument("--target", default=None, help="default: this host's")
    parser.add_argument("--dry-run", action="store_true", help="build nothing, say what is there")
    args = parser.parse_args()
    try:
        target = parse_target(args.target) if args.target else host_target()
        libraries = runner_libraries(target)
    except BuildError as exc:
        print(f"fidelity_tools: {exc}", file=sys.stderr)
        return 1
    print(f"edgebench-native for {target.name}: {bin_dir(target)}")
    builders: dict[str, Callable[[Library], Path]] = {
        "ncnn": lambda lib: build_benchncnn(target, cpp=args.benchncnn_source, library=lib),
        "mnn": lambda lib: mnn_benchmark(target, lib, given(args.mnn_benchmark_source, "mnn")),
        "tnn": lambda lib: tnntest(target, lib),
        "mnn-llm": lambda lib: build_llm_bench(target, lib),
    }
    failed = 0
    for framework in [name.strip() for name in args.frameworks.split(",") if name.strip()]:
        library = libraries.get(framework)
        if library is None:
            print(f"  {framework:5} skipped: the runner links no {framework} library")
            continue
        if args.dry_run:
            tool = TOOLS.get(framework, "?")
            have = sorted((native_root() / "tools" / target.name).glob(f"*/{tool}"))
            print(f"  {framework:5} links {library.folder.name}; {tool}: {len(have)} built")
            continue
        try:
            print(f"  {framework:5} {builders[framework](library)}  ({library.folder.name})")
        except (BuildError, KeyError) as exc:
            failed += 1
            print(f"  {framework:5} not built: {exc}")
    return 1 if failed else 0


def given(path: Path | None, framework: str) -> Path:
    if path is None or not path.is_file():
        raise BuildError(
            f"--mnn-benchmark-source: give benchmark/benchmark.cpp of {framework}'s release "
            f"({path or 'not given'})"
        )
    return path


if __name__ == "__main__":
    sys.exit(main())
