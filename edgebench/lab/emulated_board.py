"""An emulated aarch64 board: a Debian arm64 root with the frameworks' real ARM wheels, run on
this x86 machine by qemu's user mode.

Its latency is meaningless (every instruction is translated), but its outputs are not: the
frameworks run their ARM kernels (NEON, ARMv8.2 fp16 arithmetic), so the board shows what the
output check will meet on a phone. Built once into ``<root>/arm64/`` where root is
``$EDGEBENCH_BOARDS_DIR`` or ``cache_dir()/boards``::

    arm64/board.json     state, recipe version, packages, onnxruntime chosen, size (written last)
    arm64/root-<stamp>/  the Debian root board.json points at
    arm64/build.log      mmdebstrap's and pip's output of the last build

A build makes a new ``root-<stamp>`` and switches to it by replacing board.json atomically, so
an interrupted build never leaves a half-built root in use; ``.arm64.lock`` serialises builds.
An interrupted build stops mmdebstrap, pip and dpkg under qemu (``process_group``) and removes
its root; a root that a killed edgebench left is shown by ``board status`` (state
``half-built`` when no board is built) and removed by the next build.

Programs in the root run through binfmt_misc (the kernel starts qemu-aarch64-static for any
aarch64 ELF, with the F flag, so they also run after chroot). :func:`board_command` runs a
command inside the root with /proc, /sys and /dev bind-mounted in a private mount namespace,
so nothing is left mounted on the host when it ends.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from edgebench import process_group
from edgebench.errors import UserError
from edgebench.lab.apt_sources import debian_mirror
from edgebench.lab.board_host import QEMU, build_problem
from edgebench.paths import (
    cache_dir,
    exclusive_lock,
    is_locked,
    stamped_folder,
    tree_size,
    write_json_atomically,
)

log = logging.getLogger(__name__)

SCHEMA = "edgebench.board/1"
STATE_FILE = "board.json"
ROOT_ENV = "EDGEBENCH_BOARDS_DIR"
MIRROR_ENV = "EDGEBENCH_BOARD_MIRROR"
NAME = "arm64"
#: Bump when the recipe below changes: a board built by another recipe is rebuilt.
RECIPE = 1
SUITE = "bookworm"
DEBIAN_PACKAGES = ("python3.11", "python3", "libstdc++6", "libgomp1", "zlib1g")
PYTHON = "/usr/bin/python3.11"
SITE = "usr/local/lib/python3.11/dist-packages"
#: The frameworks' aarch64 wheels (tflite-runtime 2.14 is built against NumPy 1).
WHEELS = (
    "numpy==1.26.4",
    "ncnn==1.0.20261020",
    "MNN==3.6.1",
    "openvino==2026.4.1",
    "tflite-runtime==2.14.0",
    "flatbuffers",
    "protobuf",
    "packaging",
)
#: Wheels added after the recipe's, each installed without its dependencies, and into a board
#: already built in place (``build_board``), so adding one rebuilds no board.
#: onnxruntime-genai asks for onnxruntime>=1.31, which crashes under qemu 7.2 (below); it runs
#: on the onnxruntime the build keeps (1.27.0: llm-tiny's logits pass the output check).
ADDED_WHEELS = ("onnxruntime-genai==0.18.0",)
#: The frameworks those wheels install: the probe demands exactly these (mnn-llm is the LLM
#: engine of the MNN wheel). TNN has no wheel (it runs through edgebench-native), TensorRT
#: needs an NVIDIA GPU and llama-cpp-python has no aarch64 wheel (llama.cpp runs through
#: edgebench-native too), so a registry framework outside this list never refuses the board.
FRAMEWORKS = ("onnxruntime", "ncnn", "mnn", "openvino", "tflite", "mnn-llm", "onnxruntime-genai")
#: Newest first: the first that runs an inference under this machine's qemu is kept.
ONNXRUNTIME_CANDIDATES = (
    "1.32.0",
    "1.31.1",
    "1.30.0",
    "1.29.0",
    "1.28.0",
    "1.27.0",
    "1.26.0",
    "1.24.4",
    "1.22.1",
    "1.19.2",
)
#: manylinux tags pip may take for an arm64 bookworm root (glibc 2.36); pip does not widen an
#: explicit --platform to older glibc versions by itself.
PLATFORMS = ("manylinux2014_aarch64", *(f"manylinux_2_{v}_aarch64" for v in range(17, 37)))
BUILD_TIMEOUT_S = 1800.0
SMOKE_TIMEOUT_S = 300.0
PRIVATE_MOUNTS = ("unshare", "--mount", "--propagation", "private", "--")
#: Run inside the private mount namespace: the root's /proc, /sys and /dev become the host's.
_ENTER_SCRIPT = (
    'r=$1; mode=$2; shift 2; for d in proc sys dev; do mount --rbind "/$d" "$r/$d" || exit 125;'
    ' done; if [ "$mode" = chroot ]; then exec chroot "$r" "$@"; else exec "$@"; fi'
)


@dataclass
class BoardStatus:
    name: str
    state: str  # "installed" | "missing" | "broken" | "building" | "half-built"
    root: Path | None
    detail: str | None
    info: dict
    #: root-* folders no finished build names: what builds killed before the end left.
    leftovers: tuple[Path, ...] = ()


class BoardError(UserError):
    """The board cannot be built or entered here; the message names the fix."""


def build_command(_name: str = NAME) -> str:
    return "edgebench board build"


def boards_root() -> Path:
    override = os.environ.get(ROOT_ENV)
    return Path(override) if override else cache_dir() / "boards"


def board_dir(name: str = NAME) -> Path:
    if name != NAME:
        raise BoardError(f"unknown board {name!r}: the one emulated board is {NAME}")
    return boards_root() / name


def _read_state(name: str) -> dict:
    try:
        state = json.loads((board_dir(name) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _lock_path(name: str) -> Path:
    return board_dir(name).parent / f".{name}.lock"


def board_status(name: str = NAME) -> BoardStatus:
    return _status(name, building=is_locked(_lock_path(name)))


def _status(name: str, building: bool) -> BoardStatus:
    state = _read_state(name)
    # While a build holds the lock, its root-* is not left over: it is being written.
    leftovers = () if building else _leftover_roots(name, state)
    if not state:
        if building:
            detail = f"a build is under way, log: {board_dir(name) / 'build.log'}"
            return BoardStatus(name, "building", None, detail, {})
        if leftovers:
            detail = "a build was interrupted before it finished"
            return BoardStatus(name, "half-built", None, detail, {}, leftovers)
        return BoardStatus(name, "missing", None, None, {})
    root = board_dir(name) / str(state.get("root") or "root")
    problem = None
    if state.get("state") != "installed":
        problem = state.get("detail") or "the last build did not finish"
    elif state.get("recipe") != RECIPE:
        problem = f"built by recipe {state.get('recipe')}, this edgebench uses recipe {RECIPE}"
    elif not (root / PYTHON.lstrip("/")).exists():
        problem = f"its Python is missing: {root / PYTHON.lstrip('/')}"
    state_name = "broken" if problem else "installed"
    return BoardStatus(name, state_name, root, problem, state, leftovers)


def _leftover_roots(name: str, state: dict) -> tuple[Path, ...]:
    current = state.get("root") if state.get("state") == "installed" else None
    found = board_dir(name).glob("root-*")
    return tuple(sorted(p for p in found if p.is_dir() and p.name != current))


def board_root(name: str = NAME) -> Path:
    """The root of a healthy board; BoardError with the build line otherwise."""
    status = board_status(name)
    if status.state != "installed" or status.root is None:
        why = f"is broken ({status.detail})" if status.state == "broken" else "is not built"
        if status.state in ("building", "half-built"):
            why += f" ({status.detail})"
        raise BoardError(f"the {name} board {why}: {build_command(name)}")
    return status.root


# --- running things inside --------------------------------------------------------------------


def board_command(root: Path, argv: Sequence[str], *, chroot: bool = True) -> list[str]:
    """argv that runs ``argv`` inside the board: in a private mount namespace with the host's
    /proc, /sys and /dev bound into ``root``, then chrooted into it (``chroot=False`` runs a
    host program, sshd say, in that namespace: it chroots by itself)."""
    mode = "chroot" if chroot else "host"
    shell = ["sh", "-c", _ENTER_SCRIPT, "eb-board", str(root), mode, *argv]
    return [*PRIVATE_MOUNTS, *shell]


def run_in_board(
    root: Path, argv: Sequence[str], timeout: float = SMOKE_TIMEOUT_S, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return process_group.run(
        board_command(root, argv),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- building ---------------------------------------------------------------------------------


class _BuildError(Exception):
    pass


def _no_progress(_message: str) -> None:
    pass


def build_board(
    name: str = NAME, progress: Callable[[str], None] = _no_progress, force: bool = False
) -> BoardStatus:
    """Build (or rebuild) the board; a no-op when it is built by this recipe and healthy.
    BoardError when this machine cannot build it; a failed build leaves state "broken"."""
    folder = board_dir(name)
    problem = build_problem()
    if problem:
        raise BoardError(f"cannot build the {name} board: {problem}")
    folder.mkdir(parents=True, exist_ok=True)
    # sshd's ChrootDirectory refuses a root under a folder others may write to (a umask of
    # 002 would make ours so).
    for path in (folder, folder.parent):
        mode = path.stat().st_mode
        if mode & 0o022 and path.stat().st_uid == os.geteuid():
            os.chmod(path, mode & ~0o022 & 0o7777)
    with exclusive_lock(_lock_path(name)):
        for stale in _status(name, building=False).leftovers:
            size_mb = tree_size(stale) / 1e6
            progress(f"{name}: removing {stale} ({size_mb:.0f} MB), left by an interrupted build")
            shutil.rmtree(stale, ignore_errors=True)
        current = _status(name, building=False)
        if current.state == "installed" and not force:
            if current.info.get("added_wheels") != list(ADDED_WHEELS):
                return _add_wheels(current, progress)
            progress(f"{name}: already built ({current.root})")
            return current
        root = stamped_folder(folder, "root")
        started = time.monotonic()
        build_log = folder / "build.log"
        build_log.write_text("")
        try:
            state = _build(root, build_log, progress)
        except (_BuildError, OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(root, ignore_errors=True)
            _write_state(folder, {"schema": SCHEMA, "state": "broken", "detail": str(exc)})
            progress(f"{name}: build failed: {exc} (log: {build_log})")
            return _status(name, building=False)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        state["build_seconds"] = round(time.monotonic() - started, 1)
        state["size_bytes"] = tree_size(root)
        _write_state(folder, state)
        for old in folder.glob("root-*"):
            if old.name != root.name:
                shutil.rmtree(old, ignore_errors=True)
        status = _status(name, building=False)
        progress(
            f"{name}: built in {state['build_seconds']:.0f} s, "
            f"{state['size_bytes'] / 1e6:.0f} MB at {root}"
        )
        return status


def _build(root: Path, build_log: Path, progress: Callable[[str], None]) -> dict:
    mirror = os.environ.get(MIRROR_ENV) or debian_mirror(SUITE)
    if not mirror:
        raise _BuildError(
            f"this host's apt sources name no Debian {SUITE} mirror: set {MIRROR_ENV} to one"
        )
    progress(f"debian {SUITE} arm64 root from {mirror} (mmdebstrap, about 2 minutes)")
    # In a private mount namespace: the /proc and /dev mmdebstrap mounts in the root while it
    # installs never outlive it on the host, even if it is killed.
    _run(
        [
            *PRIVATE_MOUNTS,
            "mmdebstrap",
            "--variant=essential",
            "--architectures=arm64",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            SUITE,
            str(root),
            mirror,
        ],
        build_log,
    )
    site = root / SITE
    site.mkdir(parents=True, exist_ok=True)
    progress(f"aarch64 wheels: {', '.join(WHEELS[:5])}")
    _pip_target(site, list(WHEELS), build_log)
    runtime, rejected = _choose_onnxruntime(root, build_log, progress)
    _pip_target(site, list(ADDED_WHEELS), build_log, deps=False)
    progress("checking every framework imports inside the root")
    probe = _probe(root)
    return {
        "schema": SCHEMA,
        "state": "installed",
        "recipe": RECIPE,
        "root": root.name,
        "suite": SUITE,
        "architecture": "arm64",
        "mirror": mirror,
        "python": probe.get("python"),
        "frameworks": _versions(probe),
        "added_wheels": list(ADDED_WHEELS),
        "onnxruntime": runtime,
        "onnxruntime_rejected": rejected,
        "qemu": _qemu_version(),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _versions(probe: dict) -> dict[str, str | None]:
    found = probe.get("frameworks", {})
    return {k: v.get("version") for k, v in found.items() if v.get("available")}


def _add_wheels(current: BoardStatus, progress: Callable[[str], None]) -> BoardStatus:
    """``ADDED_WHEELS`` installed into the built board ``current`` (under the build lock), the
    probe run again, and board.json rewritten to say so. The wheels only add packages: the
    board stays usable meanwhile, and if they fail it is left as it was."""
    assert current.root is not None
    folder = board_dir(current.name)
    build_log = folder / "build.log"
    progress(f"{current.name}: adding {', '.join(ADDED_WHEELS)} to {current.root}")
    try:
        _pip_target(current.root / SITE, list(ADDED_WHEELS), build_log, deps=False)
        probe = _probe(current.root)
    except (_BuildError, OSError, subprocess.TimeoutExpired) as exc:
        progress(f"{current.name}: adding wheels failed: {exc} (log: {build_log})")
        detail = f"adding {', '.join(ADDED_WHEELS)} failed: {exc} (log: {build_log})"
        return replace(current, state="broken", detail=detail)
    state = dict(current.info, added_wheels=list(ADDED_WHEELS), frameworks=_versions(probe))
    _write_state(folder, state)
    return _status(current.name, building=False)


def _run(argv: list[str], build_log: Path, timeout: float = BUILD_TIMEOUT_S) -> str:
    with open(build_log, "a") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        proc = process_group.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
        # apt, mmdebstrap and pip name the cause in their first "E:" or "ERROR:" line; their
        # last line only says that they stopped.
        errors = [ln for ln in lines if ln.startswith(("E:", "ERROR:"))]
        why = (errors or lines[-1:] or ["no output"])[0]
        tool = (
            argv[len(PRIVATE_MOUNTS)]
            if tuple(argv[: len(PRIVATE_MOUNTS)]) == PRIVATE_MOUNTS
            else argv[0]
        )
        raise _BuildError(f"{Path(tool).name} exited {proc.returncode}: {why[:300]}")
    return proc.stdout


def _pip_target(target: Path, requirements: list[str], build_log: Path, deps: bool = True) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    argv += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    argv += ["--abi", "cp311", "--target", str(target), "--upgrade"]
    for platform in PLATFORMS:
        argv += ["--platform", platform]
    if not deps:
        argv.append("--no-deps")
    _run([*argv, *requirements], build_log)


def _choose_onnxruntime(
    root: Path, build_log: Path, progress: Callable[[str], None]
) -> tuple[str, dict[str, str]]:
    """Install the newest onnxruntime that runs an inference under this qemu, each candidate
    in its own folder named by a .pth file; returns its version and why others were left."""
    rejected: dict[str, str] = {}
    model = _tiny_model_bytes()
    for version in ONNXRUNTIME_CANDIDATES:
        folder = root / "opt" / f"onnxruntime-{version}"
        try:
            _pip_target(folder, [f"onnxruntime=={version}"], build_log, deps=False)
        except _BuildError as exc:
            rejected[version] = f"no aarch64 wheel: {exc}"
            shutil.rmtree(folder, ignore_errors=True)
            continue
        pth = root / SITE / "edgebench-onnxruntime.pth"
        pth.write_text(f"/opt/{folder.name}\n")
        (root / "tmp" / "eb-tiny.onnx").write_bytes(model)
        proc = run_in_board(root, [PYTHON, "-c", _ORT_SMOKE])
        if proc.returncode == 0 and "EB-ORT-OK" in proc.stdout:
            progress(f"onnxruntime {version} runs under qemu")
            (root / "tmp" / "eb-tiny.onnx").unlink(missing_ok=True)
            return version, rejected
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        rejected[version] = f"exit {proc.returncode}: {why[0][:200]}"
        progress(f"onnxruntime {version} does not run under qemu ({rejected[version]})")
        pth.unlink()
        shutil.rmtree(folder, ignore_errors=True)
    raise _BuildError(f"no onnxruntime runs under this qemu: {rejected}")


_ORT_SMOKE = (
    "import numpy as np, onnxruntime as o\n"
    "s = o.InferenceSession('/tmp/eb-tiny.onnx', providers=['CPUExecutionProvider'])\n"
    "y = s.run(None, {'x': np.ones((1, 4), np.float32)})[0]\n"
    "assert float(y.sum()) == 8.0, y\n"
    "print('EB-ORT-OK')\n"
)


def _tiny_model_bytes() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "tiny", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _probe(root: Path) -> dict:
    from edgebench.lab.device import parse_runner_output
    from edgebench.lab.runner_tree import ENTRY_SCRIPT, write_runner_tree

    with tempfile.TemporaryDirectory(dir=root / "tmp") as tmp:
        write_runner_tree(Path(tmp) / "runner")
        inside = f"/tmp/{Path(tmp).name}/runner/{ENTRY_SCRIPT}"
        proc = run_in_board(root, [PYTHON, inside, "--probe"])
    probe = parse_runner_output(proc.stdout)
    if probe is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise _BuildError(f"the runner does not run inside the root: {tail[0][:300]}")
    missing = missing_frameworks(probe)
    if missing:
        raise _BuildError(f"frameworks that do not import inside the root: {', '.join(missing)}")
    return probe


def missing_frameworks(probe: dict) -> list[str]:
    """The recipe's frameworks that the runner's probe inside the root did not find."""
    found = probe.get("frameworks", {})
    return [name for name in FRAMEWORKS if not found.get(name, {}).get("available")]


def _qemu_version() -> str | None:
    try:
        out = process_group.run([QEMU, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    first = out.stdout.strip().splitlines()[:1]
    return first[0] if first else None


def _write_state(folder: Path, state: dict) -> None:
    write_json_atomically(folder / STATE_FILE, state)
