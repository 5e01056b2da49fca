"""Private virtual environments for converters that cannot share the user's environment.

pnnx (ncnn) declares torch as a dependency it does not need; onnx2tf (TFLite) pins its own
TensorFlow, NumPy, ONNX and ONNX Runtime. Each lives in ``<root>/<name>/`` where root is
``$EDGEBENCH_TOOLCHAINS_DIR`` or ``cache_dir()/toolchains``::

    <name>/toolchain.json    state, version, pins, installed packages, size (written last)
    <name>/venv-<stamp>/     the virtual environment toolchain.json points at
    <name>/home/             private HOME for the converter subprocesses
    <name>/install.log       pip's output of the last install

An install builds a new ``venv-<stamp>`` beside the current one and switches to it by
replacing toolchain.json atomically, so an interrupted install never leaves a half-built
environment in use: an interrupted install removes its own (pip and what it started are
stopped first), and the next install removes one a killed edgebench left, saying so. A failed
install records state "broken" with pip's error tail.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from edgebench import process_group
from edgebench.paths import (
    cache_dir,
    exclusive_lock,
    stamped_folder,
    tree_size,
    write_json_atomically,
)

from .base import ConversionError
from .toolchain_specs import TOOLCHAINS, ToolchainSpec

log = logging.getLogger(__name__)

SCHEMA = "edgebench.toolchain/1"
STATE_FILE = "toolchain.json"
ROOT_ENV = "EDGEBENCH_TOOLCHAINS_DIR"
INSTALL_TIMEOUT_S = 3600.0
_DETAIL_LINES = 25
_PIP_MILESTONES = ("Collecting ", "Installing collected", "Successfully installed", "ERROR")


@dataclass
class ToolchainStatus:
    name: str
    state: str  # "installed" | "missing" | "broken"
    version: str | None
    size_bytes: int | None
    path: Path
    detail: str | None


class _InstallError(Exception):
    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def _no_progress(_message: str) -> None:
    pass


def install_command(name: str) -> str:
    return f"edgebench toolchains install {name}"


def toolchains_root() -> Path:
    override = os.environ.get(ROOT_ENV)
    return Path(override) if override else cache_dir() / "toolchains"


def _spec(name: str) -> ToolchainSpec:
    try:
        return TOOLCHAINS[name]
    except KeyError:
        raise ValueError(f"unknown toolchain {name!r}; known: {', '.join(TOOLCHAINS)}") from None


def toolchain_dir(name: str) -> Path:
    _spec(name)
    return toolchains_root() / name


def toolchain_home(name: str) -> Path:
    """HOME for the converter subprocesses: whatever they write stays in here."""
    return toolchain_dir(name) / "home"


def _read_state(name: str) -> dict | None:
    try:
        state = json.loads((toolchain_dir(name) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _venv_dir(name: str, state: dict | None = None) -> Path:
    state = _read_state(name) if state is None else state
    venv = state.get("venv") if state else None
    return toolchain_dir(name) / (venv if isinstance(venv, str) and venv else "venv")


def _python_in(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _site_packages(venv: Path) -> Path:
    if os.name == "nt":
        return venv / "Lib" / "site-packages"
    found = sorted(venv.glob("lib/python3*/site-packages"))
    return found[0] if found else venv / "lib" / "python3" / "site-packages"


def _exe_in(spec: ToolchainSpec, venv: Path, exe: str) -> Path:
    relative = dict(spec.executables).get(exe, f"bin/{exe}")
    site = str(_site_packages(venv).relative_to(venv))
    return venv / relative.format(site=site)


def toolchain_python(name: str) -> Path:
    return _python_in(_venv_dir(name))


def toolchain_bin(name: str, exe: str) -> Path:
    """An executable of the toolchain, e.g. ``toolchain_bin("ncnn", "pnnx")``."""
    return _exe_in(_spec(name), _venv_dir(name), exe)


def toolchain_bin_dir(name: str) -> Path:
    """The venv's scripts folder, to put first on PATH for tools that call each other by name."""
    return toolchain_python(name).parent


