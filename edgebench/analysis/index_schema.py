"""The results index's tables and rows: what a run and a cell look like in the SQLite file.

A ``runs`` row holds what the read commands need of a run's run.json, each of its two files'
size, modification time and inode (so a changed file is noticed by a stat), and the problem
that makes the run unreadable, if any. A ``cells`` row is ``night_summary.CellSummary`` of one
current record of a run (a resumed run's later attempt replaces an earlier one).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.analysis.night_summary import SUMMARY_VERSION, CellSummary
from edgebench.results.clock_regime import ClockRegime
from edgebench.results.records import json_kind
from edgebench.statuses import Status

#: Bump when a table or a column's meaning changes; with ``SUMMARY_VERSION`` it is the
#: index's schema version, and an index of another version is rebuilt.
INDEX_VERSION = 4
SCHEMA_VERSION = f"{INDEX_VERSION}.{SUMMARY_VERSION}"

#: A file's identity as the index last saw it: (size, mtime_ns, inode); a missing file is
#: all -1, a link to nothing has size -2.
Fingerprint = tuple[int, int, int]
MISSING: Fingerprint = (-1, -1, -1)

TABLES: dict[str, str] = {
    "index_meta": "CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "runs": (
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, folder TEXT NOT NULL, "
        "created_at TEXT NOT NULL, meta_created_at TEXT, "
        "records_size INTEGER NOT NULL, records_mtime_ns INTEGER NOT NULL, "
        "records_ino INTEGER NOT NULL, run_json_size INTEGER NOT NULL, "
        "run_json_mtime_ns INTEGER NOT NULL, run_json_ino INTEGER NOT NULL, "
        "has_metadata INTEGER NOT NULL, plan TEXT, good INTEGER NOT NULL, status TEXT, "
        "git_sha TEXT, lab TEXT, edgebench_version TEXT, n_records INTEGER NOT NULL, "
        "devices TEXT NOT NULL, models TEXT NOT NULL, problem TEXT, accepted INTEGER NOT NULL, "
        "n_cells INTEGER NOT NULL)"
    ),
    "cells": (
        "CREATE TABLE cells (run_id TEXT NOT NULL, cell_id TEXT NOT NULL, "
        "position INTEGER NOT NULL, device TEXT NOT NULL, model TEXT NOT NULL, "
        "engine TEXT NOT NULL, variant TEXT NOT NULL, status TEXT NOT NULL, "
        "correctness_only TEXT NOT NULL, metric_values TEXT NOT NULL, spread REAL, "
        "regime TEXT NOT NULL, facts TEXT NOT NULL, PRIMARY KEY (run_id, cell_id))"
    ),
}
INDEXES: dict[str, str] = {
    "cells_by_cell": "CREATE INDEX cells_by_cell ON cells (device, model, engine)",
}

RUN_COLUMNS = (
    "run_id, folder, created_at, meta_created_at, records_size, records_mtime_ns, "
    "records_ino, run_json_size, run_json_mtime_ns, run_json_ino, has_metadata, plan, good, "
    "status, git_sha, lab, edgebench_version, n_records, devices, models, problem, accepted, "
    "n_cells"
)
CELL_COLUMNS = (
    "run_id, cell_id, position, device, model, engine, variant, status, correctness_only, "
    "metric_values, spread, regime, facts"
)

#: The run.json fields the index reads, and the JSON types they may hold: a run whose
#: run.json holds another type in one of them is left out, with a warning naming the field.
META_TYPES: dict[str, tuple[type, ...]] = {
    "created_at": (str,),
    "git_sha": (str,),
    "lab_path": (str,),
    "lab": (str,),
    "plan": (str, dict),
    "status": (str,),
    "devices": (dict,),
    "models": (dict,),
}
_JSON_NAMES: dict[type, str] = {str: "string", dict: "object"}


def wrong_field(meta: dict[str, Any]) -> str | None:
    """The first field the index reads that holds the wrong JSON type, said as a problem."""
    for key, types in META_TYPES.items():
        value = meta.get(key)
        if value is not None and not isinstance(value, types):
            wanted = " or ".join(_JSON_NAMES[t] for t in types)
            return f"field {key!r} holds a JSON {json_kind(value)}, not a {wanted}"
    return None


def plan_name(plan: Any) -> str | None:
    """run.json's ``plan``: a name, or a table with a name or path."""
    if plan is None:
        return None
    if isinstance(plan, dict):
        name = plan.get("name") or plan.get("path")
        return None if name is None else str(name)
    return str(plan)


