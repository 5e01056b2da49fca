"""Where edgebench keeps its files (XDG base directories, overridable by environment)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: builds and installs are not serialised across processes
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def cache_dir() -> Path:
    """Generated models, converted artifacts, the runner's private HOME."""
    override = os.environ.get("EDGEBENCH_CACHE")
    return Path(override) if override else _xdg("XDG_CACHE_HOME", ".cache") / "edgebench"


def default_results_dir() -> Path:
    """Stored runs, one folder per run."""
    override = os.environ.get("EDGEBENCH_RESULTS")
    if override:
        return Path(override)
    return _xdg("XDG_DATA_HOME", ".local/share") / "edgebench" / "runs"


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if missing) across processes; blocks until
    it is free. The kernel releases it if the process dies."""
    if fcntl is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_locked(path: Path) -> bool:
    """Whether a process holds :func:`exclusive_lock` on ``path`` now (False when no file)."""
    if fcntl is None:
        return False
    try:
        handle = open(path)  # noqa: SIM115 - closed below; read-only suffices for flock
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def tree_size(path: Path) -> int:
    """Bytes in the files under ``path`` (links not followed, unreadable files skipped)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for file in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(folder, file)).st_size
    return total


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of one (a
    temporary file beside it, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with suppress(FileNotFoundError):
            tmp.unlink()


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON, atomically (``write_text_atomically``)."""
    write_text_atomically(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def safe_file_name(text: str) -> str:
    """A file-name part: letters, digits, '.', '_' and '-' only, never starting with a dot;
    a name that had to change gets a short hash of the original, so two stay apart."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".")[:60] or "_"
    if safe == text:
        return safe
    return f"{safe}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def stamped_folder(parent: Path, prefix: str) -> Path:
    """A new folder name under ``parent`` for one build: ``<prefix>-<UTC time>-<pid>``."""
    return parent / f"{prefix}-{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}"
