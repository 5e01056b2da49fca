"""The board's bookkeeping: state, recipe stamp, failed builds, and running a command in a
private mount namespace. No board is built here (tests/lab/test_arm_board.py uses the real
one from the cache)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.runner_process import RUNNER_ARGV

from edgebench.lab import emulated_board as boards
from edgebench.lab.device import parse_runner_output


@pytest.fixture
def boards_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eb_env: dict) -> Path:
    folder = tmp_path / "boards"
    monkeypatch.setenv(boards.ROOT_ENV, str(folder))
    eb_env[boards.ROOT_ENV] = str(folder)  # for run_cli's subprocess too
    return folder


def _needs_root_tools() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("mount namespaces need root and util-linux's unshare")


def test_a_missing_board_names_the_build_line(boards_dir: Path, run_cli) -> None:
    assert boards.board_status().state == "missing"
    with pytest.raises(boards.BoardError, match="edgebench board build"):
        boards.board_root()
    result = run_cli(["board", "status"], timeout=60)
    assert result.returncode == 0
    assert "arm64: missing" in result.stdout and "build it: edgebench board build" in result.stdout


def test_a_board_of_another_recipe_or_without_python_is_broken(boards_dir: Path) -> None:
    folder = boards_dir / "arm64"
    root = folder / "root-1"
    (root / "usr" / "bin").mkdir(parents=True)
    state = {"state": "installed", "recipe": boards.RECIPE - 1, "root": root.name}
    (folder / "board.json").write_text(json.dumps(state))
    status = boards.board_status()
    assert status.state == "broken" and "recipe" in status.detail
    state["recipe"] = boards.RECIPE
    (folder / "board.json").write_text(json.dumps(state))
    status = boards.board_status()
    assert status.state == "broken" and "Python is missing" in status.detail
    (root / "usr" / "bin" / "python3.11").write_text("")
    assert boards.board_status().state == "installed"
    assert boards.board_root() == root


def test_a_failed_build_is_recorded_and_leaves_no_half_built_root(
    boards_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if boards.build_problem():
        pytest.skip(f"this machine cannot build the board: {boards.build_problem()}")
    # Nothing listens on port 9 of 127.0.0.1: mmdebstrap fails at its first download.
    monkeypatch.setenv(boards.MIRROR_ENV, "http://127.0.0.1:9/debian")
    lines: list[str] = []
    status = boards.build_board(progress=lines.append)
    assert status.state == "broken"
    assert status.detail.startswith("mmdebstrap exited")
    assert "Failed to fetch http://127.0.0.1:9/debian" in status.detail
    assert not list((boards_dir / "arm64").glob("root-*"))
    assert "127.0.0.1:9" in (boards_dir / "arm64" / "build.log").read_text()
    assert any("build failed" in line for line in lines)


def test_a_board_command_keeps_every_argument_and_leaves_no_mount_behind(tmp_path: Path) -> None:
    _needs_root_tools()
    root = tmp_path / "a root with spaces"
    for folder in ("proc", "sys", "dev"):
        (root / folder).mkdir(parents=True)
    hostile = ["a b", "$(touch /tmp/eb-pwned)", "'; exit 3", "*"]
    argv = boards.board_command(
        root,
        ["sh", "-c", 'printf "%s|" "$@"; ls "$0"/proc/self >/dev/null', str(root), *hostile],
        chroot=False,
    )
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "|".join(hostile) + "|"
    assert not Path("/tmp/eb-pwned").exists()
    # The binds lived in the command's own mount namespace only.
    assert str(root) not in Path("/proc/self/mounts").read_text().replace("\\040", " ")
    assert not any((root / "proc").iterdir())


def test_the_build_demands_the_recipes_frameworks_not_the_whole_registry() -> None:
    # The real runner's probe on this host: a framework the board does not install (TensorRT
    # needs an NVIDIA GPU, TNN has no wheel) is unavailable here as it is on the board.
    from edgebench.frameworks import FRAMEWORKS

    proc = subprocess.run([*RUNNER_ARGV, "--probe"], capture_output=True, text=True, timeout=120)
    probe = parse_runner_output(proc.stdout)
    assert probe is not None, proc.stderr
    assert not probe["frameworks"]["tensorrt"]["available"]
    everything_found = {
        "frameworks": {f.name: {"available": f.name in boards.FRAMEWORKS} for f in FRAMEWORKS}
    }
    assert boards.missing_frameworks(everything_found) == []
    assert set(boards.FRAMEWORKS) < {f.name for f in FRAMEWORKS}
    without_ort = {"frameworks": dict(everything_found["frameworks"], onnxruntime={})}
    assert boards.missing_frameworks(without_ort) == ["onnxruntime"]
    assert "tensorrt" not in boards.missing_frameworks(probe)
