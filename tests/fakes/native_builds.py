"""edgebench-native builds for the tests: the x86_64 and aarch64 binaries, built once into the
user cache by `edgebench runners build` (like the converter toolchains and the arm64 board).

Each binary links every framework whose source is in the sources folder (ncnn always; MNN and
TNN where their archives are there: `.ci/run` puts them there from ../shared/sources; llama.cpp
where llama-cpp-python's sdist is, which `.ci/run` fetches). A build
takes minutes on two cores, so when a session collects a test that needs one and it is not built
yet, a thread starts the builds as collection ends (``start_prebuild``), x86_64 first, at a lower
priority than the tests, and they overlap the tests before them; each fixture waits for its own
target. Tests skip only where a source, the target's compiler or cmake is missing (the line
names it and how to get it); a failed build fails them with the log's path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest

from edgebench.builds import BuildError
from edgebench.builds.compilers import find_compiler
from edgebench.builds.native_runner import BuiltRunner, find_runner
from edgebench.builds.sources import FRAMEWORKS, find_source
from edgebench.builds.targets import parse_target
from edgebench.converters import ConversionOptions, get_converter
from edgebench.frameworks.rows import OPENCL_PACKAGES, VULKAN_PACKAGES
from edgebench.runners import vulkan_info
from edgebench.runners.protocol import RESULT_PREFIX, SPEC_SCHEMA
from fakes.models import save_conv_model

#: The fixture name per target, in the order the builds run.
FIXTURES = {"native_x86": "x86_64-linux", "native_arm": "aarch64-linux"}
PREBUILD_TIMEOUT_S = 3000


class _Prebuild:
    """The background builds: one thread building the targets in turn, an event per target."""

    def __init__(self) -> None:
        self.done: dict[str, threading.Event] = {}
        self.proc: subprocess.Popen | None = None
        self.stopped = False
        self.lock = threading.Lock()


_prebuild = _Prebuild()


def source_problem(framework: str = "ncnn") -> str | None:
    try:
        find_source(framework)
    except BuildError as exc:
        return str(exc)
    return None


def wanted_frameworks() -> list[str]:
    """ncnn, and each other framework whose source is in the sources folder."""
    return [fw for fw in FRAMEWORKS if fw == "ncnn" or source_problem(fw) is None]


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


def _build_command(target_name: str) -> list[str]:
    argv = [sys.executable, "-m", "edgebench", "runners", "build", "--target", target_name]
    argv += ["--cpu-features", "lean"]  # a third of the build time; the tests need no more
    argv += ["--gpu-devices", "any"]  # MNN's OpenCL on pocl, the CPU's OpenCL device
    for framework in wanted_frameworks():
        argv += ["--framework", framework]
    return argv


def start_prebuild(targets: list[str], log: Path) -> None:
    """Build the targets, one after the other, in one background thread (the builds run at a
    lower priority than the tests). A build whose libraries and runner sources are unchanged
    only reuses them, in seconds; one whose runner sources changed relinks the runner.

    The command lines and environment are fixed now: tests that change PATH or the environment
    meanwhile must not reach the thread. Whatever happens in it, every target's event is set
    when it ends, and a fixture whose target did not build builds it itself."""
    missing = [t for t in targets if build_problem(t) is None]
    if not missing:
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    nice = shutil.which("nice")
    commands = {t: [*([nice, "-n", "10"] if nice else []), *_build_command(t)] for t in missing}
    env = dict(os.environ)
    for target in missing:
        _prebuild.done[target] = threading.Event()
    events = [_prebuild.done[t] for t in missing]

    def build_all() -> None:
        with log.open("w") as out:
            try:
                for target in missing:
                    with _prebuild.lock:
                        if _prebuild.stopped:
                            break
                        _prebuild.proc = subprocess.Popen(
                            commands[target], stdout=out, stderr=subprocess.STDOUT, env=env
                        )
                    try:
                        _prebuild.proc.wait(timeout=PREBUILD_TIMEOUT_S)
                    except subprocess.TimeoutExpired:
                        _prebuild.proc.kill()
                        _prebuild.proc.wait(timeout=30)
                    _prebuild.done[target].set()
            except Exception as exc:  # the fixtures build for themselves; say why here
                out.write(f"the background build stopped: {type(exc).__name__}: {exc}\n")
            finally:
                for event in events:
                    event.set()

    threading.Thread(target=build_all, name="native-prebuild", daemon=True).start()


def stop_prebuild() -> None:
    with _prebuild.lock:
        _prebuild.stopped = True
        proc = _prebuild.proc
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


def built(target_name: str) -> BuiltRunner:
    """The target's runner with every framework whose source is here, built from the runner
    sources as they are now: after the background build, one more build call, which reuses
    it (or, where the sources changed since, relinks; a runner found by name alone could be an
    older one)."""
    waiting = _prebuild.done.get(target_name)
    if waiting is not None:
        waiting.wait(timeout=PREBUILD_TIMEOUT_S)
    problem = build_problem(target_name)
    if problem is not None:
        pytest.skip(f"edgebench-native cannot be built here: {problem}")
    result = subprocess.run(
        _build_command(target_name), capture_output=True, text=True, timeout=PREBUILD_TIMEOUT_S
    )
    assert result.returncode == 0, f"edgebench runners build failed:\n{result.stderr[-3000:]}"
    found = find_runner(parse_target(target_name))
    assert found is not None and set(wanted_frameworks()) <= set(found.frameworks), result.stdout
    return found


def with_framework(runner: BuiltRunner, framework: str) -> BuiltRunner:
    """``runner``, which links ``framework`` when its source is here; else skip, naming where
    the source goes."""
    problem = source_problem(framework)
    if problem is not None:
        pytest.skip(f"no {framework} source for edgebench-native: {problem}")
    assert framework in runner.frameworks, f"{runner.path} was built without {framework}"
    return runner


@pytest.fixture(scope="session", name="native_x86")
def native_x86_fixture() -> BuiltRunner:
    return built(FIXTURES["native_x86"])


@pytest.fixture(scope="session", name="native_arm")
def native_arm_fixture() -> BuiltRunner:
    return built(FIXTURES["native_arm"])


@pytest.fixture(scope="session", name="native_x86_mnn")
def native_x86_mnn_fixture(native_x86: BuiltRunner) -> BuiltRunner:
    return with_framework(native_x86, "mnn")


@pytest.fixture(scope="session", name="native_arm_mnn")
def native_arm_mnn_fixture(native_arm: BuiltRunner) -> BuiltRunner:
    return with_framework(native_arm, "mnn")


@pytest.fixture(scope="session", name="native_x86_tnn")
def native_x86_tnn_fixture(native_x86: BuiltRunner) -> BuiltRunner:
    return with_framework(native_x86, "tnn")


@pytest.fixture(scope="session", name="native_arm_tnn")
def native_arm_tnn_fixture(native_arm: BuiltRunner) -> BuiltRunner:
    return with_framework(native_arm, "tnn")


def run_native(
    binary: Path,
    spec: dict | str,
    timeout: float = 300,
    emulator: str | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Run an edgebench-native binary on ``spec`` as a device would (under ``emulator``, e.g.
    qemu-aarch64-static, when given; in ``env``, else this process's environment); its parsed
    result. ``spec`` "--probe" asks for the probe instead."""
    probe = spec == "--probe"
    payload = None if probe else spec if isinstance(spec, str) else json.dumps(spec)
    argv = [*([emulator] if emulator else []), str(binary), "--probe" if probe else "-"]
    proc = subprocess.run(
        argv, input=payload, capture_output=True, text=True, timeout=timeout, env=env
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len(RESULT_PREFIX) :])


