"""The native runner binary: ``runners/native_runner/*.cpp`` plus each framework's files under
``backends/`` (its recipe's ``runner_backend``), compiled and linked in one compiler command
against the frameworks' static libraries (:mod:`edgebench.builds.libraries`)::

    <root>/bin/<target>/<key>/edgebench-native   the binary
    <root>/bin/<target>/<key>/manifest.json      what went in and its sha256 (written last)
    <root>/bin/<target>/<key>/build.log          the compiler command and its output
    <root>/bin/<target>/current.json             the newest key, so a lookup is one read

``key`` hashes the runner's source files, the library folders' names, the compiler's version
and the flags, so a change to any of them builds a new binary beside the old one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import edgebench.runners
from edgebench.builds import BuildError, native_root
from edgebench.builds.compilers import (
    RUNNER_CXXFLAGS,
    Compiler,
    driver_link_flags,
    find_compiler,
)
from edgebench.builds.libraries import (
    Library,
    Progress,
    build_library,
    framework_flags,
    key_flag,
    read_library,
)
from edgebench.builds.logged import first_error, run_logged
from edgebench.builds.recipe import library_recipes
from edgebench.builds.sources import FRAMEWORKS, find_source
from edgebench.builds.targets import TARGETS, Target, parse_target
from edgebench.converters.artifact_cache import file_sha256
from edgebench.paths import exclusive_lock, write_json_atomically

log = logging.getLogger(__name__)

SCHEMA = "edgebench.native-runner/1"
BINARY = "edgebench-native"
MANIFEST = "manifest.json"
CURRENT = "current.json"
COMPILE_TIMEOUT_S = 1200.0


@dataclass
class BuiltRunner:
    target: Target
    path: Path
    sha256: str
    size_bytes: int
    frameworks: dict[str, str]  # name -> version
    compiler: str  # "aarch64-linux-gnu-g++ 12.2.0"
    seconds: float  # the libraries' builds plus the runner's
    built_at: str  # UTC, ISO 8601
    #: framework -> the folder (under <native root>/libs) of the library it links, as the
    #: manifest names it (mnn and mnn-llm name the same one)
    libraries: dict[str, str] = field(default_factory=dict)

    def linked_libraries(self) -> dict[str, Library]:
        """framework -> the library this runner links, for each one still built (a library
        folder removed since is left out)."""
        found: dict[str, Library] = {}
        for framework, name in self.libraries.items():
            library = read_library(native_root() / "libs" / name)
            if library is not None:
                found[framework] = library
        return found

    def describe(self) -> str:
        """``2.9 MB, ncnn 1.0.20250428, g++ 12.2.0, built in 312 s``"""
        frameworks = ", ".join(f"{name} {version}" for name, version in self.frameworks.items())
        return (
            f"{self.size_bytes / 1e6:.1f} MB, {frameworks}, {self.compiler}, "
            f"built in {self.seconds:.0f} s"
        )


def runner_dir() -> Path:
    """The runner's C++ sources, shipped in the edgebench.runners package."""
    return Path(edgebench.runners.__file__).parent / "native_runner"


def bin_dir(target: Target) -> Path:
    return native_root() / "bin" / target.name


def runner_sources(frameworks: Iterable[str], folder: Path | None = None) -> list[Path]:
    """The .cpp files one build compiles: every one directly in the folder, then each
    framework's backend files under ``backends/``, as its recipe lists them (runner_backend)."""
    folder = folder or runner_dir()
    common = sorted(folder.glob("*.cpp"))
    if not common:
        raise BuildError(f"the native runner's sources are missing: no .cpp file in {folder}")
    recipes = library_recipes()
    backends: list[Path] = []
    for framework in frameworks:
        recipe = recipes.get(framework)
        files = [folder / "backends" / name for name in (recipe.runner_backend if recipe else ())]
        if not files:
            raise BuildError(f"the native runner has no {framework} backend: no recipe lists one")
        for path in files:
            if not path.is_file():
                raise BuildError(f"the native runner has no {framework} backend: {path} is missing")
        backends += files
    return common + list(dict.fromkeys(backends))


