import json
from pathlib import Path

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


def ok_record(run_id: str, model: str, p50: float = 1.0) -> Record:
    return make_record(
        run_id, model=model, cell_id=f"local/{model}/onnxruntime", latency_ms={"p50": p50}
    )


def test_append_after_a_torn_last_line_starts_a_line_of_its_own(tmp_path, caplog):
    run = ResultsStore(tmp_path / "runs").create_run({"status": "interrupted"})
    run.append(ok_record(run.run_id, "a"))
    with open(run.records_path, "a") as fh:
        fh.write('{"run_id": "x", "model": "half-writ')  # the crash: half a record, no newline
    run.append(ok_record(run.run_id, "b"))  # what --resume stores next
    assert [r.model for r in run.records()] == ["a", "b"]
    assert "half-writ" not in run.records_path.read_text()  # the fragment is cut off, and said so
    assert "torn last line" in caplog.text


def test_a_whole_last_record_that_lost_its_newline_is_kept(tmp_path):
    run = ResultsStore(tmp_path / "runs").create_run({})
    run.append(ok_record(run.run_id, "a"))
    run.records_path.write_text(run.records_path.read_text().rstrip("\n"))
    run.append(ok_record(run.run_id, "b"))
    assert [r.model for r in run.records()] == ["a", "b"]


@pytest.mark.parametrize(
    "line",
    ["[1,2,3]", "42", "null", '"text"', '{"status": "ok"}'],
    ids=["array", "number", "null", "string", "missing-fields"],
)
def test_a_line_that_is_json_but_not_a_record_is_skipped_and_reported(tmp_path, caplog, line):
    run = ResultsStore(tmp_path / "runs").create_run({})
    run.append(ok_record(run.run_id, "a"))
    with open(run.records_path, "a") as fh:
        fh.write(line + "\n")
    run.append(ok_record(run.run_id, "b"))
    assert [r.model for r in run.records()] == ["a", "b"]
    assert f"{run.records_path}, line 2 skipped" in caplog.text


@pytest.mark.parametrize(
    "field,value",
    [
        ("latency_ms", "fast"),
        ("latency_ms", {"p50": "fast"}),
        ("threads", "4"),
        ("samples_ns", [1, "x"]),
        ("warnings", "one"),
        ("status", 3),
    ],
)
def test_a_field_of_the_wrong_type_is_not_a_record(tmp_path, caplog, field, value):
    data = ok_record("r", "bad").to_dict()
    data[field] = value
    with pytest.raises(ValueError, match=field):
        Record.from_dict(data)
    run = ResultsStore(tmp_path / "runs").create_run({})
    run.records_path.write_text(json.dumps(data) + "\n")
    assert run.records() == []
    assert "line 1 skipped: not a valid record" in caplog.text


def test_null_where_a_field_has_a_default_reads_as_the_default():
    data = ok_record("r", "m").to_dict()
    data.update(rounds=None, warnings=None)
    record = Record.from_dict(data)
    assert record.rounds == 1 and record.warnings == []


def test_a_run_json_that_is_not_an_object_spoils_only_its_own_run(tmp_path, caplog):
    store = ResultsStore(tmp_path / "runs")
    good = store.create_run({"status": "complete"})
    bad = store.create_run({})
    (bad.path / "run.json").write_text("[]\n")
    assert {r.run_id for r in store.runs()} == {good.run_id, bad.run_id}
    assert store.open(good.run_id).metadata()["status"] == "complete"
    assert bad.metadata() == {}
    assert "holds a JSON array, not an object" in caplog.text


def test_show_and_history_skip_bad_lines_with_one_line_each(run_cli, eb_env, tmp_path):
    store = ResultsStore(Path(eb_env["EDGEBENCH_RESULTS"]))
    run = store.create_run({"status": "complete"})
    run.append(ok_record(run.run_id, "a"))
    bad = ok_record(run.run_id, "b").to_dict() | {"latency_ms": "fast"}
    with open(run.records_path, "a") as fh:
        fh.write("[1,2,3]\n42\nnull\n" + json.dumps(bad) + "\n")
    broken = store.create_run({})
    (broken.path / "run.json").write_text("[]")
    shown = run_cli(["show", run.run_id])
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr
    assert f"run {run.run_id} (complete, 1 cells" in shown.stdout
    assert shown.stderr.count("records.jsonl, line") == 4, shown.stderr
    assert "run.json skipped: holds a JSON array" in shown.stderr
    listed = run_cli(["history"])
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert run.run_id in listed.stdout
    cell = ["--device", "local", "--model", "a", "--framework", "onnxruntime"]
    trend = run_cli(["history", *cell, "--plot", str(tmp_path / "trend.svg")])
    assert trend.returncode == 0 and "Traceback" not in trend.stderr, trend.stderr