def run_once(
    binary: Path,
    model: Path,
    framework: str,
    feeds: dict,
    work: Path,
    emulator: str | None = None,
    **spec: object,
) -> tuple[dict, dict]:
    """One inference of ``model`` in ``framework`` on ``feeds`` (arrays by ONNX input name) in
    edgebench-native: the result, and the saved outputs by name (empty when the cell failed)."""
    work.mkdir(parents=True, exist_ok=True)
    np.savez(work / "inputs.npz", **feeds)
    full = {
        "schema": SPEC_SCHEMA,
        "model": str(model),
        "framework": framework,
        "warmup": 0,
        "iterations": 1,
        "min_time_s": 0,
        "input_file": str(work / "inputs.npz"),
        "save_outputs": str(work / "outputs.npz"),
        **spec,
    }
    result = run_native(binary, full, emulator=emulator)
    if result["status"] != "ok":
        return result, {}
    with np.load(work / "outputs.npz") as saved:
        names = [str(n) for n in saved["__names__"]]
        return result, {n: saved[f"output_{i}"] for i, n in enumerate(names)}


def converted_conv(folder: Path, fmt: str, suffix: str) -> Path:
    """A one-conv model (1x3x32x32) converted to ``fmt`` by edgebench's converter into
    ``folder``: milliseconds on a software GPU. Its file ending in ``suffix``; skips, saying
    why, where the converter cannot run."""

    onnx_path = save_conv_model(folder / "conv.onnx", [1, 3, 32, 32])
    converter = get_converter(fmt)
    reason = converter.unavailable_reason()
    if reason:
        pytest.skip(reason)
    out = folder / fmt
    out.mkdir()
    converter.convert(onnx_path, out, ConversionOptions())
    return next(out.glob(f"*{suffix}"))


