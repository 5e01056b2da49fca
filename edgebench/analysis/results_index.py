"""The results index: every stored run's metadata and each current record's summary, in an
SQLite file beside the runs, so the read commands stop re-reading every run.

The runs' JSON files stay the source of truth; the index is a cache of them. Opening it syncs
it with the results dir: one ``scandir`` and a stat of each run's two files, then only the
runs that are new or changed are read; a run whose folder is gone is dropped, with a warning.
Records are indexed as they are stored too (``RunDir.append`` tells the index), without ever
failing or holding up a run: an index that cannot be written then is synced on the next open.
A run that cannot be read stays in the index with its problem, so it can still be named, and
is left out of the listings with the warning history has always given.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from edgebench.analysis import index_file
from edgebench.analysis.index_schema import (
    CELL_COLUMNS,
    MISSING,
    RUN_COLUMNS,
    BadRow,
    CellDecoder,
    Fingerprint,
    RunRow,
    cell_values,
    fingerprint,
    run_fields,
    wrong_field,
)
from edgebench.analysis.night_summary import CellSummary, summarize
from edgebench.results.records import Record
from edgebench.results.store import (
    RECORDS_FILE,
    RUN_FILE,
    ResultsStore,
    RunDir,
    RunFileError,
    add_append_listener,
    created_at,
    is_run,
    latest_per_cell,
)

log = logging.getLogger(__name__)

#: How long storing a record waits for the index's lock before leaving it to the next sync.
APPEND_BUSY_S = 0.5
#: The runs whose problem was said, by folder and problem: a command that opens the index
#: twice (history and its change points) names each once.
_SKIPPED: set[tuple[str, str]] = set()
#: How many times a query is asked before an index found damaged or locked again gives up.
_TRIES = 3
#: Rows in ``runs`` whose ``n_cells`` is not their number of rows in ``cells``, and rows in
#: ``cells`` of a run ``runs`` does not list: an index that lost rows (or was edited).
_LOST_ROWS = (
    "SELECT r.run_id, coalesce(c.n, 0), r.n_cells FROM runs AS r LEFT JOIN "
    "(SELECT run_id, count(*) AS n FROM cells GROUP BY run_id) AS c ON c.run_id = r.run_id "
    "WHERE coalesce(c.n, 0) != r.n_cells "
    "UNION ALL SELECT run_id, -1, -1 FROM cells WHERE run_id NOT IN (SELECT run_id FROM runs) "
    "LIMIT 1"
)
T = TypeVar("T")


class ResultsIndex:
    """The synced index of one results dir; ``ResultsIndex.open(store)`` makes one."""

    def __init__(self, store: ResultsStore, db: sqlite3.Connection, path: Path | None) -> None:
        self.store = store
        self.db = db
        #: The index file; None for an index in memory.
        self.path = path
        self._runs: list[RunRow] = []

    @classmethod
    def open(cls, store: ResultsStore) -> ResultsIndex:
        """The index of ``store``, synced with its run folders and checked."""
        index = cls(store, *index_file.connect(store.root))
        index._answer(lambda: None, synced=False)
        return index

    def _answer(self, ask: Callable[[], T], synced: bool = True) -> T:
        """``ask()`` of the synced index. An index found damaged (corrupt, a row that does not
        parse, rows lost) is rebuilt from the runs' files, and one found locked by another
        process is left for an index in memory read from the files, each with one warning."""
        failure: Exception | None = None
        for _ in range(_TRIES):
            try:
                if not synced:
                    self.sync()
                    synced = True
                return ask()
            except (sqlite3.DatabaseError, BadRow) as exc:
                self._leave(exc)
                synced, failure = False, exc
        assert failure is not None
        raise failure

    def _leave(self, exc: sqlite3.DatabaseError | BadRow) -> None:
        """Drop the index ``exc`` shows cannot be trusted or waited for (re-raise any other
        error): a damaged file is removed and made anew, a locked one or a damaged copy is
        replaced by an empty index in memory."""
        file = self.store.root / index_file.INDEX_FILE
        if isinstance(exc, sqlite3.DatabaseError) and index_file.is_locked(exc):
            index_file.say_locked(file)
        elif isinstance(exc, BadRow) or index_file.is_corrupt(exc):
            index_file.say_corrupt(file, exc)
            if self.path is not None:
                self.db.close()
                index_file.remove(self.path)
                self.db, self.path = index_file.connect(self.store.root)
                return
        else:
            raise exc
        self.db.close()
        self.db, self.path = index_file.in_memory(), None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ResultsIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------- sync

    def sync(self) -> None:
        """Read the runs that are new or changed since the index last saw them; drop the
        runs whose folders are gone."""
        found = _scan(self.store.root)
        known = {
            row[0]: ((row[1], row[2], row[3]), (row[4], row[5], row[6]))
            for row in self.db.execute(
                "SELECT run_id, records_size, records_mtime_ns, records_ino, "
                "run_json_size, run_json_mtime_ns, run_json_ino FROM runs"
            )
        }
        changed = [
            _read_run(folder, records, run_json)
            for run_id, (folder, records, run_json) in sorted(found.items())
            if known.get(run_id) != (records, run_json)
        ]
        gone = sorted(set(known) - set(found))
        if changed or gone:
            self._write(changed, gone)
        self._load_runs()
        lost = self.db.execute(_LOST_ROWS).fetchone()
        if lost is not None:
            run_id, found_cells, n_cells = lost
            if n_cells == -1:
                raise BadRow(f"it holds cells of run {run_id!r}, which it does not list")
            raise BadRow(f"it holds {found_cells} of the {n_cells} cells of run {run_id!r}")

    def _write(self, changed: list[tuple[RunRow, list[CellSummary]]], gone: list[str]) -> None:
        try:
            dropped = _store_rows(self.db, changed, gone)
        except sqlite3.OperationalError as exc:
            if self.path is None or index_file.is_locked(exc):
                raise  # locked: the command reads the files instead (``_answer``)
            log.debug(
                "results index %s cannot be written (%s); using a copy in memory", self.path, exc
            )
            self.db, self.path = index_file.in_memory(self.db), None
            dropped = _store_rows(self.db, changed, gone)
        for run_id in dropped:
            log.warning(
                "warning: run %s was deleted under the results index; dropped from it", run_id
            )

    def _load_runs(self) -> None:
        rows = self.db.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at, run_id")
        self._runs = [RunRow.from_values(row) for row in rows]
        for run in self._runs:  # as this command names the results dir (a relative one moves)
            run.folder = self.store.root / run.run_id

    # -------------------------------------------------------------------------- queries

    def runs(self) -> list[RunRow]:
        """Every stored run, oldest first (by ``created_at``, then run id), unreadable ones
        included (their ``problem`` says why)."""
        return list(self._runs)

    def readable_runs(self) -> list[RunRow]:
        """The runs that can be read, oldest first; each one that cannot is left out with one
        warning naming its file and what is wrong with it."""
        out = []
        for run in self._runs:
            if run.problem is None:
                out.append(run)
            elif (str(run.folder), run.problem) not in _SKIPPED:
                _SKIPPED.add((str(run.folder), run.problem))
                log.warning("warning: run %s skipped: %s", run.run_id, run.problem)
        return out

    def cell_rows(
        self, device: str | None = None, model: str | None = None, engine: str | None = None
    ) -> list[tuple[RunRow, CellSummary]]:
        """The current records of the readable runs as (run, summary), oldest run first and in
        record order within a run; only the given device, model and engine when named."""
        where, params = [], []
        for column, value in (("device", device), ("model", model), ("engine", engine)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {CELL_COLUMNS} FROM cells"
        if where:
            sql += " WHERE " + " AND ".join(where)

        def ask() -> list[tuple[RunRow, CellSummary]]:
            runs = {run.run_id: run for run in self.readable_runs()}
            rows = [row for row in self.db.execute(sql, params).fetchall() if row[0] in runs]
            rows.sort(key=lambda row: (runs[row[0]].created_at, row[0], row[2]))
            decode = CellDecoder()
            return [(runs[row[0]], decode(row)) for row in rows]

        return self._answer(ask)

    def cells_seen(self) -> set[tuple[str, str, str]]:
        """Every (device, model, engine) of the readable runs (a run that cannot be read has
        no cells in the index)."""
        sql = "SELECT DISTINCT device, model, engine FROM cells"
        rows = self._answer(lambda: self.db.execute(sql).fetchall())
        return {(str(device), str(model), str(engine)) for device, model, engine in rows}

    def find(self, ref: str | None) -> RunDir:
        """The run ``ref`` names (an id, an id prefix, a run folder, or None/'latest' for the
        newest), as ``ResultsStore.open`` finds it, from the index's ordered run list."""
        if ref and Path(ref).is_dir() and is_run(Path(ref)):
            return RunDir(Path(ref))
        return self.store.pick(ref, [RunDir(run.folder) for run in self._runs])

    def last_good_run(self, plan: str | None, excluding: str) -> RunRow | None:
        """The newest run of ``plan`` that finished good, other than ``excluding``."""
        for run in reversed(self._runs):
            if run.run_id != excluding and run.plan == plan and run.good:
                return run
        return None


