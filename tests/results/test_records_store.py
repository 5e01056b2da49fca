import json

import pytest

from edgebench.errors import UserError
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

# docs/results.md promises these names; renaming one breaks every stored run's readers.
STABLE_FIELDS = [
    "schema",
    "run_id",
    "device",
    "model",
    "framework",
    "precision",
    "threads",
    "cores",
    "status",
    "error",
    "latency_ms",
    "samples_ns",
    "throughput_ips",
    "peak_rss_mb",
]


def make_record(run_id: str = "r", status: str = "ok", **extra) -> Record:
    fields = dict(
        run_id=run_id,
        cell_id="local/m/onnxruntime",
        device="local",
        model="m",
        framework="onnxruntime",
        precision="fp32",
        threads=1,
        cores="all",
        status=status,
    )
    fields.update(extra)
    return Record(**fields)


def test_record_has_stable_fields_and_round_trips():
    record = make_record(latency_ms={"p50": 1.5}, samples_ns=[1, 2, 3], peak_rss_mb=10.0)
    data = record.to_dict()
    for name in STABLE_FIELDS:
        assert name in data
    assert data["schema"] == "edgebench.record/1"
    assert Record.from_dict(json.loads(json.dumps(data))) == record


def test_record_rejects_unknown_status_and_ignores_unknown_fields():
    with pytest.raises(ValueError, match="status"):
        make_record(status="great")
    data = make_record().to_dict()
    data["added_by_a_newer_version"] = 1
    assert Record.from_dict(data).status == "ok"


def test_store_appends_records_durably_and_skips_a_torn_line(tmp_path):
    store = ResultsStore(tmp_path / "runs")
    run = store.create_run({"status": "running"})
    run.append(make_record(run.run_id, model="a"))
    run.append(make_record(run.run_id, model="b", status="failed", error="boom"))
    with open(run.records_path, "a") as fh:
        fh.write('{"run_id": "x", "model": "tor')  # a crash in the middle of a write
    records = run.records()
    assert [r.model for r in records] == ["a", "b"]
    assert records[1].error == "boom"
    assert run.metadata()["schema"] == "edgebench.run/1"
    run.update_metadata(status="complete")
    assert run.metadata()["status"] == "complete"


def test_store_opens_runs_by_id_prefix_path_and_latest(tmp_path):
    store = ResultsStore(tmp_path)
    first = store.create_run({})
    second = store.create_run({})
    # Newest by creation time, not by id (ids from one second differ by a random suffix).
    assert store.open(None).run_id == second.run_id
    assert store.open("latest").run_id == second.run_id
    assert store.open(first.run_id).path == first.path
    assert store.open(str(second.path)).path == second.path
    with pytest.raises(UserError, match="no run 'nope'"):
        store.open("nope")


def test_empty_store_says_how_to_get_a_run(tmp_path):
    with pytest.raises(UserError, match="run `edgebench run` first"):
        ResultsStore(tmp_path / "none").open(None)
