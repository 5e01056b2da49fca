"""Append-only results store: one folder per run, one JSON line per finished cell."""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.results.records import Record

RUN_SCHEMA = "edgebench.run/1"
# Devices are measured in parallel threads; their records go through one writer at a time.
_APPEND_LOCK = threading.Lock()
RECORDS_FILE = "records.jsonl"
RUN_FILE = "run.json"


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
        """Write one record durably before the next cell starts (one writer at a time)."""
        line = json.dumps(record.to_dict(), separators=(",", ":"), allow_nan=False) + "\n"
        with _APPEND_LOCK, open(self.records_path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def records(self) -> list[Record]:
        """All complete records; a torn last line (crash mid-write) is skipped."""
        if not self.records_path.exists():
            return []
        records = []
        with open(self.records_path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(Record.from_dict(json.loads(line)))
                except (ValueError, TypeError):
                    continue
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
        try:
            return json.loads((self.path / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def write_metadata(self, meta: dict[str, Any]) -> None:
        tmp = self.path / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / RUN_FILE)

    def update_metadata(self, **changes: Any) -> None:
        meta = self.metadata()
        meta.update(changes)
        self.write_metadata(meta)


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
