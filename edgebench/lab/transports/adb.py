"""Phones over ADB, through the adb server with adbutils."""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import adbutils

from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.transports.base import (
    HOST_RE,
    Command,
    CommandResult,
    EntryFields,
    Transport,
    TransportError,
    TransportKind,
    link_error_reason,
    quote_argv,
    read_many_by_shell,
)

DEFAULT_ADB_HOST = "127.0.0.1"
DEFAULT_ADB_PORT = 5037
_SERIAL_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
#: A device reached over the network (`adb connect HOST:PORT`), not over USB.
_NETWORK_SERIAL_RE = re.compile(r"[A-Za-z0-9_.-]+:\d{1,5}")
#: How long to wait for the adb server to accept a connection before calling it gone.
SERVER_CONNECT_TIMEOUT_S = 3.0
#: How long the adb server may take over a request that names no timeout of its own (the
#: device list, a device's features, a sync transfer's next reply) before it is called gone:
#: without one, a server that accepts but never answers would stall the run for good.
SERVER_REPLY_TIMEOUT_S = 20.0
#: What a dying link raises inside adbutils: its own errors, a socket error (reset, refused,
#: closed), a socket timeout, or EOFError when a stream ends mid-packet.
LINK_ERRORS = (adbutils.AdbError, OSError, EOFError)


@dataclass(frozen=True)
class AdbTarget:
    name: str  # the lab's device name, for messages
    serial: str
    adb_host: str = DEFAULT_ADB_HOST
    adb_port: int = DEFAULT_ADB_PORT


class _NoSpawnConnection(adbutils.AdbConnection):
    """adbutils' connection runs `adb start-server` when the server does not answer. That
    server listens on adb's default port whatever the lab's adb_port, and outlives edgebench;
    this connection only connects (AdbConnectionError or AdbTimeout when nothing answers)."""

    def _safe_connect(self):
        return self._create_socket()


class _NoSpawnClient(adbutils.AdbClient):
    """An adb client whose every connection (device shell, sync, list) is a _NoSpawnConnection."""

    def make_connection(self, timeout: float | None = None) -> adbutils.AdbConnection:
        connection = _NoSpawnConnection(self.host, self.port)
        connection.conn.settimeout(timeout or SERVER_REPLY_TIMEOUT_S)
        return connection


