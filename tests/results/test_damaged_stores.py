"""Damaged stores never crash a read: real runs (`edgebench run` on a small conv model), then
their results index damaged with sqlite3, locked by another process, or a record's parts
emptied, and the real read commands run on them. Each says what it found in one line and
answers what the runs' files say (the same output as on the undamaged store)."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import typing
from dataclasses import asdict
from pathlib import Path

import pytest
from fakes.cli_checks import CliResult, assert_no_traceback, cli
from fakes.models import save_conv_model

from edgebench.analysis import index_file
from edgebench.analysis.index_file import INDEX_FILE
from edgebench.analysis.night_summary import summarize
from edgebench.analysis.results_index import ResultsIndex
from edgebench.results.json_values import matches
from edgebench.results.records import PARTS
from edgebench.results.store import RECORDS_FILE, ResultsStore

pytestmark = pytest.mark.load_sensitive

QUICK = ["--warmup", "1", "--iterations", "20", "--min-time", "0", "--format", "jsonl"]
CELL = ["--device", "local", "--model", "conv", "--framework", "onnxruntime"]
REBUILT = "rebuilding it from the runs' records"

#: A process that holds the index's write lock until its stdin closes; ``exclusive``: in
#: SQLite's exclusive locking mode, so that no other process can even read the file.
LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE index_meta SET value = value")
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def stored(mod_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results dir of two real runs of one small model."""
    model = save_conv_model(tmp_path_factory.mktemp("model") / "conv.onnx", [1, 3, 32, 32])
    for _ in range(2):
        done = cli(["run", "--models", str(model), "--frameworks", "onnxruntime", *QUICK], mod_env)
        assert done.returncode == 0, done.stderr
    return Path(mod_env["EDGEBENCH_RESULTS"])


def run_ids(results: Path) -> list[str]:
    return sorted(p.name for p in results.iterdir() if p.is_dir())


def copy_of(stored: Path, where: Path) -> Path:
    """A copy of the runs with its own results index (the index names its runs' folders and
    files, so a copy of another one is no index of these), closed."""
    results = where / "results"
    shutil.copytree(stored, results, ignore=shutil.ignore_patterns(f"{INDEX_FILE}*"))
    ResultsIndex.open(ResultsStore(results)).close()
    db = sqlite3.connect(results / INDEX_FILE)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return results


def command(name: str, results: Path) -> list[str]:
    """A read command on the runs of ``results`` (the oldest and the newest), writing only
    below the current folder."""
    ids = run_ids(results)
    base, new = ids[0], ids[-1]
    return {
        "show": ["show"],
        "history": ["history"],
        "history-cell": ["history", *CELL],
        "compare": ["compare", base, new, "--min-effect", "0.9"],
        "recommend": ["recommend", "--devices", "local", "--model", "conv"],
        "export": ["export", new, "--out", "runs.csv"],
        "publish": ["publish", "--out", "site"],
        "report": ["report", new, "--out", "report", "--format", "html,md,csv,json"],
    }[name]


def in_store(args: list[str], env: dict[str, str], results: Path, cwd: Path) -> CliResult:
    """The command run in ``cwd`` on ``results``, which its output calls RESULTS."""
    cwd.mkdir(exist_ok=True)
    done = cli(args, dict(env, EDGEBENCH_RESULTS=str(results)), cwd=cwd)
    done.stdout = done.stdout.replace(str(results), "RESULTS")
    done.stderr = done.stderr.replace(str(results), "RESULTS")
    return done


def answer(result: CliResult) -> str:
    """What a command printed, less the seconds it took (publish says them)."""
    return re.sub(r"\d+(\.\d+)? s\b", "N s", result.stdout)


