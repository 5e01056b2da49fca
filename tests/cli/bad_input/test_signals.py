"""SIGTERM and Ctrl-C (SIGINT) while a command runs a long child: edgebench exits with the
shell's code for the signal, every process it started is gone (found through /proc as its
descendants, polled with a deadline), and what it was building is removed or reported.
Grouped by command: `toolchains install`, `runners build`, `board build` / `board status`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgebench.lab import emulated_board as boards

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
    pytest.mark.load_sensitive,
]

SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
#: The last stderr line for each signal.
LAST_LINE = {
    signal.SIGTERM: "edgebench: terminated by SIGTERM",
    signal.SIGINT: "edgebench: aborted",
}


# --- processes ----------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]), fields[0]


def alive(pid: int) -> bool:
    """Running: a zombie has ended (not every container's init reaps orphans)."""
    found = _stat(pid)
    return found is not None and found[1] not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (found := _stat(int(name))) is not None:
            children.setdefault(found[0], []).append(int(name))
    seen: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return {p for p in seen if alive(p)}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def wait_until(condition, what: str, limit_s: float = 60.0):
    deadline = time.monotonic() + limit_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def edgebench(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "edgebench", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )


def as_in_a_terminal() -> None:
    """Ctrl-C reaches a command in a terminal. A suite started in the background of a shell
    without job control inherits SIGINT ignored, and Python then keeps ignoring it, so the
    SIGINT cases would wait forever on an edgebench that rightly ignores what its parent did."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def reaped(proc: subprocess.Popen) -> Iterator[set[int]]:
    """Yields a set for the test to fill with the pids it saw; whatever edgebench left alive
    (only when the test fails) is killed by pid at the end."""
    seen: set[int] = set()
    try:
        yield seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        for pid in seen:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def interrupt(proc: subprocess.Popen, sig: int, tree: set[int]) -> str:
    """Send ``sig`` to edgebench; its stderr once it exited, and every pid of ``tree`` gone."""
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    wait_until(lambda: not any(alive(pid) for pid in tree), "edgebench's children to end", 30)
    return err


def assert_exit_for(proc: subprocess.Popen, sig: int, err: str) -> None:
    assert proc.returncode == 128 + sig, err[-3000:]
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == LAST_LINE[sig], err[-3000:]


class HangingServer:
    """A loopback HTTP "index" that accepts connections and never answers, so the client
    (pip, apt) waits on it for as long as the test wants; ``connected`` is set on the first."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
                self.connected.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() the thread waits in
        self.sock.close()
        for conn in self.conns:
            conn.close()
        self.thread.join(timeout=10)


@pytest.fixture
def hanging_server() -> Iterator[HangingServer]:
    server = HangingServer()
    yield server
    server.close()


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


# --- convert ------------------------------------------------------------------------------------


def test_convert_removes_the_scratch_folder_a_killed_conversion_left(eb_env, tmp_path):
    from fakes.models import save_conv_model

    model = save_conv_model(tmp_path / "tiny.onnx", [1, 3, 32, 32])
    args = [sys.executable, "-m", "edgebench", "convert", str(model), "--to", "tnn"]
    first = subprocess.run(args, env=eb_env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    (entry,) = (Path(eb_env["EDGEBENCH_CACHE"]) / "artifacts" / "tnn").iterdir()
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now: the conversion that wrote there was killed
    dead = entry.with_name(f".{entry.name}.{gone.pid}.k1ll3d00")
    live = entry.with_name(f".{entry.name}.{os.getpid()}.running")  # a conversion under way
    for scratch in (dead, live):
        scratch.mkdir()
        (scratch / "model.tnnproto").write_text("half")
    again = subprocess.run(
        [*args, "--force"], env=eb_env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    said = [ln for ln in again.stderr.splitlines() if "half-built" in ln]
    assert said == [f"edgebench: removing {dead}, left half-built by an interrupted conversion"]
    assert not dead.exists() and live.is_dir()


# --- toolchains install -------------------------------------------------------------------------


def pip_env(eb_env: dict[str, str], tmp_path: Path, index: str) -> dict[str, str]:
    env = {k: v for k, v in eb_env.items() if not k.lower().endswith("_proxy")}
    env.update(
        EDGEBENCH_TOOLCHAINS_DIR=str(tmp_path / "toolchains"),
        PIP_INDEX_URL=index,
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_CACHE_DIR="1",
    )
    return env


@SIGNALS
def test_toolchains_install_stops_pip_and_removes_its_half_built_venv(
    eb_env, tmp_path, hanging_server, sig
):
    env = pip_env(eb_env, tmp_path, f"http://127.0.0.1:{hanging_server.port}/simple")
    env["PIP_TIMEOUT"] = "600"  # pip waits on the index until the signal, never timing out
    proc = edgebench(["toolchains", "install", "ncnn"], env)
    with reaped(proc) as tree:
        assert hanging_server.connected.wait(300), "pip never asked the index"
        tree |= descendants(proc.pid)
        assert any(" -m pip install" in cmdline(pid) for pid in tree), tree
        err = interrupt(proc, sig, tree)
    assert_exit_for(proc, sig, err)
    folder = tmp_path / "toolchains" / "ncnn"
    assert not list(folder.glob("venv-*")), list(folder.iterdir())
    assert not (folder / "toolchain.json").exists()


def test_toolchains_install_removes_the_venv_a_killed_install_left(
    eb_env, tmp_path, hanging_server
):
    env = pip_env(eb_env, tmp_path, f"http://127.0.0.1:{hanging_server.port}/simple")
    env["PIP_TIMEOUT"] = "600"
    proc = edgebench(["toolchains", "install", "ncnn"], env)
    with reaped(proc) as tree:
        assert hanging_server.connected.wait(300), "pip never asked the index"
        tree |= descendants(proc.pid)
        proc.kill()  # SIGKILL: edgebench cannot clean up; pip is stopped by the test
        proc.communicate(timeout=60)
        for pid in tree:
            os.kill(pid, signal.SIGKILL)
    (left,) = (tmp_path / "toolchains" / "ncnn").glob("venv-*")
    # Next install: the index refuses at once, so it fails quickly, after the cleanup.
    env = pip_env(eb_env, tmp_path, f"http://127.0.0.1:{closed_port()}/simple")
    env.update(PIP_RETRIES="0", PIP_TIMEOUT="5")
    again = subprocess.run(
        [sys.executable, "-m", "edgebench", "toolchains", "install", "ncnn"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = [ln for ln in again.stderr.splitlines() if str(left) in ln]
    assert len(said) == 1 and "left half-built by an interrupted install" in said[0], again.stderr
    assert not left.exists()


# --- runners build ------------------------------------------------------------------------------


SLOW_CMAKE = """cmake_minimum_required(VERSION 3.10)
project(ncnn NONE)
# A configure step that never ends on its own: its shell records its pid, then waits.
execute_process(COMMAND sh -c
  "echo $$ > {mark}.tmp && mv {mark}.tmp {mark} && exec tail -f /dev/null")
"""


@pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("g++") is None, reason="needs cmake and g++"
)
@SIGNALS
def test_runners_build_stops_cmake_and_its_children_and_says_what_it_keeps(eb_env, tmp_path, sig):
    source = tmp_path / "ncnn-src"
    source.mkdir()
    mark = tmp_path / "configure.pid"
    (source / "CMakeLists.txt").write_text(SLOW_CMAKE.format(mark=mark))
    env = dict(eb_env, EDGEBENCH_NATIVE_DIR=str(tmp_path / "native"))
    proc = edgebench(["runners", "build", "--framework", "ncnn", "--source", f"ncnn={source}"], env)
    with reaped(proc) as tree:
        wait_until(mark.exists, "cmake's configure step to start", 300)
        configure_shell = int(mark.read_text())
        tree |= descendants(proc.pid)
        assert configure_shell in tree, tree
        assert any(Path(cmdline(pid).split(" ")[0]).name == "cmake" for pid in tree), tree
        err = interrupt(proc, sig, tree)
    assert_exit_for(proc, sig, err)
    (library,) = [p for p in (tmp_path / "native" / "libs").iterdir() if p.is_dir()]
    assert not (library / "done.json").exists()
    kept = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(kept) == 1 and f"the unfinished build in {library} is kept" in kept[0], err
    assert f"rm -rf {library}" in kept[0]


# --- board build / board status -----------------------------------------------------------------


def test_board_build_stops_mmdebstrap_and_removes_the_unfinished_root(
    eb_env, tmp_path, hanging_server
):
    problem = boards.build_problem()
    if problem:
        pytest.skip(f"this machine cannot build the board: {problem}")
    folder = tmp_path / "boards"
    env = dict(eb_env, **{boards.ROOT_ENV: str(folder)})
    env[boards.MIRROR_ENV] = f"http://127.0.0.1:{hanging_server.port}/debian"
    proc = edgebench(["board", "build"], env)
    with reaped(proc) as tree:
        assert hanging_server.connected.wait(600), "mmdebstrap never asked the mirror"
        tree |= descendants(proc.pid)
        assert any("mmdebstrap" in cmdline(pid) for pid in tree), tree
        err = interrupt(proc, signal.SIGTERM, tree)
    assert_exit_for(proc, signal.SIGTERM, err)
    assert not list((folder / "arm64").glob("root-*"))
    status = subprocess.run(
        [sys.executable, "-m", "edgebench", "board", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.stdout.splitlines()[0] == "arm64: missing", status.stdout


def _board_status(env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "edgebench", "board", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def _half_built_root(folder: Path, name: str) -> Path:
    """A root as mmdebstrap leaves it when killed part-way (the state file not written)."""
    root = folder / "arm64" / name
    (root / "var" / "cache" / "apt" / "archives").mkdir(parents=True)
    (root / "var" / "cache" / "apt" / "archives" / "libc6_arm64.deb").write_bytes(b"\0" * 3_000_000)
    (root / "usr" / "bin").mkdir(parents=True)
    (folder / "arm64" / "build.log").write_text("$ unshare --mount ... mmdebstrap ...\n")
    return root


def test_board_status_reports_a_half_built_board_with_its_size_and_the_fix(eb_env, tmp_path):
    folder = tmp_path / "boards"
    env = dict(eb_env, **{boards.ROOT_ENV: str(folder)})
    root = _half_built_root(folder, "root-20250101T000000-4242")
    lines = _board_status(env)
    assert lines[0] == "arm64: half-built", lines
    (left,) = [ln for ln in lines if str(root) in ln]
    assert "(3 MB)" in left and f"rm -rf {root}" in left and "edgebench board build" in left

    # Beside a built board (a rebuild killed part-way), the board is usable and it is said.
    current = folder / "arm64" / "root-20240101T000000-1"
    (current / boards.PYTHON.lstrip("/")).parent.mkdir(parents=True)
    (current / boards.PYTHON.lstrip("/")).write_text("")
    state = {"state": "installed", "recipe": boards.RECIPE, "root": current.name}
    (folder / "arm64" / "board.json").write_text(json.dumps(state))
    lines = _board_status(env)
    assert lines[0] == "arm64: installed", lines
    assert [ln for ln in lines if str(root) in ln and "(3 MB)" in ln], lines
    assert not [ln for ln in lines if str(current) in ln and "half-built" in ln], lines


def test_board_status_while_another_process_builds_says_building(eb_env, tmp_path):
    folder = tmp_path / "boards"
    env = dict(eb_env, **{boards.ROOT_ENV: str(folder)})
    root = _half_built_root(folder, "root-20250101T000000-4242")
    with open(folder / ".arm64.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as the builder holds it
        lines = _board_status(env)
    assert lines[0] == "arm64: building", lines
    assert not [ln for ln in lines if str(root) in ln and "rm -rf" in ln], lines
