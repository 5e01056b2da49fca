"""The ADB device emulator against the real adb server (Debian's `adb`) and adbutils."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import struct
import threading
import time
from pathlib import Path

import pytest
from adbutils.errors import AdbError

from fakes.adb_emulator import (
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_WRTE,
    FEATURES,
    HEADER,
    STAT_V2,
    AdbDeviceEmulator,
    checksum,
    pack_message,
)
from fakes.adb_fixtures import AdbServer, EmulatedPhone, connect_phone, disconnect_phone

pytestmark = pytest.mark.load_sensitive

MB = 1024 * 1024


def _random_file(path: Path, size: int) -> bytes:
    data = os.urandom(size)
    path.write_bytes(data)
    return data


def _wait_until(predicate, timeout: float = 5.0) -> bool:
    """Bounded poll on an observable state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


# --- protocol helpers (no adb server needed) -------------------------------------------------


def test_message_header_layout() -> None:
    message = pack_message(0x45545257, 7, 9, b"\x01\x02\xff")  # WRTE
    assert len(message) == 24 + 3
    fields = [int.from_bytes(message[i : i + 4], "little") for i in range(0, 24, 4)]
    assert fields == [0x45545257, 7, 9, 3, 0x102, 0x45545257 ^ 0xFFFFFFFF]
    assert checksum(b"\xff" * 10) == 2550  # a byte sum, not a CRC32
    assert STAT_V2.size == 72  # packed sync_stat_v2


def test_emulator_lifecycle_without_clients(tmp_path: Path) -> None:
    with AdbDeviceEmulator(tmp_path / "sb", props={"ro.product.model": "Other"}) as emu:
        assert emu.port > 0
        assert (tmp_path / "sb" / "system" / "bin" / "getprop").stat().st_mode & 0o111
        assert "ro.product.model=Other;" in emu.banner()
        assert emu.banner().endswith("features=" + ",".join(FEATURES))
    assert not [t for t in threading.enumerate() if t.name.startswith(f"adb-emu-accept-{emu.port}")]


