"""Runner kinds are one vocabulary (lab/runner_kinds.py), and the old name "native" of the
framework tools (and "native_bin", the old name of the tools folder) still reads, with one
warning line naming the new one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fakes.cli_checks import cli

from edgebench.errors import UserError
from edgebench.lab.lab_file import load_lab
from edgebench.lab.profiles import load_profile
from edgebench.lab.runner_kinds import RUNNERS, RunnerKind

PROFILE = """schema = "edgebench.profile/1"
name = "old-board"
transport = "ssh"
runner = "native"
clusters = []
[energy]
source = "none"
"""


def test_every_kind_but_auto_has_one_measurement_method() -> None:
    from edgebench.measure.methods import METHODS

    assert tuple(RunnerKind) == RUNNERS
    assert [*METHODS, RunnerKind.AUTO] == list(RunnerKind)
    assert all(method.kind == kind for kind, method in METHODS.items())


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def phone_and_board(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, phone_key: str, board_key: str
) -> tuple[Path, dict[str, Any]]:
    """A lab of two ssh devices, each with one more line, read with its warnings captured."""
    lab = tmp_path / "lab.toml"
    lab.write_text(
        f'[devices.phone]\ntransport = "ssh"\nhost = "10.0.0.2"\n{phone_key}\n'
        f'[devices.board]\ntransport = "ssh"\nhost = "10.0.0.3"\n{board_key}\n'
    )
    with caplog.at_level(logging.WARNING):
        return lab, dict(load_lab(lab).devices)


def test_the_old_name_in_a_lab_file_reads_as_framework_tools(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lab, devices = phone_and_board(
        tmp_path, caplog, 'runner = "native"', 'runner = "framework-tools"'
    )
    assert devices["phone"].runner == devices["board"].runner == RunnerKind.FRAMEWORK_TOOLS
    (line,) = warnings_of(caplog)
    assert line.startswith(f"warning: lab {lab}, device phone: ")
    assert '"native" is now called "framework-tools"' in line


def test_the_old_name_in_a_profile_reads_as_framework_tools(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old-board.toml"
    path.write_text(PROFILE)
    with caplog.at_level(logging.WARNING):
        profile = load_profile(str(path))
    assert profile.runner == RunnerKind.FRAMEWORK_TOOLS
    (line,) = warnings_of(caplog)
    assert "profile" in line and '"native" is now called "framework-tools"' in line


def test_the_warning_is_one_edgebench_line(eb_env: dict[str, str], tmp_path: Path) -> None:
    lab = tmp_path / "lab.toml"
    lab.write_text('[devices.phone]\ntransport = "ssh"\nhost = "10.0.0.2"\nrunner = "native"\n')
    result = cli(["devices", "--lab", str(lab), "--devices", "local"], eb_env)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "native" in line]
    assert lines == [
        f'edgebench: warning: lab {lab}, device phone: runner "native" is now called '
        '"framework-tools"; it still works, but write "framework-tools"'
    ], result.stderr


def test_the_old_name_of_the_tools_folder_still_reads_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lab, devices = phone_and_board(tmp_path, caplog, 'native_bin = "bin"', 'tools_bin = "bin"')
    assert devices["phone"].tools_bin == devices["board"].tools_bin == tmp_path / "bin"
    (line,) = warnings_of(caplog)
    assert line == (
        f'warning: lab {lab}, device phone: "native_bin" is now called "tools_bin"; it still '
        'works, but write "tools_bin"'
    )


def test_the_old_and_the_new_name_of_the_tools_folder_together_are_refused(
    tmp_path: Path,
) -> None:
    lab = tmp_path / "lab.toml"
    lab.write_text(
        '[devices.phone]\ntransport = "ssh"\nhost = "10.0.0.2"\n'
        'native_bin = "old"\ntools_bin = "new"\n'
    )
    with pytest.raises(UserError, match=r'devices\.phone\.native_bin.*"tools_bin", which is set'):
        load_lab(lab)
