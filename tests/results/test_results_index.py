"""The results index (analysis/results_index.py): an SQLite cache of the stored runs that
always answers what the runs' files say.

Runs are written with the real store; other writers are real Python processes; the read-only
results dir is a real read-only bind mount (a mount namespace, as root).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from fakes.records import sampled_record

from edgebench.analysis import index_file
from edgebench.analysis.index_file import INDEX_FILE
from edgebench.analysis.night_summary import summarize
from edgebench.analysis.results_index import ResultsIndex
from edgebench.results.store import ResultsStore, RunDir, created_at

pytestmark = pytest.mark.load_sensitive

REPO = Path(__file__).resolve().parents[2]

#: A child process that stores ``n`` records in run ARGV[2] of results dir ARGV[1], opening
#: the index after every few (a nightly run and a morning reader at once).
APPENDER = """
import sys
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[4]) / "tests"))
from fakes.records import sampled_record
from edgebench.analysis.results_index import ResultsIndex
from edgebench.results.store import ResultsStore, RunDir

store = ResultsStore(Path(sys.argv[1]))
run = RunDir(store.root / sys.argv[2])
for i in range(int(sys.argv[3])):
    run.append(sampled_record(f"dev{i}", "onnxruntime", 5.0 + i, i, n=50, run_id=run.run_id))
    if i % 5 == 0:
        ResultsIndex.open(store).close()
