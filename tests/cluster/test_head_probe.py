"""`--cluster` pointed at something that is not a Ray head says so in one line, in seconds:
an HTTP server, and a server that accepts and stays silent."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")

from fakes.ssh_fixtures import free_port

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


def test_an_http_server_is_not_a_ray_head(eb_env):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # until it listens (bounded)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no http.server"
                time.sleep(0.1)
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
