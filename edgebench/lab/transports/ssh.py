"""Boards over SSH (paramiko + SFTP), with host keys verified against known_hosts."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import re
import select
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from edgebench.errors import UserError
from edgebench.lab.transports.base import (
    HOST_RE,
    Command,
    CommandResult,
    EntryFields,
    OutputCallback,
    Transport,
    TransportError,
    TransportKind,
    link_error_reason,
    read_many_by_shell,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 15.0
DEFAULT_SSH_PORT = 22
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
_USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
# paramiko key names -> the names ssh-keyscan -t takes.
_KEYSCAN_TYPES = {"ssh-ed25519": "ed25519", "ssh-rsa": "rsa", "ecdsa-sha2-nistp256": "ecdsa"}
READ_CHUNK = 65536
#: What a dying link raises inside paramiko: a socket error (reset, closed, timed out), its own
#: SSHException, or EOFError when the server's side ends mid-message.
LINK_ERRORS = (OSError, paramiko.SSHException, EOFError)


@dataclass(frozen=True)
class SshTarget:
    name: str  # the lab's device name, for messages
    host: str
    port: int = DEFAULT_SSH_PORT
    user: str | None = None
    key: Path | None = None
    known_hosts: Path = Path(DEFAULT_KNOWN_HOSTS)


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class UnknownHostKey(Exception):
    def __init__(self, key: paramiko.PKey) -> None:
        super().__init__("unknown host key")
        self.key = key


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    """Refuse hosts that are not in known_hosts, keeping the offered key for the message."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey):
        raise UnknownHostKey(key)


def _key_file(target: SshTarget) -> str | None:
    """The lab's ``key`` as a path paramiko can open; a missing or unreadable file is named
    here (paramiko would report it as "cannot reach ... [Errno 2]")."""
    if target.key is None:
        return None
    path = target.key.expanduser()
    if not path.is_file():
        reason = "does not exist" if not path.exists() else "is not a file"
        raise UserError(
            f"device {target.name}: SSH key {target.key} {reason}; fix key = in the lab "
            "(the path of a private key file, e.g. ~/.ssh/id_ed25519)"
        )
    try:
        path.open("rb").close()
    except OSError as exc:
        raise UserError(
            f"device {target.name}: SSH key {target.key} cannot be read ({exc.strerror}); "
            "check its permissions"
        ) from None
    return str(path)


class SshTransport(Transport):
    kind = "ssh"

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None

    def describe(self) -> str:
        user = f"{self.target.user}@" if self.target.user else ""
        return f"ssh {user}{self.target.host}:{self.target.port}"

    # --- connection -----------------------------------------------------------------------

    def connect(self) -> paramiko.SSHClient:
        if self._client is not None and self._client.get_transport() is not None:
            transport = self._client.get_transport()
            if transport is not None and transport.is_active():
                return self._client
            self.close()
        target = self.target
        known_hosts = target.known_hosts.expanduser()
        client = paramiko.SSHClient()
        if known_hosts.is_file():
            client.load_host_keys(str(known_hosts))
        client.set_missing_host_key_policy(_RefuseUnknown())
        key_file = _key_file(target)
        try:
            client.connect(
                target.host,
                port=target.port,
                username=target.user,
                key_filename=key_file,
                allow_agent=True,
                look_for_keys=target.key is None,
                timeout=CONNECT_TIMEOUT_S,
                banner_timeout=CONNECT_TIMEOUT_S,
                auth_timeout=CONNECT_TIMEOUT_S,
            )
        except UnknownHostKey as exc:
            client.close()
            port_opt = f"-p {target.port} " if target.port != 22 else ""
            key_type = _KEYSCAN_TYPES.get(exc.key.get_name(), exc.key.get_name())
            raise UserError(
                f"device {target.name}: host key of {target.host}:{target.port} is not in "
                f"{known_hosts} ({exc.key.get_name()} {fingerprint(exc.key)}); if that "
                f"fingerprint is the board's, trust it with: ssh-keyscan {port_opt}"
                f"-t {key_type} {target.host} >> {known_hosts}"
            ) from None
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise UserError(
                f"device {target.name}: host key of {target.host}:{target.port} CHANGED "
                f"(now {fingerprint(exc.key)}); refusing to connect. If the board was "
                f"reinstalled, remove its old line from {known_hosts}"
            ) from None
        except paramiko.AuthenticationException:
            client.close()
            how = f"key {target.key}" if target.key else "the agent and ~/.ssh keys"
            raise UserError(
                f"device {target.name}: {target.user or 'the user'}@{target.host} refused "
                f"{how}; add the public key to the board's authorized_keys or set key = in the lab"
            ) from None
        except LINK_ERRORS as exc:
            client.close()
            raise TransportError(
                f"device {target.name}: cannot reach {target.host}:{target.port} over SSH: "
                f"{link_error_reason(exc)}"
            ) from exc
        self._client = client
        return client

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self.connect().open_sftp()
        return self._sftp

    def close(self) -> None:
        for closer in (self._sftp, self._client):
            if closer is not None:
                with contextlib.suppress(OSError, paramiko.SSHException):
                    closer.close()
        self._sftp = None
        self._client = None

    # --- commands -------------------------------------------------------------------------

    def _run(self, command: Command) -> CommandResult:
        line = command.shell_line()
        started = time.monotonic()
        try:
            transport = self.connect().get_transport()
            if transport is None:
                raise TransportError(f"device {self.target.name}: SSH session closed")
            channel = transport.open_session(timeout=CONNECT_TIMEOUT_S)
            channel.exec_command(line)
            if command.stdin is not None:
                channel.sendall(command.stdin.encode())
            channel.shutdown_write()
            out, err, timed_out = _drain(channel, started + command.timeout, command.on_output)
            code = None if timed_out else channel.recv_exit_status()
            channel.close()
        except LINK_ERRORS as exc:
            self.close()
            raise TransportError(
                f"device {self.target.name}: SSH connection to {self.target.host} lost: "
                f"{link_error_reason(exc)}"
            ) from exc
        return CommandResult(code, out, err, timed_out, time.monotonic() - started)

    def read_text(self, path: str) -> str | None:
        try:
            with self._sftp_client().open(path, "r") as fh:
                return fh.read().decode("utf-8", errors="replace")
        except OSError:
            return None
        except (paramiko.SSHException, EOFError) as exc:
            self.close()
            raise TransportError(
                f"device {self.target.name}: could not read {path}: {link_error_reason(exc)}"
            ) from exc

    def read_many(self, paths: Sequence[str]) -> dict[str, str | None]:
        return read_many_by_shell(self, paths)

    # --- files ----------------------------------------------------------------------------

    def copy_in(self, local: Path, remote: str) -> None:
        try:
            self._sftp_client().put(str(local), remote)
        except LINK_ERRORS as exc:
            self.close()
            raise TransportError(
                f"device {self.target.name}: could not copy {local.name} to {remote}: "
                f"{link_error_reason(exc)}"
            ) from exc

    def pull(self, remote: str, local: Path) -> bool:
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._sftp_client().get(remote, str(local))
        except FileNotFoundError:
            return False
        except LINK_ERRORS as exc:
            self.close()
            raise TransportError(
                f"device {self.target.name}: could not fetch {remote}: {link_error_reason(exc)}"
            ) from exc
        return True


