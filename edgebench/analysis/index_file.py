"""The results index's SQLite file: opened with the current schema, or rebuilt, or replaced
by an in-memory index when it cannot be used.

The file is a cache of the runs' records, so it is never trusted when in doubt: one that is
not a database, is cut short or has other tables is removed with one warning, and one of an
older schema is emptied (quietly). A results dir that cannot be written (read-only, another
owner's) gets an in-memory index built for the command, said at debug level only.
Writers take the file's lock with ``BEGIN IMMEDIATE``; WAL mode lets readers go on meanwhile.
A command waits for another process's lock a few seconds at most: a file still locked then
is left for an index in memory read from the runs' files, with one warning.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from edgebench.analysis.index_schema import INDEXES, SCHEMA_VERSION, TABLES

log = logging.getLogger(__name__)

#: The index file in a results dir: a dot-file, so no command mistakes it for a run folder.
INDEX_FILE = ".edgebench-index.sqlite3"
#: How long a command waits for another process's write to the index, in seconds, before it
#: reads the runs' files instead (a sync's write takes well under a second).
SYNC_BUSY_S = 5.0
_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_LOCKED_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
#: The warnings already given, so a command that opens the index twice says each once.
_SAID: set[tuple[str, str]] = set()
#: Index files found locked: the rest of the command reads the runs' files without waiting.
_LOCKED: set[Path] = set()


def forget_said_warnings() -> None:
    """Start afresh, as a new command does: the warnings said and the locks found."""
    _SAID.clear()
    _LOCKED.clear()


class IndexCorrupt(Exception):
    """The index file is not a database of ours; ``str()`` says why."""


def is_corrupt(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file is damaged (not locked, not read-only)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPT_CODES


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says another connection holds the lock it waited for."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _LOCKED_CODES


def in_memory(copy_of: sqlite3.Connection | None = None) -> sqlite3.Connection:
    """An index in memory: a copy of ``copy_of`` when it can be read, else empty."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if copy_of is not None:
        try:
            copy_of.backup(db)
            return db
        except sqlite3.Error as exc:
            log.debug("results index: no copy of the file (%s); building from scratch", exc)
            db.close()
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    create_tables(db)
    return db


def create_tables(db: sqlite3.Connection) -> None:
    for sql in (*TABLES.values(), *INDEXES.values()):
        db.execute(sql)
    db.execute(
        "INSERT OR REPLACE INTO index_meta (key, value) VALUES ('schema_version', ?)",
        (SCHEMA_VERSION,),
    )


@contextmanager
def write_lock(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction holding the file's write lock from its start."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _schema_problem(db: sqlite3.Connection) -> str | None:
    """Why the file's tables are not the index's (None when they are, or there are none)."""
    found = {
        name: sql
        for kind, name, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
        if kind == "table"
    }
    if not found:
        return None
    if "index_meta" not in found:
        return f"it holds other tables ({', '.join(sorted(found))})"
    version = db.execute("SELECT value FROM index_meta WHERE key = 'schema_version'").fetchone()
    if version is None or version[0] != SCHEMA_VERSION:
        return None  # an older index: emptied and rebuilt, no warning
    wrong = sorted(name for name, sql in TABLES.items() if found.get(name) != sql)
    return f"its tables {', '.join(wrong)} are not the index's" if wrong else None


def _current_version(db: sqlite3.Connection) -> bool:
    try:
        row = db.execute("SELECT value FROM index_meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:  # no such table
        return False
    return row is not None and row[0] == SCHEMA_VERSION


def _reset(db: sqlite3.Connection) -> None:
    """Empty tables of the current schema, unless another process just made them."""
    with write_lock(db):
        if _current_version(db):
            return
        tables = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in tables:
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
        create_tables(db)


def open_file(path: Path, busy_s: float, create: bool = True) -> sqlite3.Connection:
    """The file opened in WAL mode with its schema current (made when missing, if ``create``);
    ``IndexCorrupt`` when it is not a database or holds other tables. Other SQLite errors
    (missing, read-only, locked) propagate."""
    target = path if create else f"{path.as_uri()}?mode=rw"
    db = sqlite3.connect(
        target, timeout=busy_s, isolation_level=None, check_same_thread=False, uri=not create
    )
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        problem = _schema_problem(db)
        if problem is not None:
            raise IndexCorrupt(problem)
        if not _current_version(db):
            _reset(db)
        return db
    except sqlite3.DatabaseError as exc:
        db.close()
        if is_corrupt(exc):
            raise IndexCorrupt(str(exc)) from None
        raise
    except IndexCorrupt:
        db.close()
        raise


def remove(path: Path) -> None:
    """The index file and its WAL files gone (a process that has them open keeps its copy)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        with suppress(FileNotFoundError):
            os.unlink(path.with_name(name))


def _say_once(message: str, path: Path, why: str) -> None:
    key = (str(path), why)
    if key not in _SAID:
        _SAID.add(key)
        log.warning(message, path, why)


def say_corrupt(path: Path, why: object) -> None:
    _say_once(
        "warning: results index %s is corrupt (%s); rebuilding it from the runs' records",
        path,
        str(why),
    )


def say_locked(path: Path) -> None:
    _LOCKED.add(path)
    _say_once(
        "warning: results index %s is locked by another process (%s); reading the runs' "
        "files instead of waiting for it",
        path,
        f"still locked after {SYNC_BUSY_S:g} s",
    )


def connect(root: Path) -> tuple[sqlite3.Connection, Path | None]:
    """The index of results dir ``root`` and its file; (an in-memory index, None) when the
    file cannot be used. A corrupt file is removed and made anew, with one warning."""
    path = root / INDEX_FILE
    if not root.is_dir() or path in _LOCKED:
        return in_memory(), None
    try:
        try:
            return open_file(path, SYNC_BUSY_S), path
        except IndexCorrupt as exc:
            say_corrupt(path, exc)
            remove(path)
            return open_file(path, SYNC_BUSY_S), path
    except sqlite3.Error as exc:
        if is_locked(exc):
            say_locked(path)
            return in_memory(), None
        log.debug("results index %s cannot be written (%s); using one in memory", path, exc)
        return _read_only_copy(path), None
    except (IndexCorrupt, OSError) as exc:
        log.debug("results index %s cannot be written (%s); using one in memory", path, exc)
        return _read_only_copy(path), None


def _read_only_copy(path: Path) -> sqlite3.Connection:
    """An in-memory copy of the file when it can be read and is current (a read-only results
    dir that a command indexed before), else an empty in-memory index; a run it has stale is
    read again anyway. SQLite can take no lock in a read-only folder, and an ``immutable``
    open would ignore the write-ahead log, whose frames a writer may have left unmerged: so
    the file and its log are copied to a private folder and opened there."""
    if not path.is_file():
        return in_memory()
    with tempfile.TemporaryDirectory(prefix="edgebench-index-") as folder:
        try:
            for name in (path.name, f"{path.name}-wal"):
                if path.with_name(name).is_file():
                    shutil.copyfile(path.with_name(name), Path(folder) / name)
            source = sqlite3.connect(Path(folder) / path.name)
        except (OSError, sqlite3.Error) as exc:
            log.debug("results index %s cannot be read either (%s)", path, exc)
            return in_memory()
        try:
            if _schema_problem(source) is None and _current_version(source):
                log.debug("results index %s: reading a copy of it", path)
                return in_memory(source)
        except sqlite3.Error as exc:
            log.debug("results index %s cannot be read either (%s)", path, exc)
        finally:
            source.close()
    return in_memory()
