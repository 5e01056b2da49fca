"""Append-only results store: one folder per run, one JSON line per finished cell."""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
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


def _report(path: Path, line: int, problem: str) -> None:
    key = (str(path), line, problem)
    with _REPORT_LOCK:
        if key in _REPORTED:
            return
        _REPORTED.add(key)
    where = f"{path}, line {line}" if line else str(path)
    log.warning("%s skipped: %s", where, problem)


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

    def append(self, record: Record) -> None:
        """Write one record durably before the next cell starts (one writer at a time). A torn
        last line (a crash mid-write) is repaired or cut off first, so the record starts on a
        line of its own instead of being glued to the fragment."""
        line = json.dumps(record.to_dict(), separators=(",", ":"), allow_nan=False) + "\n"
        with _APPEND_LOCK, open(self.records_path, "a+b") as fh:
            self._mend_torn_tail(fh)
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())

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

    def records(self) -> list[Record]:
        """All complete records. A line that is not one (torn by a crash mid-write, not a JSON
        object, a field of the wrong type) is skipped and reported on stderr."""
        if not self.records_path.exists():
            return []
        records = []
        with open(self.records_path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                record, problem = _parse_line(line)
                if record is None:
                    _report(self.records_path, number, problem)
                    continue
                records.append(record)
        return records

    def current_records(self) -> list[Record]:
        """One record per cell: a resumed run's later attempt replaces an earlier failure.

        The file keeps every attempt; this is the view reports and matrices use.
        """
        latest: dict[str, Record] = {}
        for record in self.records():
            latest.pop(record.cell_id, None)
            latest[record.cell_id] = record
        return list(latest.values())

    def metadata(self) -> dict[str, Any]:
        """run.json; empty when it is missing or is not a JSON object (that is reported)."""
        path = self.path / RUN_FILE
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            _report(path, 0, f"not readable as JSON ({exc})")
            return {}
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
        if not self.root.is_dir():
            return []
        found = [RunDir(p) for p in self.root.iterdir() if (p / RUN_FILE).is_file()]
        # Oldest first by creation time: ids made within one second differ only by a random
        # suffix, so the id alone does not give the order.
        return sorted(found, key=lambda r: (str(r.metadata().get("created_at", "")), r.run_id))

    def open(self, ref: str | None) -> RunDir:
        """A run by id, by folder path, or the newest one when ``ref`` is None/'latest'."""
        if ref and Path(ref).is_dir() and (Path(ref) / RUN_FILE).is_file():
            return RunDir(Path(ref))
        runs = self.runs()
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
