"""The emulated aarch64 board as a lab device: reached over the real sshd (sessions chrooted
into the board) and as an emulated ADB phone whose shell runs inside the board.

The board is built once into the user cache (``edgebench board build``), like the converter
toolchains. Tests that need it skip, with what is missing and the line that fixes it, only on
a machine that cannot emulate aarch64: no root, no qemu-user-static, mmdebstrap or
binfmt_misc. On a machine that can, a failed build fails the tests.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgebench.lab import emulated_board
from fakes.adb_fixtures import AdbServer, EmulatedPhone, connect_phone, disconnect_phone
from fakes.ssh_fixtures import SshServer, start_sshd

BOARD_PYTHON = emulated_board.PYTHON


@pytest.fixture(scope="session", name="arm_board")
def arm_board_fixture() -> Path:
    """The board's root (built on first use, then reused from the cache)."""
    problem = emulated_board.build_problem()
    if problem:
        pytest.skip(f"this machine cannot emulate aarch64: {problem}")
    status = emulated_board.build_board()
    assert status.state == "installed", f"the arm64 board did not build: {status.detail}"
    assert status.root is not None
    return status.root


@pytest.fixture(scope="module", name="board_sshd")
def board_sshd_fixture(
    arm_board: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("board-sshd"), chroot=arm_board)
    yield server
    server.stop()


@pytest.fixture(name="board_phone")
def board_phone_fixture(arm_board: Path, adb_server: AdbServer) -> Iterator[EmulatedPhone]:
    phone = connect_phone(adb_server, arm_board, board=True)
    try:
        yield phone
    finally:
        disconnect_phone(phone)


@pytest.fixture(name="board_work_dir")
def board_work_dir_fixture(arm_board: Path) -> Iterator[str]:
    """A fresh work dir inside the board (its path as the board sees it), one level under a
    folder of its own, so that its device lock (kept beside the work dir) is its own too."""
    folder = f"/data/local/tmp/eb-test-{uuid.uuid4().hex[:10]}"
    yield f"{folder}/work"
    shutil.rmtree(arm_board / folder.lstrip("/"), ignore_errors=True)


def board_lab_entry(
    name: str,
    work_dir: str,
    *,
    server: SshServer | None = None,
    phone: EmulatedPhone | None = None,
    extra: list[str] | None = None,
) -> str:
    """A ``[devices.NAME]`` table for the board over SSH (``server``) or ADB (``phone``)."""
    lines = [f"[devices.{name}]"]
    if server is not None:
        lines += [
            'transport = "ssh"',
            f'host = "{server.host}"',
            f"port = {server.port}",
            f'user = "{server.user}"',
            f'key = "{server.client_key}"',
            f'known_hosts = "{server.known_hosts}"',
        ]
    elif phone is not None:
        lines += ['transport = "adb"', f'serial = "{phone.serial}"', f"adb_port = {phone.adb_port}"]
    lines += [f'python = "{BOARD_PYTHON}"', f'work_dir = "{work_dir}"', *(extra or [])]
    return "\n".join(lines) + "\n"


def phone_without_python_lab(path: Path, phone: EmulatedPhone, work_dir: str) -> Path:
    """A lab file at ``path`` with the board as the ADB phone ``phone`` whose Python does not
    run (``/system/bin/python3``), so runner "auto" picks edgebench-native; timing is not
    marked emulated (``emulated = false``: the samples a phone would give)."""
    entry = board_lab_entry(
        "phone", work_dir, phone=phone, extra=["emulated = false", 'runner = "auto"']
    )
    path.write_text(entry.replace(f'python = "{BOARD_PYTHON}"', 'python = "/system/bin/python3"'))
    return path
