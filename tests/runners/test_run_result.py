"""The runner's result, typed once: ``RunResult`` reads a result strictly (one ValueError naming
the bad field), reads an older runner's result, writes what it read, and its JSON Schema is
derived from it (test_runner.py holds the real runner's results against it)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import typing

import pytest

from edgebench.runners.protocol import RESULT_SCHEMA, result_parts
from edgebench.runners.protocol.run_result import RunResult, json_schema
from edgebench.runners.protocol.typed_json import key_of
from edgebench.runners.result import checked


def _ok_result() -> dict:
    result = RunResult.header({"framework": "onnxruntime", "model": "m.onnx"}, "3.8.10", 7)
    result.status = "ok"
    result.samples_ns = [1000, 1200]
    result.instances = result_parts.InstancesPart(2, "shared", rss_after_load_kb=[10, 20])
    return result.to_json()


@pytest.mark.parametrize(
    "change, named",
    [
        ({"samples_ns": [1, "2"]}, "result.samples_ns[1] must be an integer"),
        ({"samples_ns": [1, True]}, "result.samples_ns[1] must be an integer"),
        ({"status": None}, "result.status must be a string"),
        ({"status": "done"}, "result.status 'done' is none of"),
        ({"schema": "edgebench.result/9"}, "result.schema is 'edgebench.result/9'"),
        ({"error": {"kind": "inference"}}, "result.error.message is missing"),
        ({"error": {"kind": "gone", "message": "m"}}, "result.error.kind 'gone'"),
        ({"instances": {"count": 2, "mode": "shared", "ran": 1.5}}, "result.instances.ran"),
        ({"op_profile": {"ops": [{"time_ms": "slow"}]}}, "result.op_profile.ops[0].time_ms"),
        ({"shape_change": {"from": 3}}, "result.shape_change.from must be a list"),
        ({"accelerator": {"device": "gpu"}}, "result.accelerator.api is missing"),
        ({"load_ns": 1.5}, "result.load_ns must be an integer"),
    ],
)
def test_a_malformed_result_is_one_value_error_naming_the_field(change, named):
    result = _ok_result()
    result.update(change)
    with pytest.raises(ValueError, match="^" + re.escape(named)):
        RunResult.from_json(result)


def test_a_result_missing_its_status_or_not_an_object_is_refused():
    result = _ok_result()
    del result["status"]
    with pytest.raises(ValueError, match=r"^result\.status is missing$"):
        RunResult.from_json(result)
    with pytest.raises(ValueError, match=r"^result must be an object, not a JSON array$"):
        RunResult.from_json([result])


def test_an_older_runners_result_reads_with_defaults_and_writes_back_as_it_came():
    """A runner before the header grew (no python, pid, input_generator, warm-up samples)
    and before parts: what it wrote is read, what it did not write is left as unknown."""
    older = {
        "schema": RESULT_SCHEMA,
        "status": "ok",
        "error": None,
        "framework": "ncnn",
        "samples_ns": [5, 6, 7],
        "measure_wall_ns": 30,
        "unknown_newer_key": {"kept": False},
    }
    result = RunResult.from_json(older)
    assert result.samples_ns == [5, 6, 7] and result.warmup_samples_ns == []
    assert result.python is None and result.instances is None and result.nvidia is None
    written = result.to_json()
    assert "unknown_newer_key" not in written
    assert {k: written[k] for k in older if k != "unknown_newer_key"} == {
        k: v for k, v in older.items() if k != "unknown_newer_key"
    }


def _dataclasses_in(hint) -> list[type]:
    if dataclasses.is_dataclass(hint):
        return [hint]
    return [d for arg in typing.get_args(hint) for d in _dataclasses_in(arg)]


def test_the_schema_is_derived_from_the_dataclasses_field_for_field():
    schema = json_schema()
    seen = {RunResult}
    todo = [(RunResult, schema)]
    while todo:  # bounded: each dataclass is visited once
        cls, node = todo.pop()
        keys = [key_of(f) for f in dataclasses.fields(cls)]
        assert list(node["properties"]) == keys, cls
        assert node["additionalProperties"] is False
        for hint in typing.get_type_hints(cls).values():
            for part in _dataclasses_in(hint):
                if part not in seen:
                    seen.add(part)
                    todo.append((part, schema["$defs"][part.__name__]))
    assert {c.__name__ for c in seen - {RunResult}} == set(schema["$defs"])
    # Every runner writes the header; the parts only when it has them.
    assert {"schema", "status", "error", "samples_ns", "outputs", "python"} <= set(
        schema["required"]
    )
    assert not {"instances", "stages", "nvidia", "telemetry"} & set(schema["required"])


def test_the_cli_prints_the_schema():
    proc = subprocess.run(
        [sys.executable, "-m", "edgebench", "runners", "schema"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json_schema()


def test_a_runner_result_that_does_not_fit_becomes_an_internal_error_naming_the_field():
    spec = {"framework": "onnxruntime", "model": "m.onnx"}
    measured = {**_ok_result(), "load_ns": "fast"}
    result = checked(measured, spec)
    assert result["status"] == "failed" and result["samples_ns"] == []
    assert result["error"]["kind"] == "internal"
    assert "result.load_ns must be an integer" in result["error"]["message"]
    assert RunResult.from_json(result).framework == "onnxruntime"
