"""pytest fixtures: the real adb server (Debian's `adb`) plus an emulated phone connected to it.

Import them into a test module (or conftest) to use them::

    from fakes.adb_fixtures import adb_server, emulated_phone  # noqa: F401, F811

or, without anything for ruff to flag in the tests' signatures::

    from fakes.adb_fixtures import adb_server_fixture, emulated_phone_fixture  # noqa: F401

``adb_server`` (session scope) runs ``adb -P PORT nodaemon server`` as a child process with a
private HOME (so ``~/.android/adbkey`` is written there); ``emulated_phone`` (function scope) starts
an :class:`AdbDeviceEmulator` on a fresh port, ``adb connect``s it and waits until it is online.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes.adb_emulator import AdbDeviceEmulator

log = logging.getLogger(__name__)

ADB = shutil.which("adb") or "/usr/bin/adb"
SERVER_START_TIMEOUT = 10.0
ADB_COMMAND_TIMEOUT = 30.0
DEVICE_ONLINE_TIMEOUT = 10.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_version(port: int) -> bool:
    """True once the adb server on ``port`` answers ``host:version`` with OKAY."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            request = b"host:version"
            sock.sendall(b"%04x%s" % (len(request), request))
            return sock.recv(4) == b"OKAY"
    except OSError:
        return False


@dataclass
class AdbServer:
    """A running adb server owned by the test session."""

    port: int
    home: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    log_path: Path

    def adb(
        self, *args: str, timeout: float = ADB_COMMAND_TIMEOUT, check: bool = False, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run ``adb -P PORT ARGS...`` against this server; text output captured."""
        if "stdout" not in kwargs and "stderr" not in kwargs:
            kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        result = subprocess.run(
            [ADB, "-P", str(self.port), *args],
            env=self.env,
            timeout=timeout,
            check=False,
            **kwargs,
        )
        log.debug("adb %s -> %d", " ".join(args), result.returncode)
        if check and result.returncode != 0:
            raise AssertionError(
                f"adb {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}{result.stderr}"
            )
        return result

    def stop(self) -> None:
        """``adb kill-server``, then make sure our child (and only it) is gone."""
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self.adb("kill-server", timeout=5)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("adb server pid %d ignored kill-server; killing it", self.proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)


def start_adb_server(workdir: Path, attempts: int = 3) -> AdbServer:
    """Start ``adb nodaemon server`` on a free port with its own HOME; wait until it answers."""
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    last_error = ""
    for attempt in range(attempts):
        port = _free_port()
        env = dict(os.environ)
        env.update(HOME=str(home), ANDROID_ADB_SERVER_PORT=str(port))
        env.pop("ANDROID_SERIAL", None)
        log_path = workdir / f"adb-server-{port}.log"
        with log_path.open("wb") as log_file:
            proc = subprocess.Popen(
                [ADB, "-P", str(port), "nodaemon", "server"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        # Bounded poll on an observable state: the server answering host:version.
        while time.monotonic() < deadline and proc.poll() is None:
            if _server_version(port):
                log.info("adb server pid %d on port %d (HOME=%s)", proc.pid, port, home)
                return AdbServer(port, home, env, proc, log_path)
            time.sleep(0.02)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
        last_error = log_path.read_text(errors="replace")
        log.warning("adb server attempt %d on port %d failed:\n%s", attempt + 1, port, last_error)
    raise RuntimeError(f"could not start the adb server:\n{last_error}")


@dataclass
class EmulatedPhone:
    """An emulated device connected to the session's adb server."""

    serial: str
    sandbox: Path
    emulator: AdbDeviceEmulator
    adb_port: int
    server: AdbServer = field(repr=False)

    def adb(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """``adb -P PORT -s SERIAL ARGS...``."""
        return self.server.adb("-s", self.serial, *args, **kwargs)

    def device(self, **client_kwargs: Any) -> Any:
        """An ``adbutils`` device for this phone, through the test adb server."""
        import adbutils

        client = adbutils.AdbClient(host="127.0.0.1", port=self.adb_port, **client_kwargs)
        return client.device(self.serial)


@pytest.fixture(scope="session", name="adb_server")
def adb_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbServer]:
    """The real adb server, private to this test session (own port, own HOME)."""
    if not os.path.exists(ADB):
        pytest.skip("adb is not installed")
    server = start_adb_server(tmp_path_factory.mktemp("adb-server"))
    try:
        yield server
    finally:
        server.stop()


def connect_phone(
    server: AdbServer,
    sandbox: Path,
    props: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> EmulatedPhone:
    """Start an emulator serving ``sandbox`` and bring it online in ``server``. The caller
    owns it: end with :func:`disconnect_phone`."""
    emulator = AdbDeviceEmulator(sandbox, props=props, env=env)
    port = emulator.start()
    serial = f"127.0.0.1:{port}"
    try:
        result = server.adb("connect", serial, timeout=DEVICE_ONLINE_TIMEOUT)
        if f"connected to {serial}" not in result.stdout:
            raise RuntimeError(f"adb connect {serial}: {result.stdout}{result.stderr}")
        server.adb("-s", serial, "wait-for-device", timeout=DEVICE_ONLINE_TIMEOUT, check=True)
    except BaseException:
        with contextlib.suppress(Exception):
            server.adb("disconnect", serial, timeout=5)
        emulator.stop()
        raise
    return EmulatedPhone(serial, emulator.sandbox, emulator, server.port, server)


def disconnect_phone(phone: EmulatedPhone) -> None:
    """``adb disconnect`` first (no lingering offline transport), then stop the emulator."""
    try:
        phone.server.adb("disconnect", phone.serial, timeout=5)
    except subprocess.TimeoutExpired:
        log.warning("adb disconnect %s timed out", phone.serial)
    finally:
        phone.emulator.stop()


@pytest.fixture(name="emulated_phone")
def emulated_phone_fixture(adb_server: AdbServer, tmp_path: Path) -> Iterator[EmulatedPhone]:
    """A fresh emulated phone (sandbox under tmp_path, fresh port), online in ``adb_server``."""
    phone = connect_phone(adb_server, tmp_path / "phone")
    try:
        yield phone
    finally:
        disconnect_phone(phone)


# The fixtures are registered under their `name=`, so they can be imported under either name:
# `from adb_fixtures import adb_server, emulated_phone` (the parameters of the tests then shadow
# the imports: ruff F811), or the `*_fixture` names, which nothing shadows.
adb_server = adb_server_fixture
emulated_phone = emulated_phone_fixture
