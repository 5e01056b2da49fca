"""A fake Android device that speaks the device side of the ADB protocol over TCP.

The real adb server (`adb connect 127.0.0.1:PORT`) talks to it exactly as it talks to a phone
in wireless-debugging mode, so the host side under test (adb CLI, adbutils, edgebench's ADB
transport) is the real thing; only the phone is emulated. The "phone" is a sandbox directory:
commands run with ``/bin/sh -c`` in it, and sync paths are real host paths. With ``board=True``
the sandbox is the root of an emulated aarch64 board (edgebench.lab.emulated_board): commands
run chrooted in it through qemu, and device paths are absolute paths inside it.

Written from the public protocol descriptions in AOSP ``packages/modules/adb``:

* transport (``protocol.txt``): 24-byte little-endian header ``command, arg0, arg1,
  data_length, data_check, magic``; ``data_check`` is the *byte sum* of the payload (not a
  CRC, whatever the field name says) and need not be checked from version 0x01000001 on;
  ``magic == command ^ 0xffffffff``. Streams: OPEN / OKAY / WRTE / CLSE with one WRTE in
  flight per stream (the next WRTE waits for the peer's OKAY).
* shell protocol (``shell_protocol.h``): packets ``[id u8][length u32 le][data]``, ids
  0 stdin, 1 stdout, 2 stderr, 3 exit (1 byte), 4 close-stdin, 5 window size.
* sync (``SYNC.TXT``, ``file_sync_protocol.h``): requests ``[id][length u32][path]``; STAT
  answers ``STAT mode size mtime`` (u32 each), STA2/LST2 the ``sync_stat_v2`` struct, LIST/LIS2
  DENT/DNT2 entries then DONE, SEND ``path,mode`` + DATA* + DONE(mtime) -> OKAY/FAIL, RECV
  -> DATA* + DONE or FAIL, QUIT ends the session.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shlex
import signal
import socket
import stat
import struct
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from edgebench.lab.emulated_board import board_command

log = logging.getLogger(__name__)

# --- transport constants ----------------------------------------------------------------------


def _cmd(tag: bytes) -> int:
    return int.from_bytes(tag, "little")


A_CNXN = _cmd(b"CNXN")
A_AUTH = _cmd(b"AUTH")
A_OPEN = _cmd(b"OPEN")
A_OKAY = _cmd(b"OKAY")
A_CLSE = _cmd(b"CLSE")
A_WRTE = _cmd(b"WRTE")
A_STLS = _cmd(b"STLS")
A_SYNC = _cmd(b"SYNC")
_COMMAND_NAMES = {
    A_CNXN: "CNXN",
    A_AUTH: "AUTH",
    A_OPEN: "OPEN",
    A_OKAY: "OKAY",
    A_CLSE: "CLSE",
    A_WRTE: "WRTE",
    A_STLS: "STLS",
    A_SYNC: "SYNC",
}

A_VERSION_MIN = 0x01000000
A_VERSION_SKIP_CHECKSUM = 0x01000001
A_VERSION = 0x01000001
MAX_PAYLOAD = 256 * 1024
# What we accept from the host: newer adb servers may send up to 1 MiB if we let them; we
# announce 256 KiB, but tolerate anything up to 1 MiB rather than dropping the connection.
_MAX_ACCEPTED_PAYLOAD = 1024 * 1024
HEADER = struct.Struct("<6I")
FEATURES = ("shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir")

# --- shell protocol ---------------------------------------------------------------------------
SHELL_STDIN, SHELL_STDOUT, SHELL_STDERR, SHELL_EXIT, SHELL_CLOSE_STDIN, SHELL_WINSIZE = range(6)
SHELL_HEADER = struct.Struct("<BI")

# --- sync protocol ----------------------------------------------------------------------------
SYNC_DATA_MAX = 64 * 1024
SYNC_PATH_MAX = 1024
SYNC_REQUEST = struct.Struct("<4sI")
STAT_V1 = struct.Struct("<4sIII")
# sync_stat_v2: id, error u32; dev, ino u64; mode, nlink, uid, gid u32; size u64;
# atime, mtime, ctime i64 -- 72 bytes, packed.
STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")
DENT_V1 = struct.Struct("<4sIIII")
DENT_V2 = struct.Struct("<4sIQQIIIIQqqqI")  # sync_stat_v2 layout + namelen

#: PATH of a command on a board: Android's /system/bin first, then Debian's.
BOARD_PATH = "/system/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_PROPS: dict[str, str] = {
    "ro.product.model": "EmuPhone",
    "ro.product.name": "emu",
    "ro.product.device": "emu",
    "ro.build.version.release": "14",
    "ro.build.version.sdk": "34",
    "ro.soc.model": "SM8550",
    "ro.board.platform": "kalama",
    "ro.product.cpu.abi": "arm64-v8a",
}

#: Where a phone's ``dumpsys SERVICE`` output is kept, relative to the sandbox: one file per
#: service (fakes/phone_profiles.py writes SurfaceFlinger's).
DUMPS_DIR = "system/etc/dumpsys"

# Bound on every wait in the emulator: waits loop on a state change, re-checking stop/close at
# least this often, so nothing can block past stop() even if a notification is missed.
_POLL = 0.25
_JOIN_TIMEOUT = 5.0
_JOIN_ROUNDS = 10

_GETPROP_SCRIPT = """#!/bin/sh
# getprop for the ADB device emulator: reads key=value lines from the props file.
props={props}
if [ "$#" -eq 0 ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in ''|'#'*) continue ;; esac
        printf '[%s]: [%s]\\n' "${{line%%=*}}" "${{line#*=}}"
    done < "$props"
    exit 0