def missing_toolchain_error(name: str) -> ConversionError:
    return ConversionError(
        "toolchain_missing",
        f"the {name} converter needs its toolchain: {install_command(name)}",
    )


def toolchain_unavailable(name: str) -> str | None:
    """None when toolchain ``name`` is installed and healthy, else the line with the fix."""
    status = toolchain_status(name)
    if status.state == "installed":
        return None
    if status.state == "missing":
        return missing_toolchain_error(name).message
    problem = (status.detail or "").strip().splitlines()[:1] or ["unusable"]
    return f"the {name} converter's toolchain is broken ({problem[0]}): {install_command(name)}"


def require_toolchain(name: str) -> None:
    reason = toolchain_unavailable(name)
    if reason:
        raise ConversionError("toolchain_missing", reason)


def _health_problem(spec: ToolchainSpec, state: dict) -> str | None:
    if state.get("state") != "installed":
        return state.get("detail") or "the last install did not finish"
    if list(state.get("requirements", [])) != list(spec.requirements):
        return "installed with other pinned versions than this edgebench expects"
    venv = _venv_dir(spec.name, state)
    python = _python_in(venv)
    if not python.exists():
        return f"its Python is missing: {python}"
    for exe, _ in spec.executables:
        path = _exe_in(spec, venv, exe)
        if not path.exists():
            return f"{exe} is missing: {path}"
    return None


def toolchain_status(name: str) -> ToolchainStatus:
    spec = _spec(name)
    folder = toolchain_dir(name)
    state = _read_state(name)
    if state is None:
        return ToolchainStatus(name, "missing", None, None, folder, None)
    problem = _health_problem(spec, state)
    return ToolchainStatus(
        name=name,
        state="broken" if problem else "installed",
        version=state.get("version"),
        size_bytes=state.get("size"),
        path=folder,
        detail=problem,
    )


def install_toolchain(
    name: str, progress: Callable[[str], None] = _no_progress, force: bool = False
) -> ToolchainStatus:
    """Install (or repair) toolchain ``name``; a no-op when it is installed and healthy.

    Never raises for a failed pip run: the returned status is then "broken" with pip's error
    tail in ``detail``, and running this again retries from scratch.
    """
    spec = _spec(name)
    folder = toolchain_dir(name)
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder.parent / f".{name}.lock"):
        _remove_half_built(folder, progress)
        current = toolchain_status(name)
        if current.state == "installed" and not force:
            progress(f"{name}: already installed ({spec.main_package} {current.version})")
            return current
        venv = stamped_folder(folder, "venv")
        started = time.monotonic()
        try:
            state = _build(spec, venv, progress)
        except (_InstallError, OSError) as exc:  # OSError: e.g. the disk filled up
            shutil.rmtree(venv, ignore_errors=True)
            _remove_old_venvs(folder, keep=None)
            detail = f"install failed: {exc}"
            output = exc.output if isinstance(exc, _InstallError) else ""
            if output:
                detail += "\n" + _tail(output)
            _write_state(
                folder,
                {
                    "schema": SCHEMA,
                    "name": name,
                    "state": "broken",
                    "detail": detail,
                    "failed_at": _now(),
                },
            )
            log.warning("toolchain %s: %s", name, detail)
            progress(f"{name}: install failed: {exc}")
            return toolchain_status(name)
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)
            raise
        state["install_seconds"] = round(time.monotonic() - started, 1)
        _write_state(folder, state)
        _remove_old_venvs(folder, keep=venv.name)
        (folder / "home").mkdir(exist_ok=True)
        status = toolchain_status(name)
        size_mb = (status.size_bytes or 0) / 1e6
        progress(f"{name}: installed {spec.main_package} {status.version} ({size_mb:.0f} MB)")
        return status


