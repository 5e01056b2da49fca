"""edgebench-native builds for the tests: the x86_64 and aarch64 binaries, built once into the
user cache by `edgebench runners build` (like the converter toolchains and the arm64 board).

A build takes minutes on two cores, so when a session collects a test that needs one and it is
not built yet, the build starts in the background as collection ends (``start_prebuild``) and
overlaps the tests before it; the fixtures wait for it. Tests skip only where the ncnn source,
the target's compiler or cmake is missing (the line names it and how to get it); a failed
build fails them with the log's path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from edgebench.builds import BuildError
from edgebench.builds.compilers import find_compiler
from edgebench.builds.native_runner import BuiltRunner, build_runner, find_runner
from edgebench.builds.sources import find_source
from edgebench.builds.targets import parse_target
from edgebench.runners.protocol import RESULT_PREFIX

#: The fixture name per target.
FIXTURES = {"native_x86": "x86_64-linux", "native_arm": "aarch64-linux"}
PREBUILD_TIMEOUT_S = 3000

_prebuild: dict[str, object] = {}


def source_problem() -> str | None:
    try:
        find_source("ncnn")
    except BuildError as exc:
        return str(exc)
    return None


def build_problem(target_name: str) -> str | None:
    """What this machine lacks to build for ``target_name``: the ncnn source, the target's
    compiler (g++, aarch64-linux-gnu-g++) or cmake; each message names it and the fix."""
    problem = source_problem()
    if problem is not None:
        return problem
    try:
        find_compiler(parse_target(target_name))
    except BuildError as exc:
        return str(exc)
    if shutil.which("cmake") is None:
        return "cmake is not installed (apt-get install cmake)"
    return None


def start_prebuild(targets: list[str], log: Path) -> None:
    """Build what is missing in one background process (at a lower priority than the tests)."""
    missing = [
        t for t in targets if find_runner(parse_target(t)) is None and build_problem(t) is None
    ]
    if not missing:
        return
    argv = [sys.executable, "-m", "edgebench", "runners", "build"]
    for target in missing:
        argv += ["--target", target]
    log.parent.mkdir(parents=True, exist_ok=True)
    out = log.open("w")
    _prebuild["proc"] = subprocess.Popen(
        ["nice", "-n", "10", *argv], stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ)
    )
    _prebuild["log"] = log


def stop_prebuild() -> None:
    proc = _prebuild.get("proc")
    if isinstance(proc, subprocess.Popen) and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


def built(target_name: str) -> BuiltRunner:
    proc = _prebuild.get("proc")
    if isinstance(proc, subprocess.Popen):
        proc.wait(timeout=PREBUILD_TIMEOUT_S)
    target = parse_target(target_name)
    found = find_runner(target)
    if found is not None:
        return found
    problem = build_problem(target_name)
    if problem is not None:
        pytest.skip(f"edgebench-native cannot be built here: {problem}")
    result = subprocess.run(
        [sys.executable, "-m", "edgebench", "runners", "build", "--target", target_name],
        capture_output=True,
        text=True,
        timeout=PREBUILD_TIMEOUT_S,
    )
    assert result.returncode == 0, f"edgebench runners build failed:\n{result.stderr[-3000:]}"
    found = find_runner(target)
    assert found is not None, result.stdout
    return found


def with_mnn(target_name: str) -> BuiltRunner:
    """A build with ncnn and MNN. No package registry has MNN's source, so this skips unless
    one was put in the sources folder (``MNN-<version>.tar.gz`` or a checkout's archive)."""
    try:
        find_source("mnn")
    except BuildError as exc:
        pytest.skip(f"no MNN source for edgebench-native: {exc}")
    found = find_runner(parse_target(target_name))
    if found is not None and "mnn" in found.frameworks:
        return found
    return build_runner(target_name, frameworks=("ncnn", "mnn"))


@pytest.fixture(scope="session", name="native_x86")
def native_x86_fixture() -> BuiltRunner:
    return built(FIXTURES["native_x86"])


@pytest.fixture(scope="session", name="native_arm")
def native_arm_fixture() -> BuiltRunner:
    return built(FIXTURES["native_arm"])


@pytest.fixture(scope="session", name="native_x86_mnn")
def native_x86_mnn_fixture(native_x86: BuiltRunner) -> BuiltRunner:
    return with_mnn(FIXTURES["native_x86"])


@pytest.fixture(scope="session", name="native_arm_mnn")
def native_arm_mnn_fixture(native_arm: BuiltRunner) -> BuiltRunner:
    return with_mnn(FIXTURES["native_arm"])


def run_native(binary: Path, spec: dict | str, timeout: float = 300) -> dict:
    """Run an edgebench-native binary on ``spec`` as a device would; its parsed result."""
    payload = spec if isinstance(spec, str) else json.dumps(spec)
    proc = subprocess.run(
        [str(binary), "-"], input=payload, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len(RESULT_PREFIX) :])


def convert_builtin(model: str, fmt: str, cache: Path, shared_models: Path) -> Path:
    """``edgebench convert MODEL --to FMT`` into ``cache``; the artifact's first file."""
    (cache / "models").symlink_to(shared_models, target_is_directory=True)
    made = subprocess.run(
        [sys.executable, "-m", "edgebench", "convert", model, "--to", fmt],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "EDGEBENCH_CACHE": str(cache)},
    )
    assert made.returncode == 0, made.stderr
    (folder, first), *_ = re.findall(r"-> (\S+) \(([^,)]+)", made.stdout)
    return Path(folder) / first


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the edgebench-native builds the collected tests need, in the background."""
    wanted = {
        FIXTURES[name]
        for item in session.items
        for name in getattr(item, "fixturenames", ())
        if name in FIXTURES
    }
    if wanted:
        cache = getattr(session.config, "cache", None)
        folder = Path(cache.mkdir("native-prebuild")) if cache else Path(tempfile.mkdtemp())
        start_prebuild(sorted(wanted), folder / "log")


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_prebuild()