class AdbTransport(Transport):
    kind = "adb"

    def __init__(self, target: AdbTarget) -> None:
        self.target = target
        self._client = _NoSpawnClient(host=target.adb_host, port=target.adb_port)

    def describe(self) -> str:
        return f"adb {self.target.serial}"

    def _server_unreachable(self) -> str | None:
        """Why the adb server does not accept connections, or None when it does. Asked first
        because adbutils, finding no server, starts one itself (`adb start-server`, on its
        default port): edgebench reports the dead server instead of leaving a daemon behind."""
        address = (self.target.adb_host, self.target.adb_port)
        try:
            with socket.create_connection(address, timeout=SERVER_CONNECT_TIMEOUT_S):
                return None
        except OSError as exc:
            return exc.strerror or link_error_reason(exc)

    def _no_server(self, detail: str) -> TransportError:
        return TransportError(
            f"device {self.target.name}: no adb server at "
            f"{self.target.adb_host}:{self.target.adb_port} ({detail}); start it with "
            f"`adb -P {self.target.adb_port} start-server`"
        )

    def _device(self) -> adbutils.AdbDevice:
        unreachable = self._server_unreachable()
        if unreachable is not None:
            raise self._no_server(unreachable)
        try:
            states = {d.serial: d for d in self._client.list()}
        except LINK_ERRORS as exc:
            raise self._no_server(link_error_reason(exc)) from exc
        if self.target.serial not in states:
            raise self._not_connected(len(states))
        return self._client.device(self.target.serial)

    def _not_connected(self, others: int) -> TransportError:
        """The server answers but lacks the serial. A network serial (host:port) is forgotten
        whenever the server restarts, so the fix is `adb connect`, not the cable."""
        host, port, serial = self.target.adb_host, self.target.adb_port, self.target.serial
        server = f"the adb server at {host}:{port}"
        listing = "it lists no device" if not others else f"it lists {others} others"
        if _NETWORK_SERIAL_RE.fullmatch(serial):
            fix = (
                f"connect it with `adb -P {port} connect {serial}` (an adb server forgets "
                "network devices when it restarts)"
            )
        else:
            fix = f"check the USB cable and USB debugging (`adb -P {port} devices` lists them)"
        return TransportError(
            f"device {self.target.name}: {serial} is not connected to {server} ({listing}); {fix}"
        )

    def _run(self, command: Command) -> CommandResult:
        line = command.shell_line()
        if command.stdin is not None:
            raise TransportError("the adb transport takes input through files, not stdin")
        started = time.monotonic()
        device = self._device()
        try:
            result = device.shell2(line, timeout=command.timeout, v2=True)
        except adbutils.AdbTimeout:
            return CommandResult(None, "", "", True, time.monotonic() - started)
        except LINK_ERRORS as exc:
            raise TransportError(
                f"device {self.target.name}: adb connection to {self.target.serial} lost: "
                f"{link_error_reason(exc)}"
            ) from exc
        if command.on_output is not None and result.stdout:
            command.on_output(result.stdout)
        return CommandResult(
            result.returncode, result.stdout, result.stderr, False, time.monotonic() - started
        )

    def read_text(self, path: str) -> str | None:
        return self.read_many([path])[path]

    def read_many(self, paths: Sequence[str]) -> dict[str, str | None]:
        return read_many_by_shell(self, paths)

    def make_folders(self, folders: Sequence[str]) -> None:
        try:
            self._device().shell2(quote_argv(["mkdir", "-p", *folders]), v2=True)
        except LINK_ERRORS as exc:
            reason = link_error_reason(exc)
            raise TransportError(
                f"device {self.target.name}: could not make {folders[0]}: {reason}"
            ) from exc

    def copy_in(self, local: Path, remote: str) -> None:
        device = self._device()
        try:
            device.sync.push(local, remote)
        except LINK_ERRORS as exc:
            raise TransportError(
                f"device {self.target.name}: could not push {local.name} to {remote}: "
                f"{link_error_reason(exc)}"
            ) from exc

    def pull(self, remote: str, local: Path) -> bool:
        device = self._device()
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not device.sync.exists(remote):
                return False
            device.sync.pull(remote, local)
        except LINK_ERRORS as exc:
            raise TransportError(
                f"device {self.target.name}: could not pull {remote}: {link_error_reason(exc)}"
            ) from exc
        return True


def _default_adb_port() -> int:
    """adb's own default: $ANDROID_ADB_SERVER_PORT when set, else 5037."""
    value = os.environ.get("ANDROID_ADB_SERVER_PORT", "")
    if value.isascii() and value.isdigit() and 1 <= int(value) <= 65535:
        return int(value)
    return DEFAULT_ADB_PORT


def _read_endpoint(entry: EntryFields) -> dict[str, Any]:
    serial = entry.pattern("serial", _SERIAL_RE, '"R5CT1234ABC"', "an adb serial")
    if serial is None:
        raise entry.fail("serial", "is missing (adb devices need one; `adb devices` lists them)")
    return {
        "serial": serial,
        "adb_host": entry.pattern("adb_host", HOST_RE, '"127.0.0.1"', "a host name")
        or DEFAULT_ADB_HOST,
        "adb_port": entry.number("adb_port", _default_adb_port()),
    }


def _address(endpoint: Mapping[str, Any]) -> str:
    server = ""
    if (endpoint["adb_host"], endpoint["adb_port"]) != (DEFAULT_ADB_HOST, DEFAULT_ADB_PORT):
        server = f" via {endpoint['adb_host']}:{endpoint['adb_port']}"
    return f"adb {endpoint['serial']}{server}"


def _open(name: str, endpoint: Mapping[str, Any]) -> AdbTransport:
    return AdbTransport(
        AdbTarget(name, endpoint["serial"], endpoint["adb_host"], endpoint["adb_port"])
    )


KIND = TransportKind(
    name="adb",
    keys=("serial", "adb_host", "adb_port"),
    read_endpoint=_read_endpoint,
    address=_address,
    open=_open,
    default_work_dir="/data/local/tmp/edgebench",
    default_runner=RunnerKind.AUTO,  # most phones have no Python
    home_relative_work_dir=False,
    # As the host lock keys it (the serial alone): one phone seen through two servers is one.
    identity=lambda endpoint: f"adb serial {endpoint['serial']}",
)