def open_run(store: ResultsStore, ref: str | None) -> RunDir:
    """The run ``ref`` names, as ``ResultsStore.open`` finds it, from the index's ordered run
    list (a run folder's path is taken as it is, without opening the index)."""
    if ref and Path(ref).is_dir() and is_run(Path(ref)):
        return RunDir(Path(ref))
    with ResultsIndex.open(store) as index:
        return index.find(ref)


# ------------------------------------------------------------------------------- reading runs


def _scan(root: Path) -> dict[str, tuple[Path, Fingerprint, Fingerprint]]:
    """Each run folder under ``root``: its path and its two files' fingerprints, taken before
    any is read (a file that changes after its stat is read again next time)."""
    found: dict[str, tuple[Path, Fingerprint, Fingerprint]] = {}
    try:
        entries = list(os.scandir(root))
    except OSError:
        return found
    for entry in entries:
        if not entry.is_dir():
            continue
        folder = Path(entry.path)
        records, run_json = fingerprint(folder / RECORDS_FILE), fingerprint(folder / RUN_FILE)
        if records != MISSING or run_json != MISSING:
            found[entry.name] = (folder, records, run_json)
    return found


def _read_run(
    folder: Path, records_print: Fingerprint, run_json_print: Fingerprint
) -> tuple[RunRow, list[CellSummary]]:
    """A run's row and the summaries of its current records; a run that cannot be read gets
    a row naming its problem and no cells."""
    run = RunDir(folder)
    meta: dict[str, Any] = {}
    problem = None
    records: list[Record] = []
    try:
        meta = run.metadata()
        wrong = wrong_field(meta)
        if wrong is not None:
            raise RunFileError(run.run_id, run.metadata_path, wrong, "correct or remove it")
        records = run.records()
    except RunFileError as exc:
        problem = f"{exc.path} {exc.problem}"
    stated = meta.get("created_at")
    row = RunRow(
        run_id=run.run_id,
        folder=folder,
        created_at=created_at(run.run_id, meta if problem is None else _sortable(meta)),
        meta_created_at=stated if isinstance(stated, str) else None,
        records=records_print,
        run_json=run_json_print,
        has_metadata=run.has_metadata,
        n_records=len(records),
    )
    if problem is not None:
        row.problem = problem
        return row, []
    for name, value in run_fields(meta).items():
        setattr(row, name, value)
    row.devices, row.models = _devices_and_models(records, meta)
    cells = [summarize(record, meta) for record in latest_per_cell(records)]
    row.n_cells = len(cells)
    return row, cells


