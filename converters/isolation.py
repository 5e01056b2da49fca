"""Run an external converter as a subprocess that cannot touch the user's home or phone home."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from edgebench import process_group

# Proxies pointing at a closed local port: a tool that tries the network fails fast instead of
# reaching out. Conversion must work offline.
NO_NETWORK = {
    key: "http://127.0.0.1:9"
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
}
LOG_TAIL_CHARS = 20_000


def prepare_private_home(home: Path) -> Path:
    """A HOME for third-party tools, with every telemetry switch we know of turned off."""
    home.mkdir(parents=True, exist_ok=True)
    # OpenVINO's consent file: "0" means declined.
    consent = home / "intel" / "openvino_telemetry"
    consent.parent.mkdir(parents=True, exist_ok=True)
    if not consent.exists():
        consent.write_text("0")
    return home


def isolated_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    env.update(NO_NETWORK)
    env.update(
        HOME=str(prepare_private_home(home)),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        PYTHONDONTWRITEBYTECODE="1",
        NO_ALBUMENTATIONS_UPDATE="1",
        DO_NOT_TRACK="1",
    )
    env.update(extra or {})
    return env


@contextlib.contextmanager
def native_stderr_captured() -> Iterator[list[str]]:
    """What native libraries loaded in this process write to file descriptor 2 (LiteRT's
    INFO lines) goes into the yielded list, once the block ends, instead of the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    captured: list[str] = []
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode(errors="replace"))


@dataclass(frozen=True)
class ToolRun:
    returncode: int | None
    log: str
    duration_s: float
    timed_out: bool = False


def run_tool(argv: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float) -> ToolRun:
    """stdout and stderr merged into one log; the tool and its descendants die on a timeout
    or when edgebench is interrupted (``process_group``)."""
    started = time.monotonic()
    try:
        done = process_group.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        if isinstance(out, bytes):  # the type allows it; the text=True run above gives str
            out = out.decode(errors="replace")
        return ToolRun(None, out[-LOG_TAIL_CHARS:], time.monotonic() - started, True)
    return ToolRun(done.returncode, done.stdout[-LOG_TAIL_CHARS:], time.monotonic() - started)


def last_line(log: str) -> str:
    lines = [ln.strip() for ln in log.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def convert_in_python_subprocess(
    *,
    label: str,
    script: str,
    args: Sequence[str],
    out_dir: Path,
    expected: Path,
    timeout: float,
    unsupported_markers: Sequence[str],
) -> ToolRun:
    """Run a converter script with this interpreter in an isolated subprocess.

    Raises ConversionError: ``unsupported_op`` when the log has one of ``unsupported_markers``
    (the matching line is the message), ``failed`` on a timeout or any other failure.
    """
    import sys

    from edgebench.paths import cache_dir

    from .base import ConversionError

    run = run_tool(
        [sys.executable, "-c", script, *args],
        cwd=out_dir,
        env=isolated_env(cache_dir() / "tool-home"),
        timeout=timeout,
    )
    if run.timed_out:
        raise ConversionError("failed", f"{label} timed out after {timeout:.0f} s", run.log)
    if run.returncode != 0 or not expected.is_file():
        for line in run.log.splitlines():
            if any(marker in line.lower() for marker in unsupported_markers):
                raise ConversionError("unsupported_op", f"{label}: {line.strip()[:300]}", run.log)
        raise ConversionError("failed", f"{label} failed: {last_line(run.log)}", run.log)
    return run