"""


def make_store(root: Path, nights: int = 3, cells: int = 4) -> ResultsStore:
    """``nights`` runs of ``cells`` cells; the second run has a cell that failed and was
    measured again (the index keeps the later attempt)."""
    store = ResultsStore(root)
    for night in range(nights):
        run = store.create_run(
            {"status": "complete", "plan": "nightly", "good": night != 1, "git_sha": f"g{night}"}
        )
        for cell in range(cells):
            ms = 10.0 + cell + night * 0.5
            run.append(
                sampled_record(
                    f"d{cell % 2}",
                    "onnxruntime",
                    ms,
                    night * 10 + cell,
                    model=f"m{cell}",
                    run_id=run.run_id,
                    n=60,
                )
            )
        if night == 1:
            run.append(
                sampled_record(
                    "d0", "onnxruntime", 1.0, 99, model="m0", run_id=run.run_id, status="failed"
                )
            )
            run.append(
                sampled_record("d0", "onnxruntime", 9.0, 98, model="m0", run_id=run.run_id, n=60)
            )
    return store


def from_files(store: ResultsStore) -> list[tuple[str, dict]]:
    """What the index must say, read from the runs' files: (run id, summary) per current
    record, oldest run first."""
    runs = sorted(store.runs(), key=lambda r: (created_at(r.run_id, r.metadata()), r.run_id))
    out = []
    for run in runs:
        meta = run.metadata()
        for record in run.current_records():
            summary = asdict(summarize(record, meta))
            summary["run_id"] = run.run_id
            out.append((run.run_id, summary))
    return out


def from_index(store: ResultsStore) -> list[tuple[str, dict]]:
    with ResultsIndex.open(store) as index:
        return [(run.run_id, asdict(cell)) for run, cell in index.cell_rows()]


def index_counts(root: Path) -> tuple[int, int]:
    """(runs, cells) in the index file as it is, read without syncing it."""
    db = sqlite3.connect(root / INDEX_FILE)
    try:
        runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        return runs, db.execute("SELECT count(*) FROM cells").fetchone()[0]
    finally:
        db.close()


def checkpointed(root: Path) -> Path:
    """The index file with everything in it (none left in its WAL), as after a clean close."""
    path = root / INDEX_FILE
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_index_says_what_the_files_say(tmp_path):
    store = make_store(tmp_path / "results")
    expected = from_files(store)
    assert len(expected) == 12 and from_index(store) == expected
    with ResultsIndex.open(store) as index:
        runs = index.runs()
        assert [r.run_id for r in runs] == [run_id for run_id, _ in expected[::4]]
        assert [r.n_records for r in runs] == [4, 6, 4]  # every attempt is a record line
        assert runs[0].devices == ["d0", "d1"] and runs[0].models == ["m0", "m1", "m2", "m3"]
        assert runs[1].plan == "nightly" and not runs[1].good and runs[2].git_sha == "g2"
        resumed = [c for r, c in index.cell_rows(device="d0", model="m0") if r is runs[1]]
        assert [c.status for c in resumed] == ["ok"], resumed
        assert resumed[0].values["p50"] == pytest.approx(9.0, rel=0.05)
        assert index.last_good_run("nightly", excluding=runs[2].run_id) is runs[0]
        assert index.find(None).run_id == runs[2].run_id
        assert index.find(runs[1].run_id[:-1]).run_id == runs[1].run_id


def test_records_are_indexed_as_they_are_stored(tmp_path):
    store = make_store(tmp_path / "results", nights=1)
    assert not (store.root / INDEX_FILE).exists()  # runs alone make no index
    ResultsIndex.open(store).close()
    assert index_counts(store.root) == (1, 4)
    run = store.create_run({"status": "running"})
    for seed in range(3):
        run.append(sampled_record(f"d{seed}", "onnxruntime", 3.0, seed, run_id=run.run_id, n=60))
        assert index_counts(store.root) == (2, 5 + seed)  # no command has opened it since
    run.append(sampled_record("d0", "onnxruntime", 4.0, 7, run_id=run.run_id, n=60))
    assert index_counts(store.root) == (2, 7)  # a cell measured again replaces its row
    assert from_index(store) == from_files(store)


def test_a_record_another_process_stores_is_seen_by_the_next_open(tmp_path):
    store = make_store(tmp_path / "results", nights=2)
    assert from_index(store) == from_files(store)
    run = store.open(None)
    child = subprocess.run(
        [sys.executable, "-c", APPENDER, str(store.root), run.run_id, "3", str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert child.returncode == 0 and not child.stderr, child.stderr
    # A writer that knows nothing of the index (an older edgebench, a copy by hand).
    line = sampled_record("d8", "onnxruntime", 2.0, 6, run_id=run.run_id, n=60).to_dict()
    with open(run.records_path, "a") as fh:
        fh.write(json.dumps(line) + "\n")
    rows = from_index(store)
    assert rows == from_files(store) and len(rows) == 12


def test_an_index_of_another_schema_version_is_rebuilt(tmp_path):
    store = make_store(tmp_path / "results")
    expected = from_index(store)
    db = sqlite3.connect(store.root / INDEX_FILE)
    with db:
        db.execute("UPDATE index_meta SET value = '0.0' WHERE key = 'schema_version'")
        db.execute("UPDATE cells SET metric_values = '{\"p50\": 999.0}'")
    db.close()
    assert from_index(store) == expected


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a database, just bytes \x00\xff" * 500)


def _cut_short(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 3)


def _other_tables(path: Path) -> None:
    path.unlink()
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (name TEXT)")
    db.execute("INSERT INTO runs VALUES ('x')")
    db.commit()
    db.close()


@pytest.mark.parametrize("damage", [_garbage, _cut_short, _other_tables])
def test_a_corrupt_index_is_rebuilt_with_one_warning(tmp_path, caplog, damage):
    store = make_store(tmp_path / "results", nights=30, cells=6)
    expected = from_index(store)
    path = checkpointed(store.root)
    damage(path)
    caplog.clear()
    assert from_index(store) == expected
    said = warnings_of(caplog)
    assert len(said) == 1, said
    assert str(path) in said[0] and "rebuilding it from the runs' records" in said[0]
    caplog.clear()
    assert from_index(store) == expected and not warnings_of(caplog)


def test_a_run_folder_deleted_under_the_index_is_dropped_with_one_warning(tmp_path, caplog):
    store = make_store(tmp_path / "results")
    first = ResultsIndex.open(store).runs()[0].run_id
    shutil.rmtree(store.root / first)
    caplog.clear()
    rows = from_index(store)
    assert rows == from_files(store) and first not in {run_id for run_id, _ in rows}
    assert warnings_of(caplog) == [
        f"warning: run {first} was deleted under the results index; dropped from it"
    ]
    caplog.clear()
    from_index(store)
    assert not warnings_of(caplog)


def test_two_processes_storing_and_syncing_at_once(tmp_path):
    store = make_store(tmp_path / "results", nights=1)
    runs = [store.create_run({"status": "running"}) for _ in range(2)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, str(store.root), run.run_id, "40", str(REPO)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for run in runs
    ]
    try:
        outputs = [child.communicate(timeout=300) for child in children]
    finally:
        for child in children:
            child.kill()
            child.wait()
    assert [c.returncode for c in children] == [0, 0], outputs
    assert all(not err for _, err in outputs), outputs
    db = sqlite3.connect(store.root / INDEX_FILE)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    rows = from_index(store)
    assert rows == from_files(store) and len(rows) == 84


@pytest.mark.parametrize("indexed", [False, True], ids=["never-indexed", "indexed-before"])
def test_a_read_only_results_dir_is_read_through_an_index_in_memory(tmp_path, indexed):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and util-linux's unshare")
    store = make_store(tmp_path / "results")
    if indexed:  # the file is there, and read as it is
        ResultsIndex.open(store).close()
    newest = store.open(None).run_id
    root = str(store.root)
    script = (
        f"mount --bind {root} {root} && mount -o remount,bind,ro {root} && "
        f"{sys.executable} -m edgebench history --results-dir {root} && "
        f"{sys.executable} -m edgebench -v show --results-dir {root}"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert newest in done.stdout and f"run {newest} (complete, 4 cells" in done.stdout
    said = [line for line in done.stderr.splitlines() if "results index" in line]
    assert said and all("warning" not in line for line in said), done.stderr  # -v only
    assert ("reading a copy of it" in done.stderr) == indexed, done.stderr
    assert (store.root / INDEX_FILE).exists() == indexed


def test_a_copy_of_a_read_only_index_takes_in_its_unmerged_write_ahead_log(tmp_path):
    # A writer's log is merged into the file only when the last connection closes; a snapshot
    # (or a folder made read-only) taken while another reader held the file has the newest
    # runs in its -wal alone. An immutable open ignores that log and gave a stale copy.
    store = make_store(tmp_path / "results", nights=2)
    ResultsIndex.open(store).close()
    path = store.root / INDEX_FILE
    holder = sqlite3.connect(path)
    holder.execute("SELECT count(*) FROM runs").fetchall()
    newest = store.create_run({"status": "complete", "plan": "nightly", "good": True})
    newest.append(sampled_record("d0", "onnxruntime", 12.0, 99, run_id=newest.run_id))
    ResultsIndex.open(store).close()
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for name in (INDEX_FILE, f"{INDEX_FILE}-wal"):
        shutil.copyfile(store.root / name, snapshot / name)
    holder.close()
    copy = index_file._read_only_copy(snapshot / INDEX_FILE)
    runs = {row[0] for row in copy.execute("SELECT run_id FROM runs")}
    assert newest.run_id in runs and len(runs) == 3


def test_the_command_line_says_a_corrupt_index_and_a_deleted_run_in_one_line_each(tmp_path):
    store = make_store(tmp_path / "results")
    first = ResultsIndex.open(store).runs()[0].run_id
    _garbage(checkpointed(store.root))
    shutil.rmtree(store.root / first)
    listed = subprocess.run(
        [sys.executable, "-m", "edgebench", "history", "--results-dir", str(store.root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert listed.returncode == 0 and first not in listed.stdout, listed.stderr
    (said,) = listed.stderr.splitlines()  # the rebuilt index never knew the deleted run
    assert said.startswith("edgebench: warning: results index ") and "corrupt" in said, said
    assert from_index(store) == from_files(store)


def test_an_unreadable_run_is_named_once_and_left_out(tmp_path, caplog):
    store = make_store(tmp_path / "results")
    broken = RunDir(store.root / ResultsIndex.open(store).runs()[1].run_id)
    broken.records_path.unlink()
    broken.records_path.mkdir()
    caplog.clear()
    with ResultsIndex.open(store) as index:
        assert broken.run_id in [r.run_id for r in index.runs()]  # it can still be named
        assert broken.run_id not in {r.run_id for r, _ in index.cell_rows()}
        index.cell_rows()
    said = warnings_of(caplog)
    assert len(said) == 1 and broken.run_id in said[0], said
    assert f"{broken.records_path} is a folder, not a file" in said[0]