class _RawHost:
    """A minimal host side of the transport, to check what the emulator puts on the wire."""

    def __init__(self, port: int, maxdata: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(pack_message(A_CNXN, 0x01000001, maxdata, b"host::features=shell_v2\0"))

    def recv(self) -> tuple[int, int, int, bytes]:
        header = self._exact(HEADER.size)
        command, arg0, arg1, length, check, magic = HEADER.unpack(header)
        data = self._exact(length)
        assert magic == command ^ 0xFFFFFFFF
        assert check == checksum(data)
        return command, arg0, arg1, data

    def _exact(self, size: int) -> bytes:
        buf = b""
        while len(buf) < size:
            chunk = self.sock.recv(size - len(buf))
            assert chunk, "emulator closed the connection"
            buf += chunk
        return buf

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        self.sock.sendall(pack_message(command, arg0, arg1, data))


def test_raw_protocol_flow_control_and_maxdata(tmp_path: Path) -> None:
    with AdbDeviceEmulator(tmp_path / "sb") as emu:
        host = _RawHost(emu.port, maxdata=4096)
        command, version, maxdata, banner = host.recv()
        assert (command, version, maxdata) == (A_CNXN, 0x01000001, 256 * 1024)
        assert banner.startswith(b"device::ro.product.name=emu;ro.product.model=EmuPhone;")

        host.send(A_OPEN, 5, 0, b"frobnicate:\0")
        assert host.recv()[:3] == (A_CLSE, 0, 5)  # unknown service: refused

        host.send(A_OPEN, 7, 0, b"shell,v2,raw:head -c 20000 /dev/zero\0")
        command, ours, theirs, _ = host.recv()
        assert (command, theirs) == (A_OKAY, 7)
        stream = b""
        while True:
            command, arg0, arg1, data = host.recv()
            if command == A_CLSE:
                break
            assert (command, arg0, arg1) == (A_WRTE, ours, 7)
            assert len(data) <= 4096  # the host's maxdata
            stream += data
            # One WRTE in flight: no further WRTE until we acknowledge this one (a CLSE may
            # follow the last one right away).
            host.sock.settimeout(0.1)
            try:
                host.sock.recv(1, socket.MSG_PEEK)
            except TimeoutError:
                pass
            else:
                host.sock.settimeout(5)
                assert host.recv()[0] == A_CLSE
                break
            host.sock.settimeout(5)
            host.send(A_OKAY, 7, ours)
        payload = b""
        while stream:
            packet_id, length = struct.unpack("<BI", stream[:5])
            if packet_id == 1:
                payload += stream[5 : 5 + length]
            last = (packet_id, stream[5 : 5 + length])
            stream = stream[5 + length :]
        assert payload == b"\0" * 20000
        assert last == (3, b"\0")  # exit packet, exit code 0
        host.sock.close()


# --- through the real adb server -----------------------------------------------------------


def test_devices_lists_the_phone(emulated_phone: EmulatedPhone) -> None:
    out = emulated_phone.server.adb("devices", "-l", check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith(emulated_phone.serial))
    assert line.split()[1] == "device"
    assert "model:EmuPhone" in line and "product:emu" in line and "device:emu" in line
    # The adb server keeps what our CNXN banner said.
    features = emulated_phone.server.adb("-s", emulated_phone.serial, "features").stdout.split()
    assert set(FEATURES) <= set(features)
    info = emulated_phone.emulator.connects[0]
    assert info.identity.startswith("host::features=")
    assert info.maxdata >= 256 * 1024


def test_adb_shell_echo_exit_code_and_stderr(emulated_phone: EmulatedPhone) -> None:
    assert emulated_phone.adb("shell", "echo hi").stdout == "hi\n"
    assert emulated_phone.adb("shell", "exit 3").returncode == 3
    result = emulated_phone.adb("shell", "echo out; echo err >&2; exit 4")
    assert (result.stdout, result.stderr, result.returncode) == ("out\n", "err\n", 4)
    # The adb CLI uses the shell protocol, with its options before the ':'.
    assert any(s.startswith("shell,v2,") for s in emulated_phone.emulator.services)


def test_adb_shell_stdin_and_environment(emulated_phone: EmulatedPhone) -> None:
    result = emulated_phone.adb("shell", "cat; echo done", input="line1\nline2\n")
    assert result.stdout == "line1\nline2\ndone\n"
    sandbox = emulated_phone.sandbox
    assert emulated_phone.adb("shell", "pwd").stdout.strip() == str(sandbox)
    path = emulated_phone.adb("shell", "echo $PATH").stdout.strip()
    assert path.startswith(f"{sandbox}/system/bin:")
    cpuinfo = emulated_phone.adb("shell", "cat /proc/cpuinfo").stdout
    assert "processor" in cpuinfo
    # No command: a shell reading its script from stdin (the shell protocol closes stdin).
    result = emulated_phone.adb("shell", input="echo from-stdin\nexit 7\n")
    assert (result.stdout, result.returncode) == ("from-stdin\n", 7)


def test_adbutils_shell2_v2_exit_code_and_stderr(emulated_phone: EmulatedPhone) -> None:
    device = emulated_phone.device()
    assert device.shell2("exit 5", v2=True).returncode == 5
    result = device.shell2("echo out; echo err >&2; exit 2", v2=True)
    assert (result.returncode, result.stdout, result.stderr) == (2, "out\n", "err\n")
    assert "shell,v2:echo out; echo err >&2; exit 2" in emulated_phone.emulator.services


def test_adbutils_legacy_shell_merges_stderr(emulated_phone: EmulatedPhone) -> None:
    device = emulated_phone.device()
    assert device.shell("echo hi") == "hi"
    assert device.shell("echo a; echo b >&2") == "a\nb"
    assert "shell:echo hi" in emulated_phone.emulator.services
    # shell2 without v2 appends `; echo X4EXIT:$?` to a legacy shell command.
    assert device.shell2("(exit 6)").returncode == 6


def test_getprop(emulated_phone: EmulatedPhone) -> None:
    assert emulated_phone.adb("shell", "getprop ro.product.model").stdout == "EmuPhone\n"
    assert emulated_phone.adb("shell", "getprop no.such.prop").stdout == "\n"
    listing = emulated_phone.adb("shell", "getprop").stdout
    assert "[ro.soc.model]: [SM8550]" in listing
    assert "[ro.product.cpu.abi]: [arm64-v8a]" in listing
    device = emulated_phone.device()
    assert device.prop.model == "EmuPhone"
    assert device.prop.get("ro.build.version.sdk") == "34"
    emulated_phone.emulator.set_prop("debug.edgebench", "on")
    assert device.shell("getprop debug.edgebench") == "on"


def test_adb_push_pull_roundtrip(emulated_phone: EmulatedPhone, tmp_path: Path) -> None:
    data = _random_file(tmp_path / "blob.bin", MB)
    remote = emulated_phone.sandbox / "data" / "local" / "tmp" / "blob.bin"
    emulated_phone.adb("push", str(tmp_path / "blob.bin"), str(remote), check=True)
    assert remote.read_bytes() == data
    back = tmp_path / "back.bin"
    emulated_phone.adb("pull", str(remote), str(back), check=True)
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(data).digest()
    listing = emulated_phone.adb("shell", "ls -l data/local/tmp").stdout
    assert "blob.bin" in listing
    assert "blob.bin" in emulated_phone.adb("ls", str(remote.parent)).stdout  # LIS2/DNT2


def test_adbutils_sync_push_pull_stat(emulated_phone: EmulatedPhone, tmp_path: Path) -> None:
    device = emulated_phone.device()
    data = _random_file(tmp_path / "blob.bin", MB)
    remote = f"{emulated_phone.sandbox}/data/local/tmp/edgebench/blob.bin"
    assert device.sync.push(tmp_path / "blob.bin", remote, mode=0o640) == MB
    assert Path(remote).read_bytes() == data
    info = device.sync.stat(remote)
    assert info.size == MB
    assert stat.S_ISREG(info.mode) and stat.S_IMODE(info.mode) == 0o640
    assert info.mtime is not None
    assert device.sync.pull(remote, tmp_path / "back.bin") == MB
    assert (tmp_path / "back.bin").read_bytes() == data
    assert device.sync.read_bytes(remote) == data
    directory = device.sync.stat(str(Path(remote).parent))
    assert stat.S_ISDIR(directory.mode)
    names = {entry.path for entry in device.sync.list(str(Path(remote).parent))}
    assert "blob.bin" in names
    device.sync.push(b"text\n", remote)  # overwrite from bytes
    assert device.sync.read_text(remote) == "text\n"
    # A relative device path is taken relative to the sandbox (the shell's cwd).
    device.sync.push(b"rel", "data/local/tmp/rel.txt")
    assert (emulated_phone.sandbox / "data" / "local" / "tmp" / "rel.txt").read_bytes() == b"rel"


def test_push_creates_parent_dirs(emulated_phone: EmulatedPhone, tmp_path: Path) -> None:
    src = tmp_path / "f.txt"
    src.write_text("hello\n")
    nested = emulated_phone.sandbox / "data" / "local" / "tmp" / "a" / "b" / "c" / "f.txt"
    emulated_phone.adb("push", str(src), str(nested), check=True)
    assert nested.read_text() == "hello\n"
    deeper = nested.parent / "d" / "e" / "g.txt"
    emulated_phone.device().sync.push(b"x", str(deeper))
    assert deeper.read_bytes() == b"x"


def test_pull_missing_file_fails_cleanly(emulated_phone: EmulatedPhone, tmp_path: Path) -> None:
    missing = str(emulated_phone.sandbox / "nope.bin")
    result = emulated_phone.adb("pull", missing, str(tmp_path / "x"))
    assert result.returncode != 0
    assert "No such file or directory" in result.stdout + result.stderr
    device = emulated_phone.device()
    with pytest.raises(AdbError, match="No such file or directory"):
        device.sync.read_bytes(missing)
    info = device.sync.stat(missing)
    assert (info.mode, info.size, info.mtime) == (0, 0, None)
    # The device is still fine afterwards.
    assert device.shell("echo ok") == "ok"


def test_push_onto_a_directory_fails(emulated_phone: EmulatedPhone) -> None:
    target = emulated_phone.sandbox / "adir"
    target.mkdir()
    with pytest.raises(AdbError):
        emulated_phone.device().sync._push_file(b"data", str(target))
    assert target.is_dir()


def test_output_bigger_than_maxdata_arrives_complete(
    emulated_phone: EmulatedPhone, tmp_path: Path
) -> None:
    data = _random_file(emulated_phone.sandbox / "big.bin", 3 * MB)
    digest = hashlib.sha256(data).hexdigest()
    device = emulated_phone.device()
    assert hashlib.sha256(device.shell("cat big.bin", encoding=None)).hexdigest() == digest
    raw = device.shell2("cat big.bin", v2=True, encoding=None)
    assert raw.returncode == 0 and hashlib.sha256(raw.stdout).hexdigest() == digest
    out = tmp_path / "out.bin"
    with out.open("wb") as handle:  # `adb exec-out` uses the exec: service
        emulated_phone.adb("exec-out", "cat big.bin", stdout=handle, text=False, check=True)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == digest
    assert "exec:cat big.bin" in emulated_phone.emulator.services
    # Like adbd, exec: has one output stream: stderr goes the same way as stdout.
    assert emulated_phone.adb("exec-out", "echo a; echo b >&2").stdout == "a\nb\n"


@pytest.mark.alone
def test_concurrent_streams(emulated_phone: EmulatedPhone) -> None:
    device = emulated_phone.device()
    results: dict[int, str] = {}

    def run(i: int) -> None:
        results[i] = device.shell(f"sleep 0.3; echo {i}", timeout=10)

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert results == {i: str(i) for i in range(8)}
    assert time.monotonic() - start < 2.0  # they ran side by side, not one after another


def test_unknown_service_is_refused(emulated_phone: EmulatedPhone) -> None:
    device = emulated_phone.device()
    conn = device.open_transport()
    try:
        conn.send_command("frobnicate:now")
        with pytest.raises(AdbError):
            conn.check_okay()
    finally:
        conn.close()
    assert "frobnicate:now" in emulated_phone.emulator.services
    assert device.shell("echo still-here") == "still-here"


def test_host_closing_a_stream_hangs_up_the_command(emulated_phone: EmulatedPhone) -> None:
    device = emulated_phone.device()
    conn = device.shell("echo $$; exec sleep 30", stream=True)
    pid = int(conn.conn.makefile("rb").readline())
    assert _pid_alive(pid)
    conn.close()
    assert _wait_until(lambda: not _pid_alive(pid)), "the command outlived its stream"


@pytest.mark.alone
def test_stopping_the_emulator_mid_session_fails_fast(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    phone = connect_phone(adb_server, tmp_path / "phone")
    try:
        device = phone.device()
        conn = device.shell("echo $$; exec sleep 30", stream=True)
        pid = int(conn.conn.makefile("rb").readline())
        phone.emulator.stop()  # the cable is pulled
        assert not _pid_alive(pid)
        assert not [t for t in threading.enumerate() if t.name.startswith("adb-emu-")]
        conn.close()

        errors: list[BaseException] = []

        def next_call() -> None:
            try:
                device.shell("echo hi", timeout=5)
            except BaseException as exc:
                errors.append(exc)

        start = time.monotonic()
        worker = threading.Thread(target=next_call, daemon=True)
        worker.start()
        worker.join(10)
        elapsed = time.monotonic() - start
        assert not worker.is_alive(), "adbutils hung after the device went away"
        assert errors and isinstance(errors[0], (AdbError, OSError)), errors
        assert elapsed < 6
        result = phone.adb("shell", "echo hi", timeout=10)  # the adb CLI fails fast, too
        assert result.returncode != 0
    finally:
        disconnect_phone(phone)


def test_props_and_env_overrides(adb_server: AdbServer, tmp_path: Path) -> None:
    phone = connect_phone(
        adb_server, tmp_path / "p", props={"ro.product.model": "Pixel8"}, env={"EMU_VAR": "x1"}
    )
    try:
        assert phone.device().prop.model == "Pixel8"
        assert phone.device().shell("echo $EMU_VAR") == "x1"
        out = adb_server.adb("devices", "-l").stdout
        assert "model:Pixel8" in next(ln for ln in out.splitlines() if phone.serial in ln)
    finally:
        disconnect_phone(phone)