def _sortable(meta: dict[str, Any]) -> dict[str, Any]:
    """What of a damaged run's run.json orders it: its ``created_at`` when that is a string."""
    value = meta.get("created_at")
    return {"created_at": value} if isinstance(value, str) else {}


def _devices_and_models(records: list[Record], meta: dict[str, Any]) -> tuple[list, list]:
    devices = sorted({r.device for r in records})
    if not devices and isinstance(meta.get("devices"), dict):
        devices = sorted(meta["devices"])
    models = sorted({r.model for r in records})
    if not models and isinstance(meta.get("models"), dict):
        models = sorted(meta["models"])
    return devices, models


def _put_run(db: sqlite3.Connection, row: RunRow, cells: list[CellSummary]) -> None:
    """A run's rows replaced by these (idempotent: two processes may write the same run)."""
    db.execute("DELETE FROM cells WHERE run_id = ?", (row.run_id,))
    marks = ", ".join("?" * len(row.values()))
    db.execute(f"INSERT OR REPLACE INTO runs ({RUN_COLUMNS}) VALUES ({marks})", row.values())
    values = [cell_values(row.run_id, cell, position) for position, cell in enumerate(cells)]
    if values:
        marks = ", ".join("?" * len(values[0]))
        db.executemany(f"INSERT INTO cells ({CELL_COLUMNS}) VALUES ({marks})", values)


