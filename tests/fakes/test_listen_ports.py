"""Servers the tests start on a picked port are their own: when another process took the port
first (two pytest-xdist workers picking at once), the start tries a fresh port instead of
taking the other server, which answers there too, for its own."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

from fakes.adb_fixtures import AdbServer, start_adb_server
from fakes.listen_ports import free_port, listening_ports, listens_on
from fakes.ssh_fixtures import start_sshd


def taken_first(port: int) -> Callable[[], int]:
    """A port picker whose first pick is ``port`` (held by someone else), then free ones."""
    picks: Iterator[int] = iter([port])
    return lambda: next(picks, None) or free_port()


def test_a_listening_socket_is_found_among_its_process_s_files():
    with socket.socket() as listener, socket.socket() as bound:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        bound.bind(("127.0.0.1", 0))  # bound, not listening
        ports = listening_ports(os.getpid())
        assert listener.getsockname()[1] in ports
        assert bound.getsockname()[1] not in ports


def test_sshd_started_on_a_taken_port_moves_to_a_port_of_its_own(tmp_path: Path):
    with socket.socket() as other:  # another test's server: it accepts connections
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        server = start_sshd(tmp_path / "sshd", pick_port=taken_first(taken))
        try:
            assert server.port != taken
            assert listens_on(server.process.pid, server.port)
            assert f"[127.0.0.1]:{server.port} " in server.known_hosts.read_text()
        finally:
            server.stop()


def test_an_adb_server_started_on_another_adb_server_s_port_moves_on(
    adb_server: AdbServer, tmp_path: Path
):
    """The session's server answers host:version on its port as well as this one would: only
    the listening socket tells whose it is."""
    server = start_adb_server(tmp_path / "adb", pick_port=taken_first(adb_server.port))
    try:
        assert server.port != adb_server.port
        assert listens_on(server.proc.pid, server.port)
        assert server.adb("version", check=True).returncode == 0
    finally:
        server.stop()
    assert server.proc.poll() is not None
    assert adb_server.proc.poll() is None  # the session's server is untouched
