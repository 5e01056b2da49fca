"""Append-only results store: one folder per run, one JSON line per finished cell."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.paths import write_json_atomically
from edgebench.results.records import Record, json_kind

log = logging.getLogger(__name__)

RUN_SCHEMA = "edgebench.run/1"
# Devices are measured in parallel threads; their records go through one writer at a time.
_APPEND_LOCK = threading.Lock()
RECORDS_FILE = "records.jsonl"
RUN_FILE = "run.json"
#: How far back a torn tail is searched for the last complete line, per read.
_TAIL_CHUNK = 65536
#: Problems already reported, so reading a run twice in one command says it once.
_REPORTED: set[tuple[str, int, str]] = set()
_REPORT_LOCK = threading.Lock()
_ID_TIME = re.compile(r"(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})-")

#: Told of each stored record: (run, record, records.jsonl's stat before the append, its stat
#: right after it, None when another writer's bytes may be in it). The results index keeps
#: its rows current this way; a listener that fails never fails the append.
AppendListener = Callable[
    ["RunDir", Record, "os.stat_result | None", "os.stat_result | None"], None
]
_APPEND_LISTENERS: list[AppendListener] = []


def add_append_listener(listener: AppendListener) -> None:
    if listener not in _APPEND_LISTENERS:
        _APPEND_LISTENERS.append(listener)


def _report(path: Path, line: int, problem: str) -> None:
    key = (str(path), line, problem)
    with _REPORT_LOCK:
        if key in _REPORTED:
            return
        _REPORTED.add(key)
    where = f"{path}, line {line}" if line else str(path)
    log.warning("%s skipped: %s", where, problem)


class RunFileError(UserError):
    """A run's ``run.json`` or ``records.jsonl`` that cannot be read: missing where it must
    exist, a folder, a link to nothing, a pipe, or refused by the file system."""

    def __init__(self, run_id: str, path: Path, problem: str, fix: str) -> None:
        super().__init__(f"run {run_id}: {path} {problem}; {fix}")
        self.run_id, self.path, self.problem = run_id, path, problem


def file_problem(path: Path) -> str | None:
    """Why ``path`` is not a regular file to read ("is missing", "is a folder, not a file",
    ...), or None when it is one. Checked before opening: a named pipe would block."""
    if path.is_file():
        return None
    if path.is_symlink() and not path.exists():
        return "is a link to nothing"
    if path.is_dir():
        return "is a folder, not a file"
    if path.exists():
        return "is not a regular file"
    return "is missing"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


@dataclass
class RunDir:
    """One stored run: ``run.json`` (metadata) and ``records.jsonl`` (records)."""

    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS_FILE

    @property
    def metadata_path(self) -> Path:
        return self.path / RUN_FILE

    @property
    def has_metadata(self) -> bool:
        """Whether the run has a run.json at all (readable or not)."""
        return os.path.lexists(self.metadata_path)

    def append(self, record: Record) -> None:
        """Write one record durably before the next cell starts (one writer at a time). A torn
        last line (a crash mid-write) is repaired or cut off first, so the record starts on a
        line of its own instead of being glued to the fragment."""
        data = (
            json.dumps(record.to_dict(), separators=(",", ":"), allow_nan=False) + "\n"
        ).encode()
        with _APPEND_LOCK:
            before = _stat(self.records_path)
            with open(self.records_path, "a+b") as fh:
                self._mend_torn_tail(fh)
                start = fh.seek(0, os.SEEK_END)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
                after: os.stat_result | None = os.fstat(fh.fileno())
            if after is not None and after.st_size != start + len(data):
                after = None  # another process wrote too
            for listener in _APPEND_LISTENERS:
                try:
                    listener(self, record, before, after)
                except Exception as exc:  # the record is stored whatever a listener does
                    log.debug("after storing a record of %s: %s", self.run_id, exc)

    def _mend_torn_tail(self, fh: Any) -> None:
        """The file must end with a newline before a record is appended. A last line without
        one is a complete record whose newline was lost (it gets it) or a fragment (it is cut
        off, and reported)."""
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        start = size
        while start > 0:  # back to the last newline, a chunk at a time
            chunk_start = max(0, start - _TAIL_CHUNK)
            fh.seek(chunk_start)
            found = fh.read(start - chunk_start).rfind(b"\n")
            if found >= 0:
                start = chunk_start + found + 1
                break
            start = chunk_start
        fh.seek(start)
        tail = fh.read(size - start)
        if _parse_line(tail.decode("utf-8", errors="replace"))[0] is not None:
            fh.write(b"\n")  # a whole record: only its newline was lost
            return
        fh.truncate(start)
        log.warning(
            "%s: cut off a torn last line (%d bytes, from a write that did not finish)",
            self.records_path,
            len(tail),
        )

    def _open(self, path: Path, fix: str, **kwargs: Any) -> Any:
        """``path`` opened for reading, or a ``RunFileError`` saying why it cannot be."""
        problem = file_problem(path)
        if problem is not None:
            raise RunFileError(self.run_id, path, problem, fix)
        try:
            return open(path, **kwargs)  # the caller closes it
        except OSError as exc:
            raise RunFileError(
                self.run_id, path, f"cannot be read ({exc.strerror or exc})", fix
            ) from None

    def _open_records(self) -> Any:
        missing = not os.path.lexists(self.records_path)
        fix = (
            "the run's records are gone; restore the file or measure again"
            if missing
            else f"move it aside and restore the run's {RECORDS_FILE}, or remove the run"
        )
        return self._open(self.records_path, fix, encoding="utf-8", errors="replace")

    def check_files(self) -> None:
        """Raise ``RunFileError`` now when records.jsonl or run.json cannot be read, before a
        command writes anything from the run."""
        self.metadata()
        self._open_records().close()

    def records(self) -> list[Record]:
        """All complete records. A line that is not one (torn by a crash mid-write, not a JSON
        object, a field of the wrong type) is skipped and reported on stderr. A records file
        that is missing or not a readable file is a ``RunFileError`` naming it: a run always
        has one (``create_run`` makes it empty), so "0 cells" would hide the damage."""
        records = []
        with self._open_records() as fh:
            try:
                for number, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    record, problem = _parse_line(line)
                    if record is None:
                        _report(self.records_path, number, problem)
                        continue
                    records.append(record)
            except OSError as exc:  # a disk error mid-read
                reason = f"cannot be read ({exc.strerror or exc})"
                raise RunFileError(
                    self.run_id, self.records_path, reason, "copy what is left"
                ) from None
        return records

    def current_records(self) -> list[Record]:
        """One record per cell: a resumed run's later attempt replaces an earlier failure.

        The file keeps every attempt; this is the view reports and matrices use.
        """
        return latest_per_cell(self.records())

    def metadata(self) -> dict[str, Any]:
        """run.json; empty when it is missing (``has_metadata`` tells) or is not a JSON object
        (that is reported). One that is not a readable file is a ``RunFileError`` naming it."""
        path = self.metadata_path
        if not os.path.lexists(path):
            return {}
        fix = f"move it aside (the records are read without {RUN_FILE}) or remove the run"
        try:
            with self._open(path, fix, encoding="utf-8") as fh:
                meta = json.loads(fh.read())
        except ValueError as exc:  # not JSON, or not UTF-8
            _report(path, 0, f"not readable as JSON ({exc})")
            return {}
        except OSError as exc:
            reason = f"cannot be read ({exc.strerror or exc})"
            raise RunFileError(self.run_id, path, reason, fix) from None
        if not isinstance(meta, dict):
            _report(path, 0, f"holds a JSON {json_kind(meta)}, not an object")
            return {}
        return meta

    def write_metadata(self, meta: dict[str, Any]) -> None:
        write_json_atomically(self.path / RUN_FILE, meta)

    def update_metadata(self, **changes: Any) -> None:
        meta = self.metadata()
        meta.update(changes)
        self.write_metadata(meta)


def latest_per_cell(records: list[Record]) -> list[Record]:
    """The last record of each cell, a replaced cell moved to where its last attempt is."""
    latest: dict[str, Record] = {}
    for record in records:
        latest.pop(record.cell_id, None)
        latest[record.cell_id] = record
    return list(latest.values())


def _parse_line(line: str) -> tuple[Record | None, str]:
    """A records.jsonl line as a record, or None and what is wrong with it."""
    try:
        data = json.loads(line)
    except ValueError:
        return None, "not a whole JSON line (torn by a crash mid-write?)"
    if not isinstance(data, dict):
        return None, f"a JSON {json_kind(data)}, not a record object"
    try:
        return Record.from_dict(data), ""
    except (ValueError, TypeError) as exc:
        return None, f"not a valid record ({exc})"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def is_run(folder: Path) -> bool:
    """Whether ``folder`` holds a run: a run.json or a records.jsonl, in whatever state."""
    return any(os.path.lexists(folder / name) for name in (RUN_FILE, RECORDS_FILE))


def created_at(run_id: str, meta: dict[str, Any]) -> str:
    """When the run started, as a sortable ISO string: run.json's ``created_at``, else the
    time in a ``YYYYMMDD-HHMMSS-xxxx`` run id (a run that lost its run.json), else ""."""
    value = meta.get("created_at")
    if isinstance(value, str) and value:
        return value
    stamp = _ID_TIME.match(run_id)
    return "{}-{}-{}T{}:{}:{}".format(*stamp.groups()) if stamp else ""


def _created_at(run: RunDir) -> str:
    """The sort key of a run; a run.json that cannot be read is reported when the run is."""
    try:
        meta = run.metadata()
    except RunFileError:
        meta = {}
    return created_at(run.run_id, meta)


class ResultsStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def create_run(self, meta: dict[str, Any]) -> RunDir:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create results dir {self.root}: {exc.strerror}; pass --results-dir"
            ) from exc
        for _ in range(10):
            run = RunDir(self.root / new_run_id())
            try:
                run.path.mkdir()
            except FileExistsError:
                continue
            run.write_metadata(
                {
                    "schema": RUN_SCHEMA,
                    "run_id": run.run_id,
                    # Microseconds: runs are ordered by this, and several can start in one ms.
                    "created_at": datetime.now(UTC).isoformat(timespec="microseconds"),
                    **meta,
                }
            )
            run.records_path.touch()
            return run
        raise UserError(f"could not allocate a new run folder under {self.root}")

    def runs(self) -> list[RunDir]:
        """Every folder holding a run.json or a records.jsonl, whatever state they are in:
        reading one says what is wrong with it."""
        if not self.root.is_dir():
            return []
        found = [RunDir(p) for p in self.root.iterdir() if p.is_dir() and is_run(p)]
        # Oldest first by creation time: ids made within one second differ only by a random
        # suffix, so the id alone does not give the order.
        return sorted(found, key=lambda r: (_created_at(r), r.run_id))

    def open(self, ref: str | None) -> RunDir:
        """A run by id, by folder path, or the newest one when ``ref`` is None/'latest'."""
        if ref and Path(ref).is_dir() and is_run(Path(ref)):
            return RunDir(Path(ref))
        return self.pick(ref, self.runs())

    def pick(self, ref: str | None, runs: list[RunDir]) -> RunDir:
        """The run of ``runs`` (oldest first) that ``ref`` names: an id, an id prefix, or the
        newest when ``ref`` is None/'latest'."""
        if not runs:
            raise UserError(f"no stored runs under {self.root}; run `edgebench run` first")
        if ref in (None, "", "latest"):
            return runs[-1]
        matches = [r for r in runs if r.run_id == ref] or [
            r for r in runs if r.run_id.startswith(ref)
        ]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UserError(
                f"no run {ref!r} under {self.root}; `edgebench show` lists the newest "
                "(or pass --results-dir)"
            )
        raise UserError(f"run id {ref!r} is ambiguous: {', '.join(r.run_id for r in matches)}")