def _drain(
    channel: paramiko.Channel, deadline: float, on_output: OutputCallback | None
) -> tuple[str, str, bool]:
    out = bytearray()
    err = bytearray()
    channel.settimeout(0.2)
    while True:
        progressed = False
        if channel.recv_ready():
            chunk = channel.recv(READ_CHUNK)
            out += chunk
            progressed = True
            if on_output is not None and chunk:
                on_output(chunk.decode("utf-8", errors="replace"))
        if channel.recv_stderr_ready():
            err += channel.recv_stderr(READ_CHUNK)
            progressed = True
        # The output ends at the channel's EOF, not at the exit status: sshd sends the status
        # when the process ends, and what is still in its pipes (a loaded host's whole probe
        # answer) can follow it.
        if (
            channel.exit_status_ready()
            and (channel.eof_received or channel.closed)
            and not channel.recv_ready()
            and not channel.recv_stderr_ready()
        ):
            break
        if time.monotonic() > deadline:
            return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), True
        if not progressed:
            # Wake on data or after 0.2 s at most; the deadline check above bounds the loop.
            select.select([channel], [], [], 0.2)
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), False


def _read_endpoint(entry: EntryFields) -> dict[str, Any]:
    host = entry.pattern("host", HOST_RE, '"orin.lab.local"', "a host name or address")
    if host is None:
        raise entry.fail("host", 'is missing (ssh devices need one, e.g. "orin.lab.local")')
    key = entry.raw("key")
    if isinstance(key, str) and ("PRIVATE KEY" in key or "\n" in key or len(key) > 1024):
        # Someone pasted the key itself: say so without repeating any of it.
        raise entry.fail(
            "key",
            "must be the path to a private key file, not the key itself (save the key "
            'to a file such as ~/.ssh/id_ed25519 and set key = "~/.ssh/id_ed25519")',
        )
    known_hosts = entry.host_path("known_hosts", '"~/.ssh/known_hosts"')
    return {
        "host": host,
        "port": entry.number("port", DEFAULT_SSH_PORT),
        "user": entry.pattern("user", _USER_RE, '"bench"', "a user name"),
        "key": entry.host_path("key", '"~/.ssh/id_ed25519"'),
        "known_hosts": known_hosts or Path(DEFAULT_KNOWN_HOSTS).expanduser(),
    }


def _address(endpoint: Mapping[str, Any]) -> str:
    user = f"{endpoint['user']}@" if endpoint.get("user") else ""
    return f"ssh {user}{endpoint['host']}:{endpoint['port']}"


def _open(name: str, endpoint: Mapping[str, Any]) -> SshTransport:
    return SshTransport(
        SshTarget(
            name,
            endpoint["host"],
            endpoint["port"],
            endpoint["user"],
            endpoint["key"],
            endpoint["known_hosts"],
        )
    )


KIND = TransportKind(
    name="ssh",
    keys=("host", "port", "user", "key", "known_hosts"),
    read_endpoint=_read_endpoint,
    address=_address,
    open=_open,
    identity=lambda endpoint: f"ssh {endpoint['host'].lower()}:{endpoint['port']}",
)
