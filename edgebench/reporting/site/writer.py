"""Writing the dashboard's folder: one publisher at a time, whole pages only, and only what
changed.

- A lock file in the folder, held with ``fcntl.flock`` for the whole build: a second
  ``edgebench publish`` into the same folder gets one line naming the first one's pid.
- Each page is written to a temporary file beside it and renamed, so a reader (a browser, a
  web server serving the folder) never sees half a page.
- A manifest keeps each page's content hash and each run report's source stamp: a rebuild
  writes only the pages whose content changed and the reports of new or changed runs, and
  removes the pages and reports it no longer makes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from edgebench.errors import UserError
from edgebench.paths import tree_size, write_json_atomically, write_text_atomically

try:
    import fcntl
except ImportError:  # Windows: no lock, publishing into one folder twice is not detected
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows

log = logging.getLogger(__name__)

MANIFEST = ".edgebench-site.json"
LOCK = ".edgebench-publish.lock"
MANIFEST_VERSION = 1
#: Seconds between two progress lines on a long build.
PROGRESS_EVERY = 3.0


def _content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Progress:
    """A line on stderr every few seconds while a long build goes on."""

    total: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    _last: float = field(default_factory=time.monotonic)

    def tick(self, what: str) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY:
            self._last = now
            print(f"publish: {self.done}/{self.total} {what}", file=self.stream, flush=True)


class SiteWriter:
    """The output folder of one build; use as a context manager (it holds the lock)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.written = 0
        self.unchanged = 0
        self.removed = 0
        self._lock_fd: int | None = None
        self._old: dict[str, Any] = {}
        self._pages: dict[str, str] = {}
        self._reports: dict[str, dict[str, str]] = {}

    # -- the folder and its lock -----------------------------------------------------------

    def __enter__(self) -> SiteWriter:
        self._check_folder()
        self._lock()
        self._old = self._read_manifest()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    def _check_folder(self) -> None:
        out = self.out
        if out.exists() and not out.is_dir():
            raise UserError(f"--out {out} is a file, not a folder; choose a folder for the site")
        site = (out / MANIFEST).exists() or (out / LOCK).exists()
        if out.is_dir() and not site and any(out.iterdir()):
            raise UserError(
                f"--out {out} holds files but no edgebench site; "
                "choose an empty or new folder, or a site folder made by edgebench publish"
            )
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--out {out}: cannot create it ({exc.strerror})") from None

    def _lock(self) -> None:
        path = self.out / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"--out {self.out}: cannot write there ({exc.strerror})") from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise UserError(
                    f"another edgebench publish is writing {self.out} (pid {holder}); "
                    "wait for it or pass another --out"
                ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _read_manifest(self) -> dict[str, Any]:
        path = self.out / MANIFEST
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("warning: %s unreadable (%s); every page is written again", path, exc)
            return {}
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return {}
        return data

    # -- pages ------------------------------------------------------------------------------

    def page(self, relative: str, html: str) -> bool:
        """Write the page at ``relative`` (a path made of safe names) unless the same content
        is there already; True when it was written."""
        digest = _content_hash(html)
        self._pages[relative] = digest
        target = self.out / relative
        if self._old.get("pages", {}).get(relative) == digest and target.is_file():
            self.unchanged += 1
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(target, html)
        self.written += 1
        return True

    def report_current(self, run_id: str, relative: str, stamp: str) -> bool:
        """Whether the run report at ``relative`` was written from the run as it is now."""
        old = self._old.get("reports", {}).get(run_id)
        current = old == {"file": relative, "stamp": stamp} and (self.out / relative).is_file()
        if current:
            self._reports[run_id] = {"file": relative, "stamp": stamp}
            self.unchanged += 1
        return current

    def report(self, run_id: str, relative: str, stamp: str, made: Path) -> None:
        """Move the report file ``made`` (written in this folder's temporary space) into place."""
        target = self.out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(made, target)
        self._reports[run_id] = {"file": relative, "stamp": stamp}
        self.written += 1

    def scratch(self) -> Path:
        """A private temporary folder in the site (same file system: renames are atomic)."""
        folder = self.out / f".tmp-{os.getpid()}"
        folder.mkdir(exist_ok=True)
        return folder

    def finish(self) -> None:
        """Remove what this build no longer makes, then save the manifest."""
        kept = set(self._pages) | {r["file"] for r in self._reports.values()}
        stale = set(self._old.get("pages", {})) | {
            r.get("file", "") for r in self._old.get("reports", {}).values() if isinstance(r, dict)
        }
        for relative in sorted(stale - kept - {""}):
            target = self.out / relative
            if target.resolve().is_relative_to(self.out.resolve()) and target.is_file():
                target.unlink()
                self.removed += 1
        # This build's scratch folder, and any an interrupted build left (the lock is held).
        for scratch in self.out.glob(".tmp-*"):
            if scratch.is_dir() and not scratch.is_symlink():
                for leftover in scratch.iterdir():
                    leftover.unlink()
                scratch.rmdir()
        manifest = {"version": MANIFEST_VERSION, "pages": self._pages, "reports": self._reports}
        write_json_atomically(self.out / MANIFEST, manifest)

    def size(self) -> int:
        return tree_size(self.out)
