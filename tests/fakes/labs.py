"""Lab files naming the test peers: the emulated phone (emu-phone) and the sshd board (ssh-box)."""

import sys
from pathlib import Path

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


def write_phone_and_board_lab(folder: Path, phone, server) -> Path:
    """One lab with the emulated phone (emu-phone) and the sshd board (ssh-box)."""
    board = write_lab(folder / "ssh.toml", server, folder / "box-wd")
    lab = write_phone_lab(folder / "lab.toml", phone)
    lab.write_text(lab.read_text() + "\n" + board.read_text())
    return lab