def stderr_lines(result: CliResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def from_files(store: ResultsStore) -> list[dict]:
    rows = []
    for run in store.runs():
        meta = run.metadata()
        rows += [dict(asdict(summarize(r, meta)), run_id=run.run_id) for r in run.current_records()]
    return rows


def from_index(store: ResultsStore) -> list[dict]:
    with ResultsIndex.open(store) as index:
        return [asdict(cell) for _, cell in index.cell_rows()]


@pytest.fixture(scope="module")
def undamaged(stored: Path, mod_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory):
    """Each command's result on an undamaged copy of the store, computed once."""
    results = copy_of(stored, tmp_path_factory.mktemp("undamaged"))
    cache: dict[str, CliResult] = {}

    def of(name: str) -> CliResult:
        if name not in cache:
            cache[name] = in_store(command(name, results), mod_env, results, results.parent / name)
            done = cache[name].returncode
            assert done == 0 or (name == "compare" and done == 1), cache[name].stderr
        return cache[name]

    return of


EVERY_READ = ["show", "history", "history-cell", "compare", "recommend", "export", "publish"]
CELL_READS = ["history-cell", "publish"]
DAMAGES = {
    "run-devices": ("UPDATE runs SET devices = 'nope'", EVERY_READ),
    "run-count": ("UPDATE runs SET n_records = 'many'", EVERY_READ),
    "cells-deleted": ("DELETE FROM cells", EVERY_READ),
    "cell-metrics": ("UPDATE cells SET metric_values = 'garbage'", CELL_READS),
    "cell-facts": ("UPDATE cells SET facts = '{\"kernel\": '", CELL_READS),
    "cell-spread": ("UPDATE cells SET spread = 'abc'", CELL_READS),
}


@pytest.mark.parametrize(
    ("damage", "name"),
    [(damage, name) for damage, (_, reads) in DAMAGES.items() for name in reads],
)
def test_a_damaged_index_row_is_one_warning_and_a_rebuild(
    stored, undamaged, mod_env, tmp_path, caplog, damage, name
):
    results = copy_of(stored, tmp_path)
    db = sqlite3.connect(results / INDEX_FILE)
    with db:
        db.execute(DAMAGES[damage][0])
    db.close()
    damaged = in_store(command(name, results), mod_env, results, tmp_path / name)
    assert_no_traceback(damaged)
    expected = undamaged(name)
    assert damaged.returncode == expected.returncode, damaged.stderr
    assert answer(damaged) == answer(expected)
    said = [line for line in stderr_lines(damaged) if line not in stderr_lines(expected)]
    assert len(said) == 1, damaged.stderr
    assert said[0].startswith(f"edgebench: warning: results index RESULTS/{INDEX_FILE}")
    assert "is corrupt" in said[0] and REBUILT in said[0], said[0]
    caplog.clear()  # the file was rebuilt: the next read trusts it, and it says the files
    store = ResultsStore(results)
    assert from_index(store) == from_files(store)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_plan_gate_reads_a_damaged_index_after_a_rebuild(stored, mod_env, tmp_path):
    results = copy_of(stored, tmp_path)
    db = sqlite3.connect(results / INDEX_FILE)
    with db:
        db.execute("UPDATE cells SET spread = 'abc'")
    db.close()
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])
    plan = tmp_path / "gate.toml"
    plan.write_text(
        f'name = "gate"\nmodels = ["{model}"]\nframeworks = ["onnxruntime"]\n'
        "[timing]\nwarmup = 1\niterations = 20\nmin_time = 0\n"
    )
    gated = in_store(["run", "--plan", str(plan), "--format", "jsonl"], mod_env, results, tmp_path)
    assert_no_traceback(gated)
    assert gated.returncode == 0, gated.stderr
    said = [line for line in stderr_lines(gated) if "results index" in line]
    assert len(said) == 1 and "is corrupt" in said[0] and REBUILT in said[0], gated.stderr
    assert "plan gate: no earlier good run to compare with" in gated.stderr, gated.stderr
    store = ResultsStore(results)
    assert from_index(store) == from_files(store) and len(run_ids(results)) == 3