fi
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
        "$1="*) printf '%s\\n' "${{line#*=}}"; exit 0 ;;
    esac
done < "$props"
printf '%s\\n' "${{2-}}"
"""


def checksum(data: bytes) -> int:
    """ADB's data_check: the unsigned 32-bit sum of the payload bytes."""
    return sum(data) & 0xFFFFFFFF


def pack_message(command: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    header = HEADER.pack(command, arg0, arg1, len(data), checksum(data), command ^ 0xFFFFFFFF)
    return header + data


def _command_name(command: int) -> str:
    return _COMMAND_NAMES.get(command, f"0x{command:08x}")


class _StreamClosed(Exception):
    """The stream was closed (by either side, or the connection died)."""


@dataclass
class ConnectInfo:
    """What the host sent in its CNXN (kept for tests and diagnostics)."""

    version: int
    maxdata: int
    identity: str
    checksum_zero: bool


# --- streams ----------------------------------------------------------------------------------


class _Stream:
    """One multiplexed stream on a connection: our id, the host's id, flow control, inbound data.

    Outbound: ``write`` splits into WRTEs of at most the negotiated maxdata (the smaller of the
    host's and ours: the host rejects anything larger than that) and sends each only once the
    host has acknowledged (OKAY) the previous one. An OPEN implies the host is ready, so the
    first WRTE may go out right away. Inbound: WRTE payloads queue up; the OKAY that lets the host
    send the next one goes out when a payload is taken off the queue (real backpressure).
    """

    def __init__(self, conn: _Connection, local_id: int, remote_id: int, service: str) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._can_send = True
        self._inbound: deque[bytes] = deque()
        self._buffer = bytearray()
        self.closed = False
        self.closed_by_peer = False

    # events from the connection's reader thread
    def on_okay(self) -> None:
        with self._cond:
            self._can_send = True
            self._cond.notify_all()

    def on_write(self, data: bytes) -> None:
        with self._cond:
            if not self.closed:
                self._inbound.append(data)
                self._cond.notify_all()

    def on_peer_close(self) -> None:
        with self._cond:
            self.closed = True
            self.closed_by_peer = True
            self._cond.notify_all()

    # service side
    def write(self, data: bytes) -> None:
        """Send ``data`` as WRTEs, honouring the host's maxdata and one-WRTE-in-flight."""
        view = memoryview(data)
        with self._write_lock:
            while view:
                chunk = bytes(view[: self.conn.peer_maxdata])
                view = view[len(chunk) :]
                with self._cond:
                    while not self._can_send and not self.closed:
                        self._cond.wait(_POLL)
                    if self.closed:
                        raise _StreamClosed(self.service)
                    self._can_send = False
                if not self.conn.send(A_WRTE, self.local_id, self.remote_id, chunk):
                    self.mark_closed()
                    raise _StreamClosed(self.service)

    def read_packet(self) -> bytes | None:
        """The next inbound WRTE payload, or None once the stream is closed."""
        with self._cond:
            while not self._inbound and not self.closed:
                self._cond.wait(_POLL)
            if not self._inbound:
                return None
            data = self._inbound.popleft()
            closed = self.closed
        if not closed:
            self.conn.send(A_OKAY, self.local_id, self.remote_id)
        return data

    def read_exact(self, size: int) -> bytes:
        """Read exactly ``size`` bytes of the inbound byte stream; raise if it closes first."""
        while len(self._buffer) < size:
            data = self.read_packet()
            if data is None:
                raise _StreamClosed(self.service)
            self._buffer += data
        result = bytes(self._buffer[:size])
        del self._buffer[:size]
        return result

    def mark_closed(self) -> None:
        """Closed without telling the host (the connection is gone)."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def close(self) -> None:
        """Close our end: CLSE(local, remote) once, unless the host closed it first."""
        with self._cond:
            already = self.closed
            self.closed = True
            self._cond.notify_all()
        self.conn.forget(self)
        if not already:
            self.conn.send(A_CLSE, self.local_id, self.remote_id)


# --- connection -------------------------------------------------------------------------------


class _Connection:
    """One TCP connection from the adb server: a reader thread plus per-stream service threads."""

    def __init__(self, emulator: AdbDeviceEmulator, sock: socket.socket, peer: str) -> None:
        self.emulator = emulator
        self.sock = sock
        self.peer = peer
        self.peer_maxdata = 4096  # until the host's CNXN says otherwise
        self.version = A_VERSION_MIN
        self.connected = False
        self.connect_info: ConnectInfo | None = None
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._next_id = 1
        self._dead = False

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> bool:
        message = pack_message(command, arg0, arg1, data)
        with self._send_lock:
            if self._dead:
                return False
            try:
                self.sock.sendall(message)
            except OSError as exc:
                log.debug("%s: send %s failed: %s", self.peer, _command_name(command), exc)
                self._dead = True
                return False
        return True

    @property
    def dead(self) -> bool:
        return self._dead

    def forget(self, stream: _Stream) -> None:
        with self._lock:
            self._streams.pop(stream.local_id, None)

    def shutdown(self) -> None:
        """Drop the connection at once (stop(), or a protocol error): no goodbye, like a cable
        being pulled. Wakes the reader thread, a sender stuck in sendall(), and every stream."""
        self._dead = True  # no lock: a sender may hold it, blocked until the shutdown below
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            streams = list(self._streams.values())
            self._streams.clear()
        for stream in streams:
            stream.on_peer_close()

    def _recv_exact(self, size: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < size:
            try:
                chunk = self.sock.recv(size - len(buf))
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def run(self) -> None:
        try:
            while not self.emulator.stopping:
                header = self._recv_exact(HEADER.size)
                if header is None:
                    break
                command, arg0, arg1, length, check, magic = HEADER.unpack(header)
                if magic != command ^ 0xFFFFFFFF:
                    log.warning("%s: bad magic for %s, dropping", self.peer, _command_name(command))
                    break
                if length > _MAX_ACCEPTED_PAYLOAD:
                    log.warning("%s: payload of %d bytes is too large", self.peer, length)
                    break
                data = self._recv_exact(length) if length else b""
                if data is None:
                    break
                if self.version < A_VERSION_SKIP_CHECKSUM and check != checksum(data):
                    log.warning("%s: bad checksum on %s", self.peer, _command_name(command))
                    break
                log.debug(
                    "%s: <- %s(%d, %d, %d bytes)",
                    self.peer,
                    _command_name(command),
                    arg0,
                    arg1,
                    length,
                )
                if not self._dispatch(command, arg0, arg1, data, check):
                    break
        finally:
            self.shutdown()
            with contextlib.suppress(OSError):
                self.sock.close()
            log.debug("%s: connection closed", self.peer)

    def _dispatch(self, command: int, arg0: int, arg1: int, data: bytes, check: int) -> bool:
        if command == A_CNXN:
            return self._on_cnxn(arg0, arg1, data, check)
        if not self.connected:
            # protocol.txt: messages before CONNECT must be ignored.
            log.debug("%s: ignoring %s before CNXN", self.peer, _command_name(command))
            return True
        if command == A_OPEN:
            self._on_open(arg0, data)
            return True
        with self._lock:
            stream = self._streams.get(arg1)
        if command == A_OKAY:
            if stream is not None and stream.remote_id == arg0:
                stream.on_okay()
        elif command == A_WRTE:
            if stream is not None:
                stream.on_write(data)
        elif command == A_CLSE:
            if stream is not None:
                self.forget(stream)
                stream.on_peer_close()
        else:
            # AUTH/STLS are never requested by us; anything else is unknown: close, per spec.
            log.warning("%s: unexpected %s, dropping connection", self.peer, _command_name(command))
            return False
        return True

    def _on_cnxn(self, version: int, maxdata: int, data: bytes, check: int) -> bool:
        identity = data.rstrip(b"\0").decode("utf-8", "replace")
        if version < A_VERSION_MIN or maxdata < 1024:
            log.warning(
                "%s: unsupported CNXN version=0x%08x maxdata=%d", self.peer, version, maxdata
            )
            return False
        self.version = min(version, A_VERSION)
        # The host checks every message against min(its maxdata, ours), so that is our limit.
        self.peer_maxdata = min(maxdata, MAX_PAYLOAD)
        self.connect_info = ConnectInfo(version, maxdata, identity, check == 0)
        self.emulator.record_connect(self.connect_info)
        log.info(
            "%s: host CNXN version=0x%08x maxdata=%d identity=%r",
            self.peer,
            version,
            maxdata,
            identity,
        )
        # A reconnecting host starts over: forget any streams of the previous session.
        if self.connected:
            with self._lock:
                old = list(self._streams.values())
                self._streams.clear()
            for stream in old:
                stream.on_peer_close()
        self.connected = True
        return self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, self.emulator.banner().encode())

    def _on_open(self, remote_id: int, data: bytes) -> None:
        service = data.rstrip(b"\0").decode("utf-8", "replace")
        self.emulator.record_service(service)
        handler = self.emulator.service_handler(service)
        if remote_id == 0 or handler is None:
            log.info("%s: refusing service %r", self.peer, service)
            self.send(A_CLSE, 0, remote_id)
            return
        with self._lock:
            local_id = self._next_id
            self._next_id = self._next_id % 0x7FFFFFFF + 1
            stream = _Stream(self, local_id, remote_id, service)
            self._streams[local_id] = stream
        log.debug("%s: OPEN %r -> stream %d/%d", self.peer, service, local_id, remote_id)
        if not self.send(A_OKAY, local_id, remote_id):
            return

        def serve() -> None:
            try:
                handler(stream)
            except _StreamClosed:
                log.debug("%s: stream %r closed under the service", self.peer, service)
            except Exception:
                log.exception("%s: service %r failed", self.peer, service)
            finally:
                stream.close()

        self.emulator.spawn(serve, f"adb-emu-{service.split(':', 1)[0]}-{local_id}")


# --- services ---------------------------------------------------------------------------------


@dataclass
class _ShellRequest:
    command: str
    shell_protocol: bool
    pty: bool
    term: str


def parse_shell_service(service: str) -> _ShellRequest | None:
    """``shell[,arg,...]:command`` -> request; None if it is not a shell service."""
    if not (service.startswith("shell:") or service.startswith("shell,")):
        return None
    spec, _, command = service.partition(":")
    args = spec.split(",")[1:]
    pty = command == ""  # adbd: PTY for interactive, raw for a command, unless told otherwise
    shell_protocol = False
    term = "dumb"
    for arg in args:
        if arg == "raw":
            pty = False
        elif arg == "pty":
            pty = True
        elif arg == "v2":
            shell_protocol = True
        elif arg.startswith("TERM="):
            term = arg[len("TERM=") :]
        elif arg:
            log.debug("ignoring unknown shell argument %r", arg)
    return _ShellRequest(command, shell_protocol, pty, term)


@dataclass
class _ShellSession:
    """A running command attached to a stream."""

    emulator: AdbDeviceEmulator
    stream: _Stream
    proc: subprocess.Popen[bytes]
    shell_protocol: bool

    def send(self, packet_id: int, data: bytes) -> None:
        if self.shell_protocol:
            self.stream.write(SHELL_HEADER.pack(packet_id, len(data)) + data)
        else:
            self.stream.write(data)

    def pump_output(self, fd: int, packet_id: int) -> None:
        """Copy one of the process's output pipes to the stream until EOF. If the host goes away,
        keep draining (and discarding) so the process never blocks on a full pipe."""
        room = self.stream.conn.peer_maxdata - (SHELL_HEADER.size if self.shell_protocol else 0)
        room = max(1, min(room, MAX_PAYLOAD))
        forwarding = True
        while True:
            try:
                data = os.read(fd, room)
            except OSError:
                break
            if not data:
                break
            if forwarding:
                try:
                    self.send(packet_id, data)
                except _StreamClosed:
                    forwarding = False

    # Only the stdin pump thread touches the process's stdin.
    def close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):
                stdin.close()

    def write_stdin(self, data: bytes) -> None:
        """Write all of ``data``; if the process stopped reading (EPIPE), drop stdin."""
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(stdin.fileno(), view) :]
        except OSError:
            self.close_stdin()

    def pump_input(self) -> None:
        """Host -> process stdin: shell-protocol packets (v2) or raw bytes (legacy). When the
        host closes the stream while the process runs, hang it up (SIGHUP), as adbd does."""
        try:
            if self.shell_protocol:
                while True:
                    packet_id, length = SHELL_HEADER.unpack(
                        self.stream.read_exact(SHELL_HEADER.size)
                    )
                    data = self.stream.read_exact(length) if length else b""
                    if packet_id == SHELL_STDIN:
                        self.write_stdin(data)
                    elif packet_id == SHELL_CLOSE_STDIN:
                        self.close_stdin()
                    else:
                        log.debug("shell: ignoring packet id %d (%d bytes)", packet_id, length)
            else:
                while (data := self.stream.read_packet()) is not None:
                    self.write_stdin(data)
        except _StreamClosed:
            pass
        finally:
            self.close_stdin()
            if self.stream.closed_by_peer and self.proc.poll() is None:
                log.debug("shell: host closed %r; sending SIGHUP", self.stream.service)
                self.emulator.signal_process(self.proc, signal.SIGHUP)


# --- the emulator -----------------------------------------------------------------------------


_DUMPSYS_SCRIPT = """#!/bin/sh
# dumpsys for the ADB device emulator: prints the service's dump from {dumps}/SERVICE.
if [ -f {dumps}/"$1" ]; then
    cat {dumps}/"$1"
else
    echo "Can't find service: $1" >&2
fi
"""


#: Where the phone's Power HAL keeps its state, relative to the sandbox: ``modes`` lists the
#: modes it implements (one a line), ``fixed_performance`` the mode's state once it was set.
POWER_HAL_DIR = "system/etc/power_hal"

_CMD_SCRIPT = """#!/bin/sh
# cmd for the ADB device emulator: the power service's set-fixed-performance-mode-enabled,
# answered as Android's PowerManagerShellCommand answers it (Android 11+; the Power HAL's
# modes are listed in {hal}/modes, its state kept in {hal}/fixed_performance).
hal={hal}
if [ "$1" != power ]; then
    echo "cmd: Can't find service: $1" >&2
    exit 20
fi
sdk=$(getprop ro.build.version.sdk)
if [ "$2" != set-fixed-performance-mode-enabled ] || [ "${{sdk:-0}}" -lt 30 ]; then
    echo "Unknown command: $2" >&2
    exit 255
fi
if ! grep -qx FIXED_PERFORMANCE "$hal/modes" 2>/dev/null; then
    echo "Failed to set FIXED_PERFORMANCE mode" >&2
    echo "This is likely because Power HAL AIDL is not implemented on this device" >&2
    exit 255
fi
case "$3" in
    [Tt][Rr][Uu][Ee]) echo true > "$hal/fixed_performance" ;;
    *) echo false > "$hal/fixed_performance" ;;
