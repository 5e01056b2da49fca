"""A real OpenSSH server on 127.0.0.1 for the tests, started and stopped by PID."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgebench.lab.emulated_board import board_command
from fakes.listen_ports import free_port, listens_on

SSHD = "/usr/sbin/sshd"


@dataclass
class SshServer:
    host: str
    port: int
    user: str
    client_key: Path
    known_hosts: Path  # holds this server's host key
    host_public_key: str
    process: subprocess.Popen
    config: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


SSHD_START_ATTEMPTS = 5


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _wait_listening(port: int, process: subprocess.Popen, limit_s: float = 10.0) -> None:
    """Bounded wait until this sshd itself listens on ``port`` (its own socket, not whatever
    answers there: another test's server may hold the port), failing fast if sshd exited."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"sshd exited with {process.returncode}: {err}")
        if listens_on(process.pid, port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on {port} within {limit_s} s")


def _unsafe_chroot_component(chroot: Path) -> Path | None:
    """The first folder on the way to ``chroot`` that sshd's ChrootDirectory check rejects (not
    owned by root, or writable by group or others, as /tmp is), or None. sshd would accept the
    login and then end every session: paramiko sees "EOF during negotiation"."""
    resolved = chroot.resolve()
    for folder in (*reversed(resolved.parents), resolved):
        info = folder.stat()
        if info.st_uid != 0 or info.st_mode & 0o022:
            return folder
    return None


def _launch_sshd(
    folder: Path, port: int, host_key: Path, authorized: Path, chroot: Path | None
) -> subprocess.Popen:
    """sshd started with its config (``folder/sshd_config``) on ``port``, once it accepts
    there; RuntimeError if it exits first (the port was taken) or does not listen in time."""
    config = folder / "sshd_config"
    config.write_text(
        "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"Port {port}",
                f"HostKey {host_key}",
                f"PidFile {folder / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "UsePAM no",
                "StrictModes no",
                "PermitRootLogin prohibit-password",
                "Subsystem sftp internal-sftp",
                "LogLevel ERROR",
                # bash sources ~/.bashrc for a command from sshd only as a top-level shell;
                # this host's rc (pyenv init) cost 0.25 s a command. SHLVL=1 skips it, as
                # on a device whose shell has no rc: a command now takes 0.05 s.
                "SetEnv SHLVL=1",
                *([f"ChrootDirectory {chroot}"] if chroot else []),
                "",
            ]
        )
    )
    argv = [SSHD, "-D", "-e", "-f", str(config)]
    if chroot is not None:
        argv = board_command(chroot, argv, chroot=False)
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_listening(port, process)
    except BaseException:
        process.kill()
        process.wait(timeout=10)
        raise
    return process


def start_sshd(
    folder: Path, chroot: Path | None = None, pick_port: Callable[[], int] = free_port
) -> SshServer:
    """sshd on a free port of 127.0.0.1 (``pick_port`` picks each try's). With ``chroot`` (an
    emulated board's root) every session runs chrooted there, from a private mount namespace
    that binds /proc, /sys and /dev into the root: the login shell and everything it starts
    are the board's programs."""
    if not os.access(SSHD, os.X_OK):
        pytest.skip("openssh-server is not installed (.ci/run installs it)")
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (openssh-client; .ci/run installs it)")
    unsafe = _unsafe_chroot_component(chroot) if chroot else None
    if unsafe:
        pytest.skip(
            f"sshd refuses ChrootDirectory {chroot}: {unsafe} is writable by others or not "
            "root's; keep the board under a root-owned folder (EDGEBENCH_BOARDS_DIR)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    host_key = folder / "host_key"
    client_key = folder / "client_key"
    _keygen(host_key)
    _keygen(client_key)
    authorized = folder / "authorized_keys"
    shutil.copy(client_key.with_suffix(".pub"), authorized)
    # sshd refuses Port 0, so the port is picked free here and not held: another test process
    # may take it before sshd binds it, and then sshd exits at once. The server counts as up
    # only once its own socket listens on the port; else a fresh port is tried (bounded).
    for attempt in range(1, SSHD_START_ATTEMPTS + 1):
        port = pick_port()
        try:
            process = _launch_sshd(folder, port, host_key, authorized, chroot)
            break
        except RuntimeError:
            if attempt == SSHD_START_ATTEMPTS:
                raise
    host_public = host_key.with_suffix(".pub").read_text().split()
    known_hosts = folder / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_public[0]} {host_public[1]}\n")
    return SshServer(
        host="127.0.0.1",
        port=port,
        user=getpass.getuser(),
        client_key=client_key,
        known_hosts=known_hosts,
        host_public_key=" ".join(host_public[:2]),
        process=process,
        config=folder / "sshd_config",
    )


@pytest.fixture
def sshd(tmp_path: Path):
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()
    assert server.process.poll() is not None


@pytest.fixture(scope="module")
def shared_sshd(tmp_path_factory: pytest.TempPathFactory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


__all__ = ["SshServer", "free_port", "os", "shared_sshd", "sshd", "start_sshd"]