def _build(spec: ToolchainSpec, venv: Path, progress: Callable[[str], None]) -> dict:
    progress(f"{spec.name}: creating a virtual environment in {venv}")
    install_log = venv.parent / "install.log"
    install_log.write_text("")
    _run("python -m venv", [sys.executable, "-m", "venv", str(venv)], install_log, _no_progress)
    python = _python_in(venv)
    pip = [str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    if spec.no_deps:
        pip.append("--no-deps")
    progress(f"{spec.name}: pip install {' '.join(spec.requirements)}")
    _run("pip install", [*pip, *spec.requirements], install_log, progress)
    for exe, _ in spec.executables:
        if not _exe_in(spec, venv, exe).exists():
            raise _InstallError(f"{exe} not found in the installed packages")
    if spec.smoke:
        exe, *args = spec.smoke
        output = _check_output([str(_exe_in(spec, venv, exe)), *args])
        if spec.smoke_expect not in output:
            raise _InstallError(f"{exe} does not run", output)
    packages = _installed_packages(python)
    return {
        "schema": SCHEMA,
        "name": spec.name,
        "state": "installed",
        "venv": venv.name,
        "version": packages.get(_normalize(spec.main_package)),
        "requirements": list(spec.requirements),
        "packages": packages,
        "python": sys.version.split()[0],
        "installed_at": _now(),
        "size": tree_size(venv),
        "detail": None,
    }


def _tool_env() -> dict[str, str]:
    """The user's environment (proxies, pip configuration) minus what would leak into a venv."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_USER"):
        env.pop(key, None)
    env["PIP_NO_INPUT"] = "1"
    return env


def _run(step: str, argv: list[str], log_path: Path, progress: Callable[[str], None]) -> None:
    """Run an install step, its output appended to log_path; pip's milestones go to progress."""
    lines: list[str] = []
    with open(log_path, "a", encoding="utf-8") as log_file:
        log_file.write(f"$ {' '.join(argv)}\n")
        with process_group.child(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=_tool_env(),
        ) as proc:
            # pip and the builds it starts, not only pip, when the install runs too long.
            timer = threading.Timer(INSTALL_TIMEOUT_S, process_group.stop, (proc,))
            timer.start()
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log_file.write(line)
                    lines.append(line.rstrip())
                    if line.startswith(_PIP_MILESTONES):
                        progress(line.rstrip()[:200])
                returncode = proc.wait()
            finally:
                timer.cancel()
    if returncode != 0:
        raise _InstallError(f"{step} exited with status {returncode}", "\n".join(lines))


def _check_output(argv: list[str]) -> str:
    try:
        proc = process_group.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            env=_tool_env(),
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _InstallError(f"{Path(argv[0]).name} does not run: {exc}") from exc
    return proc.stdout + proc.stderr


def _installed_packages(python: Path) -> dict[str, str]:
    script = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    output = _check_output([str(python), "-I", "-c", script])
    try:
        found = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise _InstallError("cannot list the installed packages", output) from exc
    return {_normalize(k): v for k, v in sorted(found.items(), key=lambda kv: kv[0].lower())}


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _remove_half_built(folder: Path, progress: Callable[[str], None]) -> None:
    """Remove the environments an install killed before it finished left behind (toolchain.json
    never named them); called with the install lock held, so none of them is being built."""
    state = _read_state(folder.name) or {}
    for child in sorted(folder.glob("venv-*")):
        if child.name != state.get("venv") and child.is_dir():
            size_mb = tree_size(child) / 1e6
            progress(
                f"{folder.name}: removing {child} ({size_mb:.0f} MB), left half-built by an "
                "interrupted install"
            )
            shutil.rmtree(child, ignore_errors=True)


def _remove_old_venvs(folder: Path, keep: str | None) -> None:
    for child in folder.glob("venv-*"):
        if child.name != keep and child.is_dir():
            shutil.rmtree(child, ignore_errors=True)


def _write_state(folder: Path, state: dict) -> None:
    write_json_atomically(folder / STATE_FILE, state)


def _tail(text: str, lines: int = _DETAIL_LINES) -> str:
    kept = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