esac
"""


class AdbDeviceEmulator:
    """An ADB device on 127.0.0.1 whose "phone" is the ``sandbox`` directory.

    ``start()`` binds and returns the port; ``stop()`` closes the listener and every connection
    at once (a pulled cable), kills every command it started and joins every thread.
    """

    def __init__(
        self,
        sandbox: Path,
        *,
        props: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        env: dict[str, str] | None = None,
        pid_log: Path | None = None,
        board: bool = False,
        power_modes: tuple[str, ...] = ("FIXED_PERFORMANCE",),
    ) -> None:
        self.sandbox = Path(sandbox).resolve()
        #: The Power HAL modes the phone implements (``cmd power`` refuses the others).
        self.power_modes = power_modes
        #: ``sandbox`` is the root of a board of another architecture (an arm64 Debian root run
        #: by qemu through binfmt_misc): commands run chrooted in it, device paths are absolute
        #: paths in it, as on a real phone.
        self.board = board
        #: When set, each command's PID is appended here as it starts: a test that kills the
        #: emulator's process outright (no stop()) reaps what it left running from this file.
        self.pid_log = pid_log
        self.props: dict[str, str] = {**DEFAULT_PROPS, **(props or {})}
        for key, value in self.props.items():
            _check_prop(key, value)
        self.host = host
        self.port = port
        self.env_overrides: dict[str, str] = dict(env or {})
        self.bin_dir = self.sandbox / "system" / "bin"
        self.props_file = self.sandbox / "system" / "build.prop"
        self.stopping = False
        self.connects: list[ConnectInfo] = []
        self.services: list[str] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: list[_Connection] = []
        self._threads: list[threading.Thread] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._started = False

    # lifecycle
    def start(self) -> int:
        if self._started:
            raise RuntimeError("emulator already started")
        self._started = True
        self._prepare_sandbox()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
            listener.listen(16)
        except OSError:
            listener.close()
            raise
        listener.settimeout(_POLL)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self.spawn(self._accept_loop, f"adb-emu-accept-{self.port}")
        log.info("ADB device emulator on %s:%d serving %s", self.host, self.port, self.sandbox)
        return self.port

    def stop(self) -> None:
        """Close everything now; kill commands; join threads. Idempotent."""
        with self._lock:
            if self.stopping:
                return
            self.stopping = True
            listener, self._listener = self._listener, None
            connections = list(self._connections)
            procs = list(self._procs)
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in connections:
            conn.shutdown()
        for proc in procs:
            self.signal_process(proc, signal.SIGKILL)
        me = threading.current_thread()
        # Threads may start more threads while winding down (a service thread its readers), so
        # join in rounds until none is left; bounded, and each join is bounded too.
        for _ in range(_JOIN_ROUNDS):
            with self._lock:
                threads = [t for t in self._threads if t is not me and t.is_alive()]
                self._threads = threads
            if not threads:
                break
            for thread in threads:
                thread.join(_JOIN_TIMEOUT)
                if thread.is_alive():
                    log.warning("thread %s did not stop within %.0f s", thread.name, _JOIN_TIMEOUT)
                    with self._lock:
                        self._threads.remove(thread)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_JOIN_TIMEOUT)
        log.info("ADB device emulator on port %d stopped", self.port)

    def __enter__(self) -> AdbDeviceEmulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # public helpers
    @property
    def serial(self) -> str:
        return f"{self.host}:{self.port}"

    def banner(self) -> str:
        p = self.props
        return (
            f"device::ro.product.name={p['ro.product.name']};"
            f"ro.product.model={p['ro.product.model']};"
            f"ro.product.device={p['ro.product.device']};"
            f"features={','.join(FEATURES)}"
        )

    def set_prop(self, key: str, value: str) -> None:
        """Change a property (seen by getprop at once; the banner only on the next connect)."""
        _check_prop(key, value)
        with self._lock:
            self.props[key] = value
            self._write_props()

    def command_env(self, term: str | None = None) -> dict[str, str]:
        if self.board:  # nothing of the host's environment crosses into the board
            env = {"PATH": BOARD_PATH, "HOME": "/", "TMPDIR": "/data/local/tmp", "LANG": "C.UTF-8"}
            env["ANDROID_ROOT"] = "/system"  # as init.environ.rc exports it on a phone
            env.update(self.env_overrides)
            if term is not None:
                env["TERM"] = term
            return env
        env = dict(os.environ)
        env.update(self.env_overrides)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}"
        # A phone's /system is the sandbox's system/, so its root is the sandbox.
        env["ANDROID_ROOT"] = str(self.sandbox / "system")
        if term is not None:
            env["TERM"] = term
        return env

    def record_connect(self, info: ConnectInfo) -> None:
        with self._lock:
            self.connects.append(info)

    def record_service(self, service: str) -> None:
        with self._lock:
            self.services.append(service)

    # threads and processes
    def spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def signal_process(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        """Signal a command's whole process group (it runs in its own session)."""
        if proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(OSError):
                proc.send_signal(sig)

    def _run_command(
        self, argv: list[str], *, term: str | None, merge_stderr: bool
    ) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self.stopping:
                return None
            if self.board:
                argv = board_command(self.sandbox, argv)
            # Commands start as adbd starts them, with SIGHUP's default action: under a harness
            # started by nohup, an ignored SIGHUP is inherited across exec, and a command would
            # outlive the hang-up that pump_input sends when the host closes its stream.
            argv = ["env", "--default-signal=HUP", *argv]
            proc = subprocess.Popen(
                argv,
                cwd=self.sandbox,
                env=self.command_env(term),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                start_new_session=True,
                bufsize=0,
            )
            self._procs = [p for p in self._procs if p.returncode is None]
            self._procs.append(proc)
            if self.pid_log is not None:
                with open(self.pid_log, "a", encoding="ascii") as fh:
                    fh.write(f"{proc.pid}\n")
        log.debug("started pid %d: %r", proc.pid, argv)
        return proc

    # service dispatch
    def service_handler(self, service: str) -> Callable[[_Stream], None] | None:
        shell = parse_shell_service(service)
        if shell is not None:
            if not shell.command and not shell.shell_protocol:
                return None  # interactive legacy shell: unsupported (no pty, no way to end stdin)
            return lambda stream: self._serve_shell(stream, shell)
        if service.startswith("exec:") and len(service) > len("exec:"):
            request = _ShellRequest(service[len("exec:") :], False, False, "dumb")
            return lambda stream: self._serve_shell(stream, request)
        if service.startswith("sync:"):
            return self._serve_sync
        return None

    def _accept_loop(self) -> None:
        while not self.stopping:
            listener = self._listener
            if listener is None:
                break
            try:
                sock, addr = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, sock, f"{addr[0]}:{addr[1]}")
            with self._lock:
                if self.stopping:
                    sock.close()
                    break
                self._connections = [c for c in self._connections if not c.dead]
                self._connections.append(conn)
            log.debug("accepted connection from %s", conn.peer)
            self.spawn(conn.run, f"adb-emu-conn-{addr[1]}")

    def _serve_shell(self, stream: _Stream, request: _ShellRequest) -> None:
        command = request.command
        argv = ["/bin/sh", "-c", command] if command else ["/bin/sh"]
        # A pty merges stderr into stdout; so does a raw shell without the shell protocol.
        merge = request.pty or not request.shell_protocol
        proc = self._run_command(argv, term=request.term, merge_stderr=merge)
        if proc is None:
            return
        session = _ShellSession(self, stream, proc, request.shell_protocol)
        outputs = [(proc.stdout, SHELL_STDOUT, "stdout"), (proc.stderr, SHELL_STDERR, "stderr")]
        readers = [
            self.spawn(
                functools.partial(session.pump_output, pipe.fileno(), packet_id),
                f"adb-emu-{name}-{proc.pid}",
            )
            for pipe, packet_id, name in outputs
            if pipe is not None
        ]
        stdin_pump = self.spawn(session.pump_input, f"adb-emu-stdin-{proc.pid}")
        for reader in readers:
            reader.join()
        returncode = proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        exit_code = returncode if returncode >= 0 else 0x80 | -returncode
        log.debug("pid %d exited with %d (%r)", proc.pid, exit_code, command)
        if request.shell_protocol:
            with contextlib.suppress(_StreamClosed):
                session.send(SHELL_EXIT, bytes([exit_code & 0xFF]))
        stream.close()
        stdin_pump.join()

    def _serve_sync(self, stream: _Stream) -> None:
        _SyncSession(stream, self.sandbox, board=self.board).run()

    # sandbox
    def _prepare_sandbox(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        (self.sandbox / "data" / "local" / "tmp").mkdir(parents=True, exist_ok=True)
        self._write_props()
        getprop = self.bin_dir / "getprop"
        props = "/" + self.props_file.relative_to(self.sandbox).as_posix() if self.board else None
        getprop.write_text(_GETPROP_SCRIPT.format(props=shlex.quote(props or str(self.props_file))))
        getprop.chmod(0o755)
        dumps = "/" + DUMPS_DIR if self.board else str(self.sandbox / DUMPS_DIR)
        dumpsys = self.bin_dir / "dumpsys"
        dumpsys.write_text(_DUMPSYS_SCRIPT.format(dumps=shlex.quote(dumps)))
        dumpsys.chmod(0o755)
        hal_dir = self.sandbox / POWER_HAL_DIR
        hal_dir.mkdir(parents=True, exist_ok=True)
        (hal_dir / "modes").write_text("".join(f"{mode}\n" for mode in self.power_modes))
        hal = "/" + POWER_HAL_DIR if self.board else str(hal_dir)
        cmd = self.bin_dir / "cmd"
        cmd.write_text(_CMD_SCRIPT.format(hal=shlex.quote(hal)))
        cmd.chmod(0o755)

    def fixed_performance(self) -> bool | None:
        """The Power HAL's fixed-performance mode as ``cmd power`` last set it; None: never."""
        state = self.sandbox / POWER_HAL_DIR / "fixed_performance"
        return state.read_text().strip() == "true" if state.exists() else None

    def _write_props(self) -> None:
        lines = "".join(f"{key}={value}\n" for key, value in sorted(self.props.items()))
        tmp = self.props_file.with_suffix(".tmp")
        tmp.write_text(lines)
        tmp.replace(self.props_file)


def _check_prop(key: str, value: str) -> None:
    if not key or any(c in key for c in "=\n\r[]") or "\n" in value or "\r" in value:
        raise ValueError(f"unsupported property {key!r}={value!r}")


# --- sync service -----------------------------------------------------------------------------


def _stat_v2(st: os.stat_result | None, ident: bytes, error: int = 0) -> bytes:
    if st is None:
        return STAT_V2.pack(ident, error, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    return STAT_V2.pack(
        ident,
        0,
        st.st_dev,
        st.st_ino,
        st.st_mode,
        st.st_nlink,
        st.st_uid,
        st.st_gid,
        st.st_size,
        int(st.st_atime),
        int(st.st_mtime),
        int(st.st_ctime),
    )


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


class _SyncSession:
    """The ``sync:`` service: one request after another until QUIT, an error or a CLSE.

    Paths are host paths. A relative one is taken relative to the sandbox, where shell commands
    run (real adbd would resolve it against /).
    """

    def __init__(self, stream: _Stream, sandbox: Path, board: bool = False) -> None:
        self.stream = stream
        self.sandbox = sandbox
        self.board = board
        self._out = bytearray()

    def _resolve(self, path: str) -> str:
        if self.board and path:  # the board's paths, all of them under its root
            return os.path.join(self.sandbox, path.lstrip("/"))
        return path if not path or os.path.isabs(path) else os.path.join(self.sandbox, path)

    # output is coalesced into WRTEs of up to the host's maxdata
    def _emit(self, data: bytes) -> None:
        self._out += data
        limit = self.stream.conn.peer_maxdata
        if len(self._out) >= limit:
            cut = len(self._out) - len(self._out) % limit
            chunk = bytes(self._out[:cut])
            del self._out[:cut]
            self.stream.write(chunk)

    def _flush(self) -> None:
        if self._out:
            chunk = bytes(self._out)
            self._out.clear()
            self.stream.write(chunk)

    def _fail(self, message: str) -> None:
        encoded = message.encode("utf-8", "replace")
        self._emit(SYNC_REQUEST.pack(b"FAIL", len(encoded)) + encoded)
        self._flush()

    def run(self) -> None:
        while True:
            ident, length = SYNC_REQUEST.unpack(self.stream.read_exact(SYNC_REQUEST.size))
            if length > SYNC_PATH_MAX:
                self._fail("path too long")
                return
            raw = self.stream.read_exact(length)
            path = self._resolve(os.fsdecode(raw))
            log.debug("sync: %s %r", ident.decode("ascii", "replace"), path)
            handler = self._handlers().get(ident)
            if ident == b"QUIT":
                return
            if handler is None:
                self._fail(f"unknown command {ident!r}")
                return
            keep_going = handler(path)
            self._flush()
            if not keep_going:
                return

    def _handlers(self) -> dict[bytes, Callable[[str], bool]]:
        return {
            b"STAT": self._stat_v1,
            b"STA2": lambda path: self._stat_v2(path, b"STA2", follow=True),
            b"LST2": lambda path: self._stat_v2(path, b"LST2", follow=False),
            b"LIST": lambda path: self._list(path, v2=False),
            b"LIS2": lambda path: self._list(path, v2=True),
            b"SEND": self._send,
            b"RECV": self._recv,
        }

    def _stat_v1(self, path: str) -> bool:
        try:
            st = os.lstat(path)
        except OSError:
            self._emit(STAT_V1.pack(b"STAT", 0, 0, 0))  # adbd: all zeros when lstat fails
        else:
            self._emit(STAT_V1.pack(b"STAT", st.st_mode, _u32(st.st_size), _u32(int(st.st_mtime))))
        return True

    def _stat_v2(self, path: str, ident: bytes, *, follow: bool) -> bool:
        try:
            st = os.stat(path) if follow else os.lstat(path)
        except OSError as exc:
            self._emit(_stat_v2(None, ident, exc.errno or 0))
        else:
            self._emit(_stat_v2(st, ident))
        return True

    def _list(self, path: str, *, v2: bool) -> bool:
        for name, st, error in _iter_dir(path):
            encoded = os.fsencode(name)
            if v2:
                record = _stat_v2(st, b"DNT2", error) + struct.pack("<I", len(encoded))
                self._emit(record + encoded)
            elif st is not None:
                self._emit(
                    DENT_V1.pack(
                        b"DENT", st.st_mode, _u32(st.st_size), _u32(int(st.st_mtime)), len(encoded)
                    )
                    + encoded
                )
        # adbd ends the listing with a zeroed entry of the same size whose id is DONE.
        done = DENT_V2.pack(b"DONE", *[0] * 12) if v2 else DENT_V1.pack(b"DONE", 0, 0, 0, 0)
        self._emit(done)
        return True

    def _send(self, spec: str) -> bool:
        path, comma, mode_text = spec.rpartition(",")
        if not comma:
            self._fail("missing , in ID_SEND")
            return False
        try:
            mode = int(mode_text)
        except ValueError:
            self._fail("bad mode")
            return False
        if stat.S_ISLNK(mode):
            return self._send_link(path)
        return self._send_file(path, mode)

    def _read_chunks(self) -> Iterator[bytes | int]:
        """DATA payloads, then the DONE's mtime; raises on anything else."""
        while True:
            ident, size = SYNC_REQUEST.unpack(self.stream.read_exact(SYNC_REQUEST.size))
            if ident == b"DONE":
                yield size
                return
            if ident != b"DATA":
                raise ValueError(f"invalid data message {ident!r}")
            if size > SYNC_DATA_MAX:
                raise ValueError(f"oversize data message ({size} bytes)")
            yield self.stream.read_exact(size)

    def _send_file(self, path: str, mode: int) -> bool:
        existed = os.path.lexists(path)
        try:
            try:
                handle = open(path, "wb")  # noqa: SIM115 - closed below on every path
            except FileNotFoundError:
                # fixed_push_mkdir: the device creates the missing parents.
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                handle = open(path, "wb")  # noqa: SIM115
        except OSError as exc:
            self._fail(f"couldn't create file: {exc.strerror or exc}")
            self._discard_data()
            return False
        mtime: int | None = None
        error: str | None = None
        with handle:
            try:
                for chunk in self._read_chunks():
                    if isinstance(chunk, int):
                        mtime = chunk
                    elif error is None:
                        try:
                            handle.write(chunk)
                        except OSError as exc:
                            # Keep reading until DONE so the host gets our FAIL in order.
                            error = f"write failed: {exc.strerror or exc}"
            except ValueError as exc:
                error = str(exc)
            except _StreamClosed:
                # The host went away mid-transfer: leave no partial file behind.
                if not existed:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                raise
        if error is None:
            try:
                os.chmod(path, stat.S_IMODE(mode))
                if mtime is not None:
                    os.utime(path, (mtime, mtime))
            except OSError as exc:
                error = f"couldn't set attributes: {exc.strerror or exc}"
        if error is not None:
            if not existed or os.path.isfile(path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            self._fail(error)
            return False
        self._emit(SYNC_REQUEST.pack(b"OKAY", 0))
        return True

    def _send_link(self, path: str) -> bool:
        target = b""
        try:
            for chunk in self._read_chunks():
                if isinstance(chunk, bytes):
                    target += chunk
        except ValueError as exc:
            self._fail(str(exc))
            return False
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            os.symlink(os.fsdecode(target), path)
        except OSError as exc:
            self._fail(f"symlink failed: {exc.strerror or exc}")
            return False
        self._emit(SYNC_REQUEST.pack(b"OKAY", 0))
        return True

    def _discard_data(self) -> None:
        """After an early FAIL, swallow the DATA the host keeps sending, up to its DONE."""
        with contextlib.suppress(ValueError, _StreamClosed):
            for _ in self._read_chunks():
                pass

    def _recv(self, path: str) -> bool:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
        except OSError as exc:
            self._fail(f"open failed: {exc.strerror or exc}")
            return False
        with handle:
            while True:
                try:
                    chunk = handle.read(SYNC_DATA_MAX)
                except OSError as exc:
                    self._fail(f"read failed: {exc.strerror or exc}")
                    return False
                if not chunk:
                    break
                self._emit(SYNC_REQUEST.pack(b"DATA", len(chunk)) + chunk)
        self._emit(SYNC_REQUEST.pack(b"DONE", 0))
        return True


def _iter_dir(path: str) -> Iterator[tuple[str, os.stat_result | None, int]]:
    """Entries of ``path`` like readdir() (including . and ..), each with its lstat or errno."""
    try:
        names = [".", "..", *os.listdir(path)]
    except OSError:
        return
    for name in names:
        try:
            yield name, os.lstat(os.path.join(path, name)), 0
        except OSError as exc:
            yield name, None, exc.errno or 0


# --- as a process of its own ------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run one emulator as a process, so a test can kill it the way a phone dies (SIGKILL,
    SIGTERM: no stop(), nothing closed politely). Prints ``PORT <n>`` once it listens; stops
    cleanly when its stdin closes (the test ended, or died, without killing it)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", type=Path, required=True)
    parser.add_argument("--pid-log", type=Path, default=None)
    parser.add_argument("--board", action="store_true", help="the sandbox is a board's root")
    args = parser.parse_args(argv)
    emulator = AdbDeviceEmulator(args.sandbox, pid_log=args.pid_log, board=args.board)
    port = emulator.start()
    print(f"PORT {port}", flush=True)
    try:
        sys.stdin.read()  # returns at EOF: the parent closed our stdin or is gone
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
