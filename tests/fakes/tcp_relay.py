"""A loopback TCP relay whose ``cut()`` is a pulled cable: every live connection and the
listener close at once, and nothing answers on the port afterwards.

Tests route a device's connection through it when they must drop the link at a known moment,
independent of how the server on the far side arranges its processes.
"""

from __future__ import annotations

import contextlib
import socket
import threading

_POLL_S = 0.2
_JOIN_S = 5.0


class TcpRelay:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._cut = threading.Event()
        self._spawn(self._accept_loop)

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._cut.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._cut.is_set():
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            self._spawn(self._pump, client, server)
            self._spawn(self._pump, server, client)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        # Ends on EOF or when cut() closes either socket; no timeout needed.
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        """Drop every connection now and stop listening. Idempotent."""
        self._cut.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
            threads = list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in threads:
            thread.join(_JOIN_S)

    def __enter__(self) -> TcpRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()