def runner_key(
    cpp_files: list[Path], folder: Path, libraries: list[Library], compiler: Compiler, flags: dict
) -> str:
    """Twelve hex digits over the runner's sources (its headers too), the library folders'
    names, the compiler's version and the flags."""
    files = set(cpp_files) | set(folder.glob("*.h")) | set(folder.glob("backends/*.h"))
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    extra = {
        "libraries": sorted(lib.folder.name for lib in libraries),
        "compiler": [compiler.kind, compiler.version],
        "flags": flags,
    }
    digest.update(json.dumps(extra, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def library_sources(given: Mapping[str, Path]) -> dict[str, Path]:
    """``given`` (framework -> its source) keyed by the framework whose library each source
    builds: mnn-llm's is MNN's (library_of). BuildError in one line when two of them give
    different sources for one library, as ``--source mnn=A --source mnn-llm=B`` do."""
    out: dict[str, Path] = {}
    named: dict[str, str] = {}
    for name, path in given.items():
        recipe = library_recipes().get(name)
        owner = (recipe.library_of if recipe else "") or name
        if owner in out and out[owner] != path:
            first = named[owner]
            raise BuildError(
                f"--source {first}={out[owner]} and --source {name}={path} both give "
                f"{owner}'s source ({' and '.join(sorted({first, name} - {owner}))} is built "
                f"into {owner}'s library): give --source {owner}= only"
            )
        out[owner] = path
        named.setdefault(owner, name)
    return out


def build_runner(
    target: Target | str,
    frameworks: Iterable[str] = ("ncnn",),
    sources: Mapping[str, Path] | None = None,
    ndk: Path | None = None,
    jobs: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
    runner_folder: Path | None = None,
    features: str = "all",
    gpu_devices: str = "hardware",
) -> BuiltRunner:
    """Build the runner for ``target`` with ``frameworks`` linked in (each framework's library
    first, when not built yet) and make it the target's current runner. An existing binary of
    the same key with an intact manifest is reused unless ``force``. ``runner_folder`` replaces
    the shipped C++ sources (for tests). ``features``: the libraries' CPU_FEATURES;
    ``gpu_devices``: their GPU_DEVICES."""
    target = parse_target(target) if isinstance(target, str) else target
    say = progress or (lambda _line: None)
    chosen = list(dict.fromkeys(frameworks))
    for name in chosen:
        if name not in FRAMEWORKS:
            raise BuildError(f"unknown framework {name!r}: choose one of {', '.join(FRAMEWORKS)}")
    given = dict(sources or {})
    by_library = library_sources(given)
    for name in given:
        if name not in chosen:
            raise BuildError(
                f"a source was given for {name}, which is not among the frameworks built "
                f"({', '.join(chosen)}): add --framework {name}"
            )
    folder = (runner_folder or runner_dir()).absolute()
    cpp_files = runner_sources(chosen, folder)
    compiler = find_compiler(target, ndk)
    # One source and library per library framework: mnn-llm links MNN's (library_of).
    owners = {name: library_recipes()[name].library_of or name for name in chosen}
    found = [find_source(name, by_library.get(name)) for name in dict.fromkeys(owners.values())]
    libraries = [
        build_library(src, target, compiler, jobs, say, features=features, gpu_devices=gpu_devices)
        for src in found
    ]
    by_framework = {lib.framework: lib for lib in libraries}
    library_of = {name: by_framework[owners[name]] for name in chosen}
    loads_drivers = any(lib.gpu_apis for lib in libraries)
    link_flags = driver_link_flags(compiler) if loads_drivers else list(compiler.link_flags)
    # The runner's own driver lookups (gpu_devices.cpp) exist only where glibc is shared.
    cxxflags = [*RUNNER_CXXFLAGS, *(["-DEB_LOADS_DRIVERS"] if loads_drivers else [])]
    flags = {
        "cxxflags": cxxflags,
        "link_flags": link_flags,
        "cpu_features": features,
        "gpu_devices": gpu_devices,
        "libraries": {
            src.framework: [
                key_flag(f) for f in framework_flags(src, target, features, gpu_devices)
            ]
            for src in found
        },
    }
    key = runner_key(cpp_files, folder, libraries, compiler, flags)
    out_dir = bin_dir(target) / key
    with exclusive_lock(bin_dir(target) / f".{key}.lock"):
        built = None if force else read_manifest(target, key)
        if built is None:
            say(f"compiling the native runner for {target.name} with {compiler.short}")
            started = time.monotonic()
            includes = [
                src.root / name
                for src in found
                for name in library_recipes()[src.framework].source_includes
            ]
            argv = _compile(
                compiler, folder, cpp_files, libraries, includes, cxxflags, link_flags, out_dir
            )
            runner_seconds = round(time.monotonic() - started, 1)
            binary = out_dir / BINARY
            manifest = {
                "schema": SCHEMA,
                "key": key,
                "target": target.name,
                "frameworks": {name: lib.version for name, lib in library_of.items()},
                "libraries": {name: lib.folder.name for name, lib in library_of.items()},
                "compiler": {
                    "kind": compiler.kind,
                    "version": compiler.version,
                    "short": compiler.short,
                },
                "flags": flags,
                "command": argv,
                "sha256": file_sha256(binary),
                "size_bytes": binary.stat().st_size,
                "runner_seconds": runner_seconds,
                "seconds": round(runner_seconds + sum(lib.seconds for lib in libraries), 1),
                "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "sources": {src.framework: str(src.origin) for src in found},
            }
            write_json_atomically(out_dir / MANIFEST, manifest)
            built = read_manifest(target, key)
            if built is None:
                raise BuildError(f"the runner built in {out_dir} fails its own manifest check")
        else:
            log.info("%s: reusing %s", target.name, built.path)
        write_json_atomically(
            bin_dir(target) / CURRENT,
            {"key": key, "updated_at": datetime.now(UTC).isoformat(timespec="seconds")},
        )
    return built


def _compile(
    compiler: Compiler,
    folder: Path,
    cpp_files: list[Path],
    libraries: list[Library],
    source_includes: list[Path],
    cxxflags: list[str],
    link_flags: list[str],
    out: Path,
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    # The caller holds the key's lock: a binary being written here is one a killed build left.
    for stale in out.glob(f".{BINARY}.*.tmp"):
        log.warning("removing %s, left half-written by an interrupted build", stale)
        stale.unlink(missing_ok=True)
    tmp = out / f".{BINARY}.{os.getpid()}.tmp"
    argv = [str(compiler.cxx), *cxxflags, f"-I{folder}"]
    # The frameworks' headers as system headers: their warnings (TNN's MSVC pragmas, on every
    # line) would bury the runner's own.
    argv += [f"-isystem{lib.include_dir}" for lib in libraries]
    argv += [f"-isystem{path}" for path in source_includes]
    argv += [flag for lib in libraries for flag in lib.compile_defines]
    argv += [str(path) for path in cpp_files]
    for lib in libraries:
        argv += lib.link_args
    argv += [*link_flags, "-o", str(tmp)]
    log_path = out / "build.log"
    try:
        code, start = run_logged(argv, log_path, COMPILE_TIMEOUT_S)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if code != 0:
        tmp.unlink(missing_ok=True)
        if code is None:
            why = f"stopped after {COMPILE_TIMEOUT_S:.0f} s"
        else:
            pattern = r"error:|undefined reference"
            why = first_error(log_path, start, pattern=pattern) or f"exit {code}"
        raise BuildError(f"compiling the native runner failed ({why}); full log: {log_path}")
    os.replace(tmp, out / BINARY)
    return [*argv[:-1], str(out / BINARY)]


def read_manifest(target: Target, key: str) -> BuiltRunner | None:
    """The runner of ``key`` when its manifest is whole and its binary still has the sha256
    the manifest records; None (with a warning for a changed binary) otherwise."""
    folder = bin_dir(target) / key
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        return None
    binary = folder / BINARY
    try:
        sha = file_sha256(binary)
    except OSError:
        log.warning("%s: the runner %s is missing; build it again", target.name, binary)
        return None
    if sha != manifest.get("sha256"):
        log.warning(
            "%s: the runner %s changed since it was built (sha256 %s, manifest says %s); "
            "build it again",
            target.name,
            binary,
            sha[:12],
            str(manifest.get("sha256"))[:12],
        )
        return None
    return BuiltRunner(
        target=target,
        path=binary,
        sha256=sha,
        size_bytes=binary.stat().st_size,
        frameworks={str(k): str(v) for k, v in (manifest.get("frameworks") or {}).items()},
        compiler=str((manifest.get("compiler") or {}).get("short", "")),
        seconds=float(manifest.get("seconds") or 0.0),
        built_at=str(manifest.get("built_at", "")),
        libraries={str(k): str(v) for k, v in (manifest.get("libraries") or {}).items()},
    )


def find_runner(target: Target | str) -> BuiltRunner | None:
    """The target's current runner, or None when none is built or it no longer matches its
    manifest."""
    target = parse_target(target) if isinstance(target, str) else target
    try:
        current = json.loads((bin_dir(target) / CURRENT).read_text())
    except (OSError, ValueError):
        return None
    key = current.get("key") if isinstance(current, dict) else None
    if not isinstance(key, str) or not key or "/" in key or key.startswith("."):
        return None
    return read_manifest(target, key)


def list_runners() -> list[BuiltRunner]:
    """The current runner of every target that has one."""
    return [runner for t in TARGETS.values() if (runner := find_runner(t)) is not None]