def fingerprint(path: Path) -> Fingerprint:
    """``path``'s size, modification time and inode; ``MISSING`` when there is no file."""
    try:
        st = os.stat(path)
    except OSError:
        try:
            st = os.lstat(path)  # a link to nothing
        except OSError:
            return MISSING
        return (-2, st.st_mtime_ns, st.st_ino)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass
class RunRow:
    """One stored run as the index knows it."""

    run_id: str
    folder: Path
    #: The sort key: run.json's ``created_at``, else the time in the run id, else "".
    created_at: str
    #: run.json's ``created_at`` as written (None without one).
    meta_created_at: str | None
    records: Fingerprint
    run_json: Fingerprint
    has_metadata: bool
    plan: str | None = None
    good: bool = False
    status: str | None = None
    git_sha: str | None = None
    #: run.json's ``lab_path`` (or ``lab``).
    lab: str | None = None
    edgebench_version: str | None = None
    #: Every record line of the run, earlier attempts of a resumed cell included.
    n_records: int = 0
    #: The devices and models of the records (run.json's when there are none yet).
    devices: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    #: Why the run cannot be read ("PATH PROBLEM"), or None: such a run has no cells.
    problem: str | None = None
    #: `edgebench accept` made it the new normal of its plan's gate.
    accepted: bool = False
    #: Its rows in ``cells`` (one per current record): fewer means the index lost some.
    n_cells: int = 0

    def values(self) -> tuple[Any, ...]:
        """The row in ``RUN_COLUMNS`` order."""
        return (
            self.run_id,
            str(self.folder),
            self.created_at,
            self.meta_created_at,
            *self.records,
            *self.run_json,
            int(self.has_metadata),
            self.plan,
            int(self.good),
            self.status,
            self.git_sha,
            self.lab,
            self.edgebench_version,
            self.n_records,
            json.dumps(self.devices),
            json.dumps(self.models),
            self.problem,
            int(self.accepted),
            self.n_cells,
        )

    @classmethod
    def from_values(cls, values: tuple[Any, ...]) -> RunRow:
        """The row read back, each column checked: ``BadRow`` when one does not parse."""
        row = _Columns("runs", RUN_COLUMNS, values)
        return cls(
            run_id=row.text("run_id"),
            folder=Path(row.text("folder")),
            created_at=row.text("created_at"),
            meta_created_at=row.text("meta_created_at", optional=True),
            records=row.fingerprint("records"),
            run_json=row.fingerprint("run_json"),
            has_metadata=row.flag("has_metadata"),
            plan=row.text("plan", optional=True),
            good=row.flag("good"),
            status=row.text("status", optional=True),
            git_sha=row.text("git_sha", optional=True),
            lab=row.text("lab", optional=True),
            edgebench_version=row.text("edgebench_version", optional=True),
            n_records=row.count("n_records"),
            devices=row.json("devices", _names),
            models=row.json("models", _names),
            problem=row.text("problem", optional=True),
            accepted=row.flag("accepted"),
            n_cells=row.count("n_cells"),
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_fields(meta: dict[str, Any]) -> dict[str, Any]:
    """The ``RunRow`` fields read from a run.json (one whose fields have the right types)."""
    lab = meta.get("lab_path") or meta.get("lab")
    return {
        "plan": plan_name(meta.get("plan")),
        "good": bool(meta.get("good")),
        "accepted": bool(meta.get("accepted")),
        "status": _text(meta.get("status")),
        "git_sha": _text(meta.get("git_sha")),
        "lab": _text(lab),
        "edgebench_version": _text(meta.get("edgebench_version")),
    }


def cell_values(run_id: str, summary: CellSummary, position: int) -> tuple[Any, ...]:
    """``summary`` as a cells row of run ``run_id`` (its folder's name, whatever run id a
    copied record holds), in ``CELL_COLUMNS`` order."""
    return (
        run_id,
        summary.cell_id,
        position,
        summary.device,
        summary.model,
        summary.engine,
        json.dumps(list(summary.variant)),
        summary.status,
        summary.correctness_only,
        json.dumps(summary.values),
        summary.spread,
        json.dumps(summary.regime.to_json(), sort_keys=True),
        json.dumps(summary.facts, sort_keys=True),
    )


class CellDecoder:
    """Turns cells rows (``CELL_COLUMNS``) back into ``CellSummary``s, each column checked
    (``BadRow`` when one does not parse). A cell's variant and facts repeat night after night,
    so each distinct text is parsed once per query."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, Any], Any] = {}

    def _json(self, row: _Columns, column: str, shape: Callable[[Any], bool]) -> Any:
        key = (column, row.values[column])
        if key not in self._parsed:
            self._parsed[key] = row.json(column, shape)
        return self._parsed[key]

    def __call__(self, values: tuple[Any, ...]) -> CellSummary:
        row = _Columns("cells", CELL_COLUMNS, values)
        status = row.text("status")
        if status not in _STATUSES:
            raise row.bad("status")
        return CellSummary(
            run_id=row.text("run_id"),
            cell_id=row.text("cell_id"),
            device=row.text("device"),
            model=row.text("model"),
            engine=row.text("engine"),
            variant=tuple(self._json(row, "variant", _names)),
            status=status,
            correctness_only=row.text("correctness_only"),
            values=row.json("metric_values", _figures),
            spread=row.figure("spread"),
            regime=ClockRegime.from_json(row.json("regime", _regime)),
            facts=dict(self._json(row, "facts", _facts)),  # each its own: a caller may change it
        )


class BadRow(ValueError):
    """A row of the index that does not parse (a column of the wrong type, JSON that is not
    JSON or not of its shape): the index is not trusted and is rebuilt from the runs' files."""


_STATUSES = frozenset(Status)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_figure(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _figures(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_figure(v) for v in value.values())


def _regime(value: Any) -> bool:
    return isinstance(value, dict)


def _facts(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


class _Columns:
    """One row of ``table`` read column by column, by name; a column holding what the index
    never writes there is a ``BadRow`` naming the table, the run and the column."""

    def __init__(self, table: str, columns: str, values: tuple[Any, ...]) -> None:
        names = columns.split(", ")
        self.table = table
        self.values = dict(zip(names, values, strict=False))
        if len(values) != len(names):
            raise BadRow(f"a {table} row has {len(values)} columns, not {len(names)}")

    def bad(self, column: str) -> BadRow:
        shown = repr(self.values[column])
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return BadRow(
            f"the {self.table} row of run {self.values.get('run_id')!r} holds {shown} in "
            f"{column}, which does not parse"
        )

    def text(self, column: str, optional: bool = False) -> Any:
        value = self.values[column]
        if isinstance(value, str) or (optional and value is None):
            return value
        raise self.bad(column)

    def count(self, column: str) -> int:
        value = self.values[column]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise self.bad(column)

    def flag(self, column: str) -> bool:
        if self.values[column] in (0, 1):
            return bool(self.values[column])
        raise self.bad(column)

    def figure(self, column: str) -> float | None:
        """A finite number, or None (NULL)."""
        value = self.values[column]
        if value is None or _is_figure(value):
            return value
        raise self.bad(column)

    def fingerprint(self, prefix: str) -> Fingerprint:
        sizes = [self.values[f"{prefix}_{part}"] for part in ("size", "mtime_ns", "ino")]
        for part, value in zip(("size", "mtime_ns", "ino"), sizes, strict=True):
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.bad(f"{prefix}_{part}")
        return (sizes[0], sizes[1], sizes[2])

    def json(self, column: str, shape: Callable[[Any], bool]) -> Any:
        """The column's JSON text parsed, when it has the ``shape`` the index writes."""
        text = self.values[column]
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            value = None
        if value is None or not shape(value):
            raise self.bad(column)
        return value
