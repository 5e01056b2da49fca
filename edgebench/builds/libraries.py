"""Each framework's static library, built with CMake once per (framework, version, target,
flags) into ``native_root()/libs/<fw>-<version>-<target>-<hash10>/``::

    build/       CMake's build tree (kept: an interrupted build says so, and the next resumes)
    install/     include/ and lib/ as the framework installs them
    build.log    every command and all of its output
    done.json    written last (atomically): present means the library is usable

``<folder>.lock`` beside the folder serialises builds of one library across processes: a second
process waits, then finds done.json.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from edgebench.builds import CMAKE_HOOKS, BuildError, native_root
from edgebench.builds.compilers import Compiler
from edgebench.builds.gpu_builds import (
    ANY_OPENCL_DEVICE,
    GPU_DEVICES,
    gpu_apis,
    rename_opencl_api,
)
from edgebench.builds.logged import first_error, run_logged
from edgebench.builds.recipe import LibraryRecipe, library_recipes
from edgebench.builds.sources import Source
from edgebench.builds.targets import TARGETS, Target
from edgebench.paths import exclusive_lock, write_json_atomically

log = logging.getLogger(__name__)

SCHEMA = "edgebench.native-lib/1"
#: Bump when a recipe changes in a way its flags do not show: every library is rebuilt.
RECIPE = 1
BUILD_TIMEOUT_S = 3600.0
CONFIGURE_TIMEOUT_S = 600.0
DONE_FILE = "done.json"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Library:
    framework: str
    version: str
    target: str
    folder: Path
    include_dir: Path
    lib: Path
    whole_archive: bool
    seconds: float  # how long its build took
    origin: str
    #: The other static libraries the framework installed beside its own, which it needs
    #: (ncnn with Vulkan: its bundled glslang's).
    companions: tuple[Path, ...] = ()
    #: The accelerator APIs the library was built with (GPU_APIS), and which devices they take
    #: (GPU_DEVICES).
    gpu_apis: tuple[str, ...] = ()
    gpu_devices: str = "hardware"

    @property
    def compile_defines(self) -> list[str]:
        """``-D`` flags the runner compiles with for this library: the macros its headers need,
        ``EB_<FW>_VERSION``, for a framework whose library cannot say its own version, and
        ``EB_<FW>_<API>`` for each GPU API it has (``EB_<FW>_ANY_GPU_DEVICE`` where they take
        any device type)."""
        recipe = library_recipes()[self.framework]
        name = re.sub(r"\W", "_", self.framework.upper())  # llama.cpp: LLAMA_CPP
        defines = [f"-D{define}" for define in recipe.runner_defines]
        defines += [f"-DEB_{name}_{api.upper()}" for api in self.gpu_apis]
        if self.gpu_apis and self.gpu_devices == "any":
            defines.append(f"-DEB_{name}_ANY_GPU_DEVICE")
        return [*defines, f'-DEB_{name}_VERSION="{self.version}"']

    @property
    def link_args(self) -> list[str]:
        own = (
            ["-Wl,--whole-archive", str(self.lib), "-Wl,--no-whole-archive"]
            if self.whole_archive
            else [str(self.lib)]
        )
        if not self.companions:
            return own
        # A group: glslang's libraries refer to one another in a circle.
        return [*own, "-Wl,--start-group", *map(str, self.companions), "-Wl,--end-group"]


#: What a build compiles in: ``all`` the instruction-set variants the framework picks from at run
#: time (a binary for any device of the target's architecture), or ``lean`` only the ones the
#: usual devices run (x86_64: this host's AVX2/FMA where it has them; aarch64: ARMv8.2-A with
#: fp16 and dot product, as every phone core since 2018): several times faster to build.
CPU_FEATURES = ("all", "lean")


def framework_flags(
    source: Source, target: Target, features: str = "all", gpu_devices: str = "hardware"
) -> list[str]:
    """The framework's own CMake options: static, no tools, tests or Python, the GPU APIs of
    GPU_APIS; with ``features`` "lean", only the instruction sets of the usual devices (see
    CPU_FEATURES); ``gpu_devices`` as GPU_DEVICES says."""
    if features not in CPU_FEATURES:
        raise BuildError(
            f"unknown CPU features {features!r}: choose one of {', '.join(CPU_FEATURES)}"
        )
    if gpu_devices not in GPU_DEVICES:
        raise BuildError(
            f"unknown GPU devices {gpu_devices!r}: choose one of {', '.join(GPU_DEVICES)}"
        )
    recipe = library_recipes().get(source.framework)
    if recipe is None:
        known = ", ".join(library_recipes())
        raise BuildError(f"no build recipe for {source.framework}: choose one of {known}")
    return recipe.cmake_flags(source, target, features == "lean", gpu_devices)


def key_flag(flag: str) -> str:
    """A flag as the cache key sees it: a hook file of ours by its content, not its path (so
    two checkouts of edgebench share builds, and an edited hook rebuilds)."""
    name, _, value = flag.partition("=")
    path = Path(value)
    if value and path.is_relative_to(CMAKE_HOOKS) and path.is_file():
        return f"{name}=<{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()[:16]}>"
    return flag


def library_key(
    source: Source,
    target: Target,
    compiler: Compiler,
    features: str = "all",
    gpu_devices: str = "hardware",
) -> str:
    """Ten hex digits that change with anything that changes the library's bytes: the source's
    own bytes (an archive's sha256), the target, the compiler and the flags."""
    parts: dict[str, object] = {
        "recipe": RECIPE,
        "framework": source.framework,
        "version": source.version,
        "source": source.digest or str(source.origin),
        "target": target.name,
        "compiler": [compiler.kind, compiler.version, *compiler.cmake_args],
        "flags": [
            key_flag(flag) for flag in framework_flags(source, target, features, gpu_devices)
        ],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]


def library_folder(
    source: Source,
    target: Target,
    compiler: Compiler,
    features: str = "all",
    gpu_devices: str = "hardware",
) -> Path:
    key = library_key(source, target, compiler, features, gpu_devices)
    name = f"{source.framework}-{source.version}-{target.name}-{key}"
    return native_root() / "libs" / name


def read_library(folder: Path) -> Library | None:
    """The library built in ``folder``, or None when its build did not finish."""
    try:
        done = json.loads((folder / DONE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(done, dict) or done.get("schema") != SCHEMA:
        return None
    recipe = library_recipes().get(str(done.get("framework")))
    if recipe is None or not (folder / "install" / recipe.lib).is_file():
        return None
    lib = folder / "install" / recipe.lib
    framework, target = str(done["framework"]), str(done.get("target"))
    configure = done.get("configure") or []
    return Library(
        framework=framework,
        version=str(done.get("version")),
        target=target,
        folder=folder,
        include_dir=folder / "install" / recipe.include,
        lib=lib,
        whole_archive=recipe.whole_archive,
        seconds=float(done.get("build_seconds") or 0.0),
        origin=str(done.get("origin")),
        companions=tuple(sorted(p for p in lib.parent.glob("*.a") if p != lib)),
        # The folder's key covers the flags GPU_APIS sets, so the table says what it was built with.
        gpu_apis=gpu_apis(framework, TARGETS[target]) if target in TARGETS else (),
        gpu_devices="any" if ANY_OPENCL_DEVICE in configure else "hardware",
    )


def build_library(
    source: Source,
    target: Target,
    compiler: Compiler,
    jobs: int | None = None,
    progress: Progress | None = None,
    timeout: float = BUILD_TIMEOUT_S,
    features: str = "all",
    gpu_devices: str = "hardware",
) -> Library:
    """The framework's static library for ``target``: built now unless already built."""
    say = progress or (lambda _line: None)
    folder = library_folder(source, target, compiler, features, gpu_devices)
    what = f"{source.framework} {source.version} for {target.name}"
    built = read_library(folder)
    if built is not None:
        say(f"{what}: already built ({folder})")
        return built
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError(f"cannot build {what}: cmake is not installed (apt-get install cmake)")
    jobs = max(1, jobs or os.cpu_count() or 1)
    with exclusive_lock(folder.with_name(f"{folder.name}.lock")):
        built = read_library(folder)  # another process may have built it while we waited
        if built is not None:
            say(f"{what}: built by another edgebench meanwhile ({folder})")
            return built
        build_dir, install_dir = folder / "build", folder / "install"
        log_path = folder / "build.log"
        folder.mkdir(parents=True, exist_ok=True)
        _forget_other_source(build_dir, source.root)
        if build_dir.is_dir():
            say(f"{what}: resuming the unfinished build in {folder}")
        shutil.rmtree(install_dir, ignore_errors=True)
        minutes = library_recipes()[source.framework].core_minutes
        low, high = (max(1, round(m / jobs)) for m in minutes)
        say(
            f"building {what} with {compiler.short} (about {low}-{high} min on {jobs} "
            f"core{'s' if jobs > 1 else ''}; log: {log_path})"
        )
        started = time.monotonic()
        configure = [
            cmake,
            "-S",
            str(source.root),
            "-B",
            str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_INSTALL_PREFIX={install_dir}",
            "-DCMAKE_INSTALL_LIBDIR=lib",
            *compiler.cmake_args,
            *framework_flags(source, target, features, gpu_devices),
        ]
        log.debug("%s: %s", what, " ".join(configure))
        recipe = library_recipes()[source.framework]
        cmake_target = recipe.target_without_install or "install"
        build = [cmake, "--build", str(build_dir), "-j", str(jobs), "--target", cmake_target]
        try:
            _run_step(what, "configure", configure, log_path, min(timeout, CONFIGURE_TIMEOUT_S))
            _run_step(what, "build", build, log_path, timeout)
            if recipe.target_without_install:
                _install_by_hand(source, recipe, build_dir, install_dir)
            if source.framework == "tnn" and "opencl" in gpu_apis("tnn", target):
                rename_opencl_api(install_dir / recipe.lib, compiler, log_path)
        except KeyboardInterrupt:
            # cmake and the compilers are stopped by now; without done.json nothing uses the
            # tree, and keeping it lets the next build resume instead of starting over.
            say(
                f"{what}: interrupted; the unfinished build in {folder} is kept for the next "
                f"build to resume (or remove it: rm -rf {folder})"
            )
            raise
        if not (install_dir / recipe.lib).is_file():
            raise BuildError(
                f"{what}: cmake installed no {recipe.lib} under {install_dir}; full log: {log_path}"
            )
        seconds = round(time.monotonic() - started, 1)
        write_json_atomically(
            folder / DONE_FILE,
            {
                "schema": SCHEMA,
                "framework": source.framework,
                "version": source.version,
                "target": target.name,
                "compiler": {"kind": compiler.kind, "version": compiler.version},
                "configure": configure,
                "build_seconds": seconds,
                "gpu_apis": list(gpu_apis(source.framework, target)),
                "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "origin": str(source.origin),
            },
        )
        say(f"{what}: built in {seconds:.0f} s")
    built = read_library(folder)
    assert built is not None
    return built


def _install_by_hand(
    source: Source, recipe: LibraryRecipe, build_dir: Path, install_dir: Path
) -> None:
    """The library CMake built and the source's public headers, laid out as an install."""
    built = build_dir / Path(recipe.lib).name
    if not built.is_file():
        return  # the caller reports the missing library with the log's path
    (install_dir / recipe.lib).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, install_dir / recipe.lib)
    shutil.copytree(source.root / "include", install_dir / recipe.include, dirs_exist_ok=True)


def _forget_other_source(build_dir: Path, source_root: Path) -> None:
    """Remove a build tree CMake configured from another source folder (the same version
    from another archive or checkout): CMake refuses to reuse it."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return
    found = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M)
    if found is None or Path(found.group(1).strip()) != source_root:
        shutil.rmtree(build_dir, ignore_errors=True)


def _run_step(what: str, step: str, argv: list[str], log_path: Path, timeout: float) -> None:
    code, start = run_logged(argv, log_path, timeout)
    if code is None:
        raise BuildError(
            f"{what}: cmake {step} took over {timeout:.0f} s and was stopped; full log: {log_path}"
        )
    if code != 0:
        why = first_error(log_path, start) or f"exit {code}"
        raise BuildError(f"{what}: cmake {step} failed ({why}); full log: {log_path}")
