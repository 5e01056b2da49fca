"""pytest fixtures: the real adb server (Debian's `adb`) plus an emulated phone connected to it.

tests/conftest.py registers this module as a plugin, so every test can name them as parameters.
A module may also import them::

    from fakes.adb_fixtures import adb_server, emulated_phone  # noqa: F401, F811

or, without anything for ruff to flag in the tests' signatures::

    from fakes.adb_fixtures import adb_server_fixture, emulated_phone_fixture  # noqa: F401

``adb_server`` (session scope) runs ``adb -P PORT nodaemon server`` as a child process with a
private HOME (so ``~/.android/adbkey`` is written there); ``emulated_phone`` (function scope) starts
an :class:`AdbDeviceEmulator` on a fresh port, ``adb connect``s it and waits until it is online.
``phone_process`` is the same phone run as a process of its own, for tests that kill it outright;
``sysfs_phone`` one whose /sys is its sandbox.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes.adb_emulator import AdbDeviceEmulator
from fakes.listen_ports import free_port, listens_on

log = logging.getLogger(__name__)

ADB = shutil.which("adb") or "/usr/bin/adb"
SERVER_START_TIMEOUT = 10.0
ADB_COMMAND_TIMEOUT = 30.0
DEVICE_ONLINE_TIMEOUT = 10.0
EMULATOR_SCRIPT = Path(__file__).with_name("adb_emulator.py")


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


def start_adb_server(
    workdir: Path, attempts: int = 5, pick_port: Callable[[], int] = free_port
) -> AdbServer:
    """Start ``adb nodaemon server`` on a free port (``pick_port`` picks each try's) with its
    own HOME; wait until it answers. Skips the calling test where adb is not installed.

    ``adb -P`` refuses port 0, so the port is picked free here and not held: another test
    process may take it first (another adb server even, which answers too). The server counts
    as up only once its own socket listens on the port; else a fresh port is tried (bounded)."""
    if not os.access(ADB, os.X_OK):
        pytest.skip("adb is not installed")
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    last_error = ""
    for attempt in range(attempts):
        port = pick_port()
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
        # Bounded poll on an observable state: this process listening on the port and the
        # server answering host:version there.
        while time.monotonic() < deadline and proc.poll() is None:
            if listens_on(proc.pid, port) and _server_version(port):
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
    board: bool = False,
    power_modes: tuple[str, ...] = ("FIXED_PERFORMANCE",),
) -> EmulatedPhone:
    """Start an emulator serving ``sandbox`` (a board's root with ``board``; ``power_modes``
    the modes its Power HAL implements) and bring it online in ``server``. The caller owns it:
    end with :func:`disconnect_phone`."""
    emulator = AdbDeviceEmulator(
        sandbox, props=props, env=env, board=board, power_modes=power_modes
    )
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


@pytest.fixture(name="sysfs_phone")
def sysfs_phone_fixture(adb_server: AdbServer, tmp_path: Path) -> Iterator[EmulatedPhone]:
    """An emulated phone whose runner reads /sys from its sandbox (``EDGEBENCH_SYSFS_ROOT``),
    where a test can put a synthetic battery or power rail."""
    sandbox = tmp_path / "phone"
    sandbox.mkdir()
    phone = connect_phone(adb_server, sandbox, env={"EDGEBENCH_SYSFS_ROOT": str(sandbox)})
    try:
        yield phone
    finally:
        disconnect_phone(phone)


@dataclass
class PhoneProcess:
    """An emulated phone running as a process of its own, online in an adb server, so a test
    can kill it the way a phone dies: a signal, no goodbye. What its commands left running is
    reaped by PID (they run in sessions of their own and outlive a killed emulator)."""

    serial: str
    sandbox: Path
    process: subprocess.Popen[str]
    adb_port: int
    pid_log: Path
    server: AdbServer = field(repr=False)

    def adb(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """``adb -P PORT -s SERIAL ARGS...``."""
        return self.server.adb("-s", self.serial, *args, **kwargs)

    def kill(self, sig: int) -> None:
        """Send ``sig`` to the emulator's process (by its PID) and wait until it is gone."""
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
        self.process.wait(timeout=ADB_COMMAND_TIMEOUT)

    def commands_alive(self) -> list[int]:
        """Commands the emulator started that still run. A PID counts only while it still
        leads its own session, as the emulator started it, so a reused PID is never named."""
        if not self.pid_log.exists():
            return []
        alive = []
        for pid in {int(line) for line in self.pid_log.read_text().split()}:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[3]) == pid:
                alive.append(pid)
        return sorted(alive)

    def reap(self) -> None:
        """Kill, by PID, what the emulator's commands left running (each its process group)."""
        for pid in self.commands_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def _read_port(proc: subprocess.Popen[str], timeout: float) -> int:
    """The ``PORT n`` line the emulator process prints once it listens (bounded wait)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                break
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("PORT "):
                return int(line.split()[1])
    raise RuntimeError(f"the emulator process did not report its port (exit {proc.poll()})")


def start_phone_process(server: AdbServer, sandbox: Path) -> PhoneProcess:
    """Start an emulator process serving ``sandbox`` and bring it online in ``server``. The
    caller owns it: end with :func:`stop_phone_process`."""
    sandbox.mkdir(parents=True, exist_ok=True)
    pid_log = sandbox.parent / f"{sandbox.name}-commands.pids"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(EMULATOR_SCRIPT),
            "--sandbox",
            str(sandbox),
            "--pid-log",
            str(pid_log),
        ],
        stdin=subprocess.PIPE,  # closing it stops the emulator cleanly
        stdout=subprocess.PIPE,
        text=True,
    )
    phone = PhoneProcess("", sandbox.resolve(), proc, server.port, pid_log, server)
    try:
        phone.serial = f"127.0.0.1:{_read_port(proc, DEVICE_ONLINE_TIMEOUT)}"
        result = server.adb("connect", phone.serial, timeout=DEVICE_ONLINE_TIMEOUT)
        if f"connected to {phone.serial}" not in result.stdout:
            raise RuntimeError(f"adb connect {phone.serial}: {result.stdout}{result.stderr}")
        phone.adb("wait-for-device", timeout=DEVICE_ONLINE_TIMEOUT, check=True)
    except BaseException:
        stop_phone_process(phone)
        raise
    return phone


def stop_phone_process(phone: PhoneProcess) -> None:
    """``adb disconnect``, end the emulator process (politely if it still runs), and reap the
    commands it left."""
    if phone.serial:
        with contextlib.suppress(subprocess.TimeoutExpired):
            phone.server.adb("disconnect", phone.serial, timeout=5)
    proc = phone.process
    if proc.poll() is None and proc.stdin is not None:
        proc.stdin.close()
        try:
            proc.wait(timeout=ADB_COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            log.warning("emulator pid %d ignored its stdin closing; killing it", proc.pid)
            proc.kill()
            proc.wait(timeout=ADB_COMMAND_TIMEOUT)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    phone.reap()


@pytest.fixture(name="phone_process")
def phone_process_fixture(adb_server: AdbServer, tmp_path: Path) -> Iterator[PhoneProcess]:
    """A fresh emulated phone in a process of its own, online in ``adb_server``."""
    phone = start_phone_process(adb_server, tmp_path / "phone")
    try:
        yield phone
    finally:
        stop_phone_process(phone)


# The fixtures are registered under their `name=`, so they can be imported under either name:
# `from adb_fixtures import adb_server, emulated_phone` (the parameters of the tests then shadow
# the imports: ruff F811), or the `*_fixture` names, which nothing shadows.
adb_server = adb_server_fixture
emulated_phone = emulated_phone_fixture
phone_process = phone_process_fixture


def outlived(pid_file: Path, wait_s: float = 10.0) -> bool:
    """Whether the process whose PID the phone recorded in ``pid_file`` is still alive after a
    bounded wait for its kill to land. A survivor is killed here, so no test leaves it behind."""
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + wait_s
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = Path(f"/proc/{pid}").exists()
    if alive:
        os.kill(pid, 9)
    return alive
