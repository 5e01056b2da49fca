"""Shared fixtures: an isolated cache/results area and small hand-made ONNX models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "runners" / "runner.py"

# The converter toolchains (pnnx, onnx2tf: ~2.7 GB) are installed once and shared by every test
# and every test run: in EDGEBENCH_TOOLCHAINS_DIR when set, else where `edgebench toolchains
# install` puts them for this user. Per-test caches would reinstall them for each test.
_USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
os.environ.setdefault("EDGEBENCH_TOOLCHAINS_DIR", str(_USER_CACHE / "edgebench" / "toolchains"))
# Ray on loopback only: with this, Ray's own address is 127.0.0.1 instead of the machine's
# outward one (read when Ray is imported, so set before any test imports it).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The emulated arm64 board (~500 MB, ~2 minutes to build) is shared the same way.
os.environ.setdefault("EDGEBENCH_BOARDS_DIR", str(_USER_CACHE / "edgebench" / "boards"))
# The edgebench-native builds (minutes each) and the framework sources they are built from.
os.environ.setdefault("EDGEBENCH_NATIVE_DIR", str(_USER_CACHE / "edgebench" / "native-runner"))


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated built-in models, shared by the whole session (each is generated once)."""
    return tmp_path_factory.mktemp("edgebench-models")


@pytest.fixture(autouse=True)
def eb_env(shared_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for running edgebench: a private cache (sharing only the generated models),
    results dir and HOME, so no test sees another test's artifacts or runs."""
    cache = tmp_path / "eb-cache"
    cache.mkdir()
    (cache / "models").symlink_to(shared_models, target_is_directory=True)
    results = tmp_path / "eb-results"
    home = tmp_path / "eb-home"
    home.mkdir()
    monkeypatch.setenv("EDGEBENCH_CACHE", str(cache))
    monkeypatch.setenv("EDGEBENCH_RESULTS", str(results))
    env = dict(os.environ)
    env.update(EDGEBENCH_CACHE=str(cache), EDGEBENCH_RESULTS=str(results), HOME=str(home))
    return env


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(eb_env: dict[str, str]):
    """Run the real `edgebench` entry point in a subprocess."""

    def run(args: Sequence[str], timeout: float = 300) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "edgebench", *args],
            capture_output=True,
            text=True,
            env=eb_env,
            timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def run_runner(spec: dict | str, timeout: float = 120) -> dict:
    """Run runners/runner.py as a device would and return its parsed result."""
    payload = spec if isinstance(spec, str) else json.dumps(spec)
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "-"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("EDGEBENCH_RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0].split(" ", 1)[1])


def save_conv_model(path: Path, dims: Sequence[int | str], channels: int = 8) -> Path:
    """A one-conv model; string dims become symbolic (dynamic) dimensions."""
    rng = np.random.default_rng(1)
    weight = numpy_helper.from_array(
        (rng.standard_normal((channels, 3, 3, 3)) * 0.2).astype(np.float32), "w"
    )
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def save_sqrt_model(path: Path) -> Path:
    """y = sqrt(x) on a 1x3x8x8 input: seeded inputs are half negative, so about half the
    outputs are NaN, from finite inputs."""
    graph = helper.make_graph(
        [helper.make_node("Sqrt", ["x"], ["y"])],
        "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def conv_model(tmp_path: Path) -> Path:
    return save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])


def save_sparse_detector(path: Path, perturb: float = 0.0) -> Path:
    """A small detector whose head is a sigmoid over mostly negative logits (bias -12): its
    score map is ~0 almost everywhere (99% of it below 1e-3) with a few responses near 0.03.
    ``perturb`` adds that many standard deviations of noise to the middle conv's weights: a
    corrupted copy whose outputs a correct framework cannot reproduce."""
    rng = np.random.default_rng(3)
    weights = {
        "stem.w": rng.standard_normal((16, 3, 3, 3)) * 0.3,
        "mid.w": rng.standard_normal((16, 16, 3, 3)) * 0.12,
        "head.w": rng.standard_normal((4, 16, 1, 1)) * 0.4,
        "head.b": np.full(4, -12.0),
    }
    if perturb:
        mid = weights["mid.w"]
        weights["mid.w"] = mid + perturb * mid.std() * np.random.default_rng(9).standard_normal(
            mid.shape
        )
    nodes = [
        helper.make_node("Conv", ["x", "stem.w"], ["s"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["s"], ["s_act"]),
        helper.make_node("Conv", ["s_act", "mid.w"], ["m"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["m"], ["m_act"]),
        helper.make_node("Conv", ["m_act", "head.w", "head.b"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sparse_detector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def sparse_detector(tmp_path: Path) -> tuple[Path, Path]:
    """(the sparse detector, a copy with perturbed weights)."""
    return (
        save_sparse_detector(tmp_path / "sparse.onnx"),
        save_sparse_detector(tmp_path / "sparse-corrupted.onnx", perturb=0.05),
    )


@pytest.fixture
def corrupt_model(tmp_path: Path) -> Path:
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07this is not a protobuf model \xff\xfe" * 8)
    return path


# Fixtures that start real peers on loopback, shared by every test module: pytest finds them
# by their registered names (adb_server, emulated_phone, sshd, shared_sshd).
from fakes.adb_fixtures import adb_server_fixture, emulated_phone_fixture  # noqa: E402, F401
from fakes.arm_board import (  # noqa: E402, F401
    arm_board_fixture,
    board_phone_fixture,
    board_sshd_fixture,
    board_work_dir_fixture,
)
from fakes.cli_checks import mod_env  # noqa: E402, F401
from fakes.native_builds import (  # noqa: E402, F401
    FIXTURES,
    native_arm_fixture,
    native_arm_mnn_fixture,
    native_x86_fixture,
    native_x86_mnn_fixture,
    start_prebuild,
    stop_prebuild,
)
from fakes.ssh_fixtures import shared_sshd, sshd  # noqa: E402, F401


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
