"""Which TCP ports a process listens on, read from /proc.

A server that cannot be told to bind port 0 (sshd refuses ``Port 0``, the adb server ``-P 0``) is
given a port that was free a moment before; another test process may take it first. Asking
whether something answers on the port cannot tell the two apart: the other process answers too.
The listening socket's inode in /proc/net/tcp, found among the server's own open files, can.
"""

from __future__ import annotations

import socket
from pathlib import Path

#: /proc/net/tcp's state column for a listening socket (TCP_LISTEN).
_LISTEN = "0A"


def free_port() -> int:
    """A port of 127.0.0.1 that nothing held when asked. Not reserved: check that the server
    given it listens there itself (:func:`listens_on`) and pick again when it does not."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        links = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process is gone
        return set()
    for link in links:
        try:
            target = str(link.readlink())
        except OSError:  # closed since listed
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def listening_ports(pid: int) -> set[int]:
    """The TCP ports (IPv4 and IPv6) that process ``pid`` has a listening socket on; empty once
    it is gone."""
    inodes = _socket_inodes(pid)
    ports = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == _LISTEN and int(fields[9]) in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listens_on(pid: int, port: int) -> bool:
    """True when process ``pid`` itself holds the listening socket on ``port``."""
    return port in listening_ports(pid)


__all__ = ["free_port", "listening_ports", "listens_on"]