def _store_rows(
    db: sqlite3.Connection, changed: list[tuple[RunRow, list[CellSummary]]], gone: list[str]
) -> list[str]:
    """Write the changed runs and drop the gone ones in one transaction; the runs this call
    dropped (another process may have dropped them first)."""
    dropped = []
    with index_file.write_lock(db):
        for run_id in gone:
            db.execute("DELETE FROM cells WHERE run_id = ?", (run_id,))
            if db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount:
                dropped.append(run_id)
        for row, cells in changed:
            _put_run(db, row, cells)
    return dropped


# ------------------------------------------------------------------- records as they are stored


#: Connections of the append hook, by index file; used under the store's append lock.
_WRITERS: dict[Path, tuple[int, sqlite3.Connection]] = {}


def _writer(path: Path) -> sqlite3.Connection | None:
    """The append hook's connection to ``path`` (a new one when the file was made anew)."""
    identity = fingerprint(path)[2]
    cached = _WRITERS.get(path)
    if cached is not None and cached[0] == identity:
        return cached[1]
    if cached is not None:
        cached[1].close()
        del _WRITERS[path]
    try:  # a results dir gets its index from the first command that reads it, not from a run
        db = index_file.open_file(path, APPEND_BUSY_S, create=False)
    except (sqlite3.Error, index_file.IndexCorrupt, OSError) as exc:
        log.debug("results index %s not updated (%s); the next command syncs it", path, exc)
        return None
    _WRITERS[path] = (fingerprint(path)[2], db)
    return db


def _stat_print(st: os.stat_result) -> Fingerprint:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def index_appended(
    run: RunDir, record: Record, before: os.stat_result | None, after: os.stat_result | None
) -> None:
    """Add a just-stored record to the index: its cell's row when the index had the run's
    file as it was before the append, else the whole run read again."""
    path = run.path.parent / index_file.INDEX_FILE
    db = _writer(path)
    if db is None:
        return
    try:
        with index_file.write_lock(db):
            stored = db.execute(
                "SELECT records_size, records_mtime_ns, records_ino, n_records, devices, models "
                "FROM runs WHERE run_id = ? AND problem IS NULL",
                (run.run_id,),
            ).fetchone()
            in_step = (
                before is not None and stored is not None and stored[:3] == _stat_print(before)
            )
            known = _known_names(stored[3:]) if in_step and after is not None else None
            if known is not None and after is not None:
                _add_cell(db, run, record, known, _stat_print(after))
            else:
                records_print = fingerprint(run.records_path)
                _put_run(db, *_read_run(run.path, records_print, fingerprint(run.metadata_path)))
    except sqlite3.Error as exc:
        log.debug("results index %s not updated (%s); the next command syncs it", path, exc)


def _add_cell(
    db: sqlite3.Connection,
    run: RunDir,
    record: Record,
    known: tuple[int, set[str], set[str]],
    records_print: Fingerprint,
) -> None:
    """One record added to a run the index is in step with (it replaces an earlier attempt
    of its cell, which moves to the end, as ``latest_per_cell`` orders them)."""
    n_records, known_devices, known_models = known
    position = db.execute(
        "SELECT coalesce(max(position) + 1, 0) FROM cells WHERE run_id = ?", (run.run_id,)
    ).fetchone()[0]
    summary = summarize(record, run.metadata())
    db.execute("DELETE FROM cells WHERE run_id = ? AND cell_id = ?", (run.run_id, record.cell_id))
    values = cell_values(run.run_id, summary, position)
    marks = ", ".join("?" * len(values))
    db.execute(f"INSERT INTO cells ({CELL_COLUMNS}) VALUES ({marks})", values)
    db.execute(
        "UPDATE runs SET records_size = ?, records_mtime_ns = ?, records_ino = ?, "
        "n_records = ?, devices = ?, models = ?, "
        "n_cells = (SELECT count(*) FROM cells WHERE run_id = ?) WHERE run_id = ?",
        (
            *records_print,
            n_records + 1,
            json.dumps(sorted(known_devices | {record.device})),
            json.dumps(sorted(known_models | {record.model})),
            run.run_id,
            run.run_id,
        ),
    )


def _known_names(stored: tuple[Any, ...]) -> tuple[int, set[str], set[str]] | None:
    """A run's stored ``n_records``, ``devices`` and ``models`` (no names before its first
    record), None when one does not parse: the run is then read again whole."""
    n_records, *columns = stored
    if not isinstance(n_records, int) or isinstance(n_records, bool):
        return None
    sets: list[set[str]] = []
    for text in columns:
        try:
            names = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        sets.append(set(names) if n_records else set())
    return n_records, sets[0], sets[1]


add_append_listener(index_appended)
