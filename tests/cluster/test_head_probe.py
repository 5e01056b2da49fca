"""`--cluster` pointed at something that is not a Ray head says so in one line, in seconds:
an HTTP server, and a server that accepts and stays silent."""

from __future__ import annotations

import selectors
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")

pytestmark = pytest.mark.load_sensitive


def cluster_run(env: dict[str, str], address: str) -> subprocess.CompletedProcess:
    # Ray's own client waits 120 s or more on such an address; 90 s fails a run that hangs.
    return subprocess.run(
        [sys.executable, "-m", "edgebench", "run", "--cluster", address, "--devices", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


def served_port(server: subprocess.Popen[str], limit_s: float = 60) -> int:
    """The port http.server bound (it was given 0): from the line it prints once it listens,
    "Serving HTTP on 127.0.0.1 port N (...) ...", read within ``limit_s``."""
    assert server.stdout is not None
    deadline = time.monotonic() + limit_s
    with selectors.DefaultSelector() as selector:
        selector.register(server.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            line = server.stdout.readline()
            if not line:
                break
            words = line.split()
            if line.startswith("Serving HTTP on") and "port" in words:
                return int(words[words.index("port") + 1])
    raise AssertionError(f"http.server did not say its port (exit {server.poll()})")


def test_an_http_server_is_not_a_ray_head(eb_env):
    # Port 0: the server binds a free port itself (one picked here and handed over could be
    # taken by another test process in between) and says which.
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = served_port(server)
        done = cluster_run(eb_env, f"127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("edgebench:")]
    assert errors == [
        f"edgebench: error: 127.0.0.1:{port} is not a Ray head: it answered '<!DOCTYPE HTML>'; "
        "give the address `ray start --head` printed (docs/cluster.md)"
    ], done.stderr


def test_a_silent_server_is_not_a_ray_head(eb_env):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # the kernel accepts; nothing ever answers
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        done = cluster_run(eb_env, address)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("edgebench:")]
    assert errors == [
        f"edgebench: error: {address} is not a Ray head: it accepted the connection but did "
        "not answer Ray's node query within 5 s; give the address `ray start --head` printed "
        "(docs/cluster.md)"
    ], done.stderr
