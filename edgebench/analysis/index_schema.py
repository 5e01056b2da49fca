"""The results index's tables and rows: what a run and a cell look like in the SQLite file.

A ``runs`` row holds what the read commands need of a run's run.json, each of its two files'
size, modification time and inode (so a changed file is noticed by a stat), and the problem
that makes the run unreadable, if any. A ``cells`` row is ``night_summary.CellSummary`` of one
current record of a run (a resumed run's later attempt replaces an earlier one).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.analysis.night_summary import SUMMARY_VERSION, CellSummary
from edgebench.results.records import json_kind

#: Bump when a table or a column's meaning changes; with ``SUMMARY_VERSION`` it is the
#: index's schema version, and an index of another version is rebuilt.
INDEX_VERSION = 2
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
        "devices TEXT NOT NULL, models TEXT NOT NULL, problem TEXT, accepted INTEGER NOT NULL)"
    ),
    "cells": (
        "CREATE TABLE cells (run_id TEXT NOT NULL, cell_id TEXT NOT NULL, "
        "position INTEGER NOT NULL, device TEXT NOT NULL, model TEXT NOT NULL, "
        "engine TEXT NOT NULL, variant TEXT NOT NULL, status TEXT NOT NULL, "
        "emulated INTEGER NOT NULL, metric_values TEXT NOT NULL, spread REAL, "
        "regime TEXT NOT NULL, facts TEXT NOT NULL, PRIMARY KEY (run_id, cell_id))"
    ),
}
INDEXES: dict[str, str] = {
    "cells_by_cell": "CREATE INDEX cells_by_cell ON cells (device, model, engine)",
}

RUN_COLUMNS = (
    "run_id, folder, created_at, meta_created_at, records_size, records_mtime_ns, "
    "records_ino, run_json_size, run_json_mtime_ns, run_json_ino, has_metadata, plan, good, "
    "status, git_sha, lab, edgebench_version, n_records, devices, models, problem, accepted"
)
CELL_COLUMNS = (
    "run_id, cell_id, position, device, model, engine, variant, status, emulated, "
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
_JSON_NAMES = {str: "string", dict: "object"}


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
        )

    @classmethod
    def from_values(cls, row: tuple[Any, ...]) -> RunRow:
        return cls(
            run_id=row[0],
            folder=Path(row[1]),
            created_at=row[2],
            meta_created_at=row[3],
            records=(row[4], row[5], row[6]),
            run_json=(row[7], row[8], row[9]),
            has_metadata=bool(row[10]),
            plan=row[11],
            good=bool(row[12]),
            status=row[13],
            git_sha=row[14],
            lab=row[15],
            edgebench_version=row[16],
            n_records=row[17],
            devices=json.loads(row[18]),
            models=json.loads(row[19]),
            problem=row[20],
            accepted=bool(row[21]),
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
        int(summary.emulated),
        json.dumps(summary.values),
        summary.spread,
        summary.regime,
        json.dumps(summary.facts, sort_keys=True),
    )


class CellDecoder:
    """Turns cells rows (``CELL_COLUMNS``) back into ``CellSummary``s. A cell's variant and
    facts repeat night after night, so each distinct text is parsed once per query."""

    def __init__(self) -> None:
        self._variants: dict[str, tuple[str, ...]] = {}
        self._facts: dict[str, dict[str, str]] = {}

    def __call__(self, row: tuple[Any, ...]) -> CellSummary:
        variant = self._variants.get(row[6])
        if variant is None:
            variant = self._variants[row[6]] = tuple(json.loads(row[6]))
        facts = self._facts.get(row[12])
        if facts is None:
            facts = self._facts[row[12]] = json.loads(row[12])
        return CellSummary(
            run_id=row[0],
            cell_id=row[1],
            device=row[3],
            model=row[4],
            engine=row[5],
            variant=variant,
            status=row[7],
            emulated=bool(row[8]),
            values=json.loads(row[9]),
            spread=row[10],
            regime=row[11],
            facts=dict(facts),  # each summary its own: a caller may change it
        )