def first_vulkan_device() -> dict:
    """This machine's first Vulkan device as the runner probe's reader describes it; skips,
    naming the packages, without one."""
    try:
        devices = vulkan_info.vulkan_devices()
    except vulkan_info.VulkanUnavailable as exc:
        pytest.skip(f"no Vulkan loader here ({exc}): {VULKAN_PACKAGES}")
    if not devices:
        pytest.skip(f"no Vulkan device here: {VULKAN_PACKAGES}")
    return devices[0]


def first_opencl_device_name() -> str:
    """The first OpenCL device clinfo lists; skips, naming the packages, without one."""
    try:
        listed = subprocess.run(["clinfo", "-l"], capture_output=True, text=True, timeout=60)
    except OSError as exc:  # missing, or not a program this user can run
        pytest.skip(f"clinfo cannot run ({exc.strerror}): apt-get install clinfo")
    devices = [ln.split(":", 1)[1].strip() for ln in listed.stdout.splitlines() if "Device #" in ln]
    if not devices:
        pytest.skip(f"no OpenCL device here: {OPENCL_PACKAGES}")
    return devices[0]


def host_native_lab(folder: Path) -> Path:
    """A lab file whose one device, ``host-native``, is this host measured by edgebench-native."""
    lab = folder / "lab.toml"
    lab.write_text('[devices.host-native]\ntransport = "local"\nrunner = "edgebench-native"\n')
    return lab


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
        FIXTURES[name.removesuffix("_mnn").removesuffix("_tnn")]
        for item in session.items
        for name in getattr(item, "fixturenames", ())
        if name.removesuffix("_mnn").removesuffix("_tnn") in FIXTURES
    }
    if wanted:
        cache = getattr(session.config, "cache", None)
        folder = Path(cache.mkdir("native-prebuild")) if cache else Path(tempfile.mkdtemp())
        # Each test process (pytest-xdist worker) writes its own log; the builds themselves
        # are serialised by edgebench's build locks.
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        log = folder / (f"log-{worker}" if worker else "log")
        start_prebuild([t for t in FIXTURES.values() if t in wanted], log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_prebuild()
