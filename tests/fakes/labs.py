"""Lab files naming the test peers: the emulated phone (emu-phone) and the sshd board (ssh-box);
as helpers, and as fixtures for the common labs (``ssh_lab``, ``phone_lab``,
``phone_and_board_lab``), each written to the test's own tmp_path."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakes.ssh_fixtures import SshServer


def write_lab(path: Path, server: SshServer, work_dir: Path, **extra: str) -> Path:
    lines = [
        "[devices.ssh-box]",
        'transport = "ssh"',
        f'host = "{server.host}"',
        f"port = {server.port}",
        f'user = "{server.user}"',
        f'key = "{server.client_key}"',
        f'known_hosts = "{extra.pop("known_hosts", server.known_hosts)}"',
        f'python = "{sys.executable}"',
        f'work_dir = "{work_dir}"',
        'profile = "x86-generic"',
    ]
    lines += [f'{k} = "{v}"' for k, v in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_phone_lab(path: Path, phone, extra_lines: list[str] | None = None) -> Path:
    lines = [
        "[devices.emu-phone]",
        'transport = "adb"',
        f'serial = "{phone.serial}"',
        f"adb_port = {phone.adb_port}",
        f'python = "{sys.executable}"',
        f'work_dir = "{phone.sandbox / "data" / "local" / "tmp" / "edgebench"}"',
        *(extra_lines or []),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_tool_cell_on_phone(
    run_cli, phone, tools_bin: Path, lab: Path, args: list[str]
) -> tuple[dict, str]:
    """``edgebench run ARGS --devices emu-phone --format jsonl`` with the phone a
    framework-tools device whose ``tools_bin`` is ``tools_bin``: the run's one record and its
    stderr."""
    write_phone_lab(lab, phone, ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'])
    argv = ["run", *args, "--lab", str(lab), "--devices", "emu-phone", "--format", "jsonl"]
    done = run_cli(argv, timeout=900)
    assert done.returncode in (0, 1), done.stderr
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    return record, done.stderr


def write_phone_and_board_lab(folder: Path, phone, server) -> Path:
    """One lab with the emulated phone (emu-phone) and the sshd board (ssh-box)."""
    board = write_lab(folder / "ssh.toml", server, folder / "box-wd")
    lab = write_phone_lab(folder / "lab.toml", phone)
    lab.write_text(lab.read_text() + "\n" + board.read_text())
    return lab


@dataclass(frozen=True)
class SshLab:
    """A lab file whose one device, ssh-box, is an sshd on this machine."""

    path: Path
    work_dir: Path  # ssh-box's work_dir, readable here (the sshd is local)
    server: SshServer


@pytest.fixture
def ssh_lab(shared_sshd: SshServer, tmp_path: Path) -> SshLab:
    """ssh-box on the module's sshd, with its work_dir in this test's tmp_path."""
    work_dir = tmp_path / "wd"
    return SshLab(write_lab(tmp_path / "lab.toml", shared_sshd, work_dir), work_dir, shared_sshd)


@pytest.fixture
def phone_lab(emulated_phone, tmp_path: Path) -> Path:
    """A lab file naming this test's emulated phone as emu-phone."""
    return write_phone_lab(tmp_path / "lab.toml", emulated_phone)


@pytest.fixture
def phone_and_board_lab(emulated_phone, shared_sshd: SshServer, tmp_path: Path) -> Path:
    """A lab file naming this test's emulated phone (emu-phone) and the module's sshd
    (ssh-box)."""
    return write_phone_and_board_lab(tmp_path, emulated_phone, shared_sshd)