@pytest.mark.parametrize("mode", ["write-lock", "exclusive"])
def test_a_locked_index_is_said_in_one_line_and_the_files_are_read(
    stored, undamaged, mod_env, tmp_path, mode
):
    results = copy_of(stored, tmp_path)
    base, new = run_ids(results)
    # A run the index has not seen, so a command must write to it (or read the files).
    shutil.copytree(results / new, results / f"{new[:-4]}ffff")
    with open(results / f"{new[:-4]}ffff" / "run.json", "r+") as fh:
        meta = json.load(fh)
        meta["run_id"] = f"{new[:-4]}ffff"
        fh.seek(0)
        fh.truncate()
        json.dump(meta, fh)
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(results / INDEX_FILE), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        for name in ("history", "history-cell"):
            started = time.monotonic()
            read = in_store(command(name, results), mod_env, results, tmp_path / name)
            took = time.monotonic() - started
            assert_no_traceback(read)
            assert read.returncode == 0, read.stderr
            for run_id in (base, new, f"{new[:-4]}ffff"):
                assert run_id in read.stdout, read.stdout
            (said,) = stderr_lines(read)
            assert said == (
                f"edgebench: warning: results index RESULTS/{INDEX_FILE} is locked by another "
                f"process (still locked after {index_file.SYNC_BUSY_S:g} s); reading the runs' "
                "files instead of waiting for it"
            )
            # One wait of SYNC_BUSY_S, and start-up on a busy machine: never the 60 s of old.
            assert took < index_file.SYNC_BUSY_S + 30, took
    finally:
        if locker.stdin is not None:
            locker.stdin.close()
        try:
            locker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            locker.kill()
            locker.wait()
        if locker.stdout is not None:
            locker.stdout.close()


def test_history_names_a_damaged_run_once(stored, mod_env, tmp_path):
    results = copy_of(stored, tmp_path)
    base, new = run_ids(results)
    records = results / base / RECORDS_FILE
    records.unlink()
    records.mkdir()  # the run cannot be read
    trend = in_store(["history", *CELL], mod_env, results, tmp_path / "trend")
    assert_no_traceback(trend)
    assert trend.returncode == 0, trend.stderr
    assert new in trend.stdout and base not in trend.stdout
    assert stderr_lines(trend) == [
        f"edgebench: warning: run {base} skipped: RESULTS/{base}/{RECORDS_FILE} is a folder, "
        "not a file"
    ]


def _required(part: type) -> str | None:
    """The first key a part must have (a field whose type admits no None, without a default),
    None when an empty object is a part."""
    hints = typing.get_type_hints(part)
    for f in dataclasses.fields(part):
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and not matches(None, hints[f.name]):
            return f.name
    return None


def test_parts_without_their_keys_are_left_out_with_one_warning(stored, mod_env, tmp_path):
    results = copy_of(stored, tmp_path)
    new = run_ids(results)[1]
    path = results / new / RECORDS_FILE
    record = json.loads(path.read_text().splitlines()[0])
    lines = []
    for name in PARTS:  # a cell of its own per part, holding that part as an empty object
        cell = dict(record, model=f"m-{name}", cell_id=record["cell_id"].replace("conv", name))
        cell[name] = {}
        lines.append(json.dumps(cell))
    with open(path, "a") as fh:
        fh.write("\n".join(lines) + "\n")
    (results / INDEX_FILE).unlink()
    required = {name: _required(part) for name, part in PARTS.items()}
    assert required["accelerator"] == "api" and required["sustained"] == "seconds"
    expected = sorted(
        f"edgebench: record local/{name}/onnxruntime/fp32/t1/call/s1: field {name}.{key} is "
        f"missing; its {name} is left out"
        for name, key in required.items()
        if key is not None
    )
    for args in (["show", new], command("report", results), command("publish", results)):
        shown = in_store(args, mod_env, results, tmp_path / args[0])
        assert_no_traceback(shown)
        assert shown.returncode == 0, shown.stderr
        said = sorted(line for line in stderr_lines(shown) if line.startswith("edgebench: "))
        assert said == expected, shown.stderr
    assert (
        f"run {new} (complete, {len(PARTS) + 1} cells"
        in in_store(["show", new], mod_env, results, tmp_path / "show").stdout
    )


def test_an_index_made_through_a_relative_results_dir_is_read_from_anywhere(
    stored, mod_env, tmp_path
):
    results = copy_of(stored, tmp_path)
    (results / INDEX_FILE).unlink()
    newest = run_ids(results)[-1]
    listed = cli(["history", "--results-dir", "results"], mod_env, cwd=tmp_path)
    assert listed.returncode == 0 and newest in listed.stdout, listed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = cli(["show", "--results-dir", str(results)], mod_env, cwd=elsewhere)
    assert_no_traceback(shown)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"run {newest} (complete, 1 cells"), shown.stdout
