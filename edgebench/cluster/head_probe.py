"""Asks a Ray head's GCS which nodes it has, in a few seconds at most, without joining.

Ray's own client waits minutes on an address that accepts connections but is not a Ray head
(an HTTP server, another service), and a ``ray start`` can print that it started although no
head answers. One bounded gRPC call, ``NodeInfoGcsService.GetAllNodeInfo``, written here over a
plain socket (HTTP/2 frames, HPACK literals), tells a Ray head from anything else and lists the
live nodes. Only the reply is parsed, with Ray's own protobuf classes.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from edgebench.errors import UserError

#: How long the whole probe may take.
PROBE_TIMEOUT_S = 5.0
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4
_WINDOW = 1 << 24  # the reply of a large cluster must not stall on flow control
_METHOD = "/ray.rpc.NodeInfoGcsService/GetAllNodeInfo"


class NotAHead(UserError):
    """Something answers at the address, but not a Ray head."""


class Unreachable(UserError):
    """Nothing answers at the address (refused, no route, or silent)."""


@dataclass(frozen=True)
class NodeSeen:
    """One node of the cluster as its head lists it."""

    node_id: str
    address: str
    alive: bool
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--cluster {address!r}: give the Ray head as host:port (e.g. lab0:6379)")
    return host.strip("[]"), int(port)


def head_nodes(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> list[NodeSeen]:
    """Every node the head at ``address`` knows, alive or dead; ``Unreachable`` or
    ``NotAHead`` (one line each) within ``timeout_s``."""
    host, port = split_address(address)
    deadline = time.monotonic() + timeout_s
    try:
        connection = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        raise Unreachable(
            f"cannot reach the Ray head at {address}: {exc.strerror or exc}; start it with "
            "`ray start --head` on the head host (docs/cluster.md)"
        ) from None
    with connection:
        try:
            connection.sendall(_request(f"{host}:{port}"))
            payload = _reply(connection, deadline, address)
        except TimeoutError:
            raise NotAHead(
                f"{address} is not a Ray head: it accepted the connection but did not answer "
                f"Ray's node query within {timeout_s:.0f} s; give the address `ray start "
                "--head` printed (docs/cluster.md)"
            ) from None
        except OSError as exc:
            raise Unreachable(
                f"cannot reach the Ray head at {address}: {exc.strerror or exc}"
            ) from None
    return _nodes(payload, address)


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def _hpack_int(value: int) -> bytes:
    if value < 127:
        return bytes([value])
    out, value = bytearray([127]), value - 127
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes([*out, value])


def _header(name: str, value: str) -> bytes:
    """A literal header field, not indexed, new name, no Huffman coding (RFC 7541 6.2.2)."""
    raw_name, raw_value = name.encode(), value.encode()
    return b"\x00" + _hpack_int(len(raw_name)) + raw_name + _hpack_int(len(raw_value)) + raw_value


def _request(authority: str) -> bytes:
    from ray.core.generated import gcs_service_pb2

    settings = struct.pack(">HI", 0x2, 0) + struct.pack(">HI", 0x4, _WINDOW)  # no push, window
    headers = b"".join(
        _header(name, value)
        for name, value in (
            (":method", "POST"),
            (":scheme", "http"),
            (":path", _METHOD),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        )
    )
    request = gcs_service_pb2.GetAllNodeInfoRequest()  # type: ignore[attr-defined]  # generated protobuf, no stubs
    message = request.SerializeToString()
    return b"".join(
        (
            _PREFACE,
            _frame(_SETTINGS, 0, 0, settings),
            _frame(0x8, 0, 0, struct.pack(">I", _WINDOW)),  # WINDOW_UPDATE of the connection
            _frame(_HEADERS, _END_HEADERS, 1, headers),
            _frame(_DATA, _END_STREAM, 1, b"\x00" + struct.pack(">I", len(message)) + message),
        )
    )


def _read_exactly(connection: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        connection.settimeout(left)
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("closed") if data else EOFError
        data += chunk
    return data


def _reply(connection: socket.socket, deadline: float, address: str) -> bytes:
    """The gRPC message of stream 1's reply (its DATA frames, joined)."""
    data = b""
    first = True
    while True:
        try:
            header = _read_exactly(connection, 9, deadline)
        except EOFError:
            raise NotAHead(
                f"{address} is not a Ray head: it closed the connection without answering "
                "Ray's node query; give the address `ray start --head` printed (docs/cluster.md)"
            ) from None
        size = int.from_bytes(header[:3], "big")
        kind, flags = header[3], header[4]
        stream = int.from_bytes(header[5:], "big") & 0x7FFFFFFF
        if first and (kind != _SETTINGS or stream != 0 or size > 1 << 14):
            raise NotAHead(
                f"{address} is not a Ray head: it answered {_shown(header, connection)!r}; give "
                "the address `ray start --head` printed (docs/cluster.md)"
            )
        first = False
        payload = _read_exactly(connection, size, deadline) if size else b""
        if kind == _SETTINGS and not flags & _ACK:
            connection.sendall(_frame(_SETTINGS, _ACK, 0))
        elif kind == _PING and not flags & _ACK:
            connection.sendall(_frame(_PING, _ACK, 0, payload))
        elif kind in (_GOAWAY, _RST_STREAM) and stream in (0, 1):
            raise NotAHead(
                f"{address} is not a Ray head: it refused Ray's node query (HTTP/2 "
                f"{'GOAWAY' if kind == _GOAWAY else 'RST_STREAM'}); give the address `ray start "
                "--head` printed (docs/cluster.md)"
            )
        elif stream == 1 and kind == _DATA:
            data += payload
        if stream == 1 and kind in (_DATA, _HEADERS) and flags & _END_STREAM:
            if not data:
                raise NotAHead(
                    f"{address} is not a Ray head: a gRPC server without Ray's node service; "
                    "give the address `ray start --head` printed (docs/cluster.md)"
                )
            return data


def _shown(header: bytes, connection: socket.socket) -> str:
    """The start of what a server that is not HTTP/2 sent (an HTTP status line, a banner)."""
    connection.settimeout(0.5)
    try:
        more = connection.recv(200)
    except OSError:
        more = b""
    text = (header + more).decode("latin-1").splitlines()[0] if header + more else ""
    return "".join(c if c.isprintable() else "?" for c in text)[:80]


def _nodes(payload: bytes, address: str) -> list[NodeSeen]:
    from ray.core.generated import gcs_pb2, gcs_service_pb2

    compressed, size = payload[0], int.from_bytes(payload[1:5], "big")
    reply = gcs_service_pb2.GetAllNodeInfoReply()  # type: ignore[attr-defined]  # generated protobuf, no stubs
    try:
        if compressed or size != len(payload) - 5:
            raise ValueError("not one uncompressed gRPC message")
        reply.ParseFromString(payload[5:])
    except Exception as exc:  # protobuf's DecodeError and friends
        raise NotAHead(f"{address} is not a Ray head: its reply did not parse ({exc})") from None
    alive = gcs_pb2.GcsNodeInfo.ALIVE  # type: ignore[attr-defined]  # generated protobuf, no stubs
    return [_node(info, alive) for info in reply.node_info_list]


def _node(info: Any, alive: int) -> NodeSeen:
    return NodeSeen(
        node_id=info.node_id.hex(),
        address=info.node_manager_address,
        alive=info.state == alive,
        resources=dict(info.resources_total),
        labels=dict(info.labels),
    )
