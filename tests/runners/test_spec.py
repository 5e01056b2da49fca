"""The runner's spec (runners/protocol/spec.py): defaults, the checks it makes, and the JSON
round trip."""

import pytest

from edgebench.runners.protocol import SPEC_SCHEMA
from edgebench.runners.protocol.spec import RunSpec, SpecError, TelemetrySpec


def raw(**extra):
    spec = {"schema": SPEC_SCHEMA, "model": "/m/model.onnx", "framework": "onnxruntime"}
    spec.update(extra)
    return spec


def test_keys_left_out_take_the_defaults_and_unknown_keys_are_ignored():
    spec = RunSpec.from_json(raw(iterations=7, future_key="ignored"))
    assert spec.iterations == 7
    assert spec == RunSpec(model="/m/model.onnx", framework="onnxruntime", iterations=7)
    assert spec.options == {} and spec.telemetry is None


def test_the_json_keys_are_the_field_names_and_survive_a_round_trip():
    spec = RunSpec(
        model="a.param",
        framework="ncnn",
        cores=[0, 2],
        min_time_s=0.5,
        options={"streams": 2},
        concurrency=2,
        telemetry=TelemetrySpec(energy_source="rapl", zones=["cpu"], set_governor="performance"),
    )
    sent = spec.to_json()
    assert sent["schema"] == SPEC_SCHEMA
    assert sent["min_time_s"] == 0.5 and sent["telemetry"]["set_governor"] == "performance"
    assert RunSpec.from_json(sent) == spec


def test_an_empty_telemetry_object_means_no_telemetry():
    assert RunSpec.from_json(raw(telemetry={})).telemetry is None


def test_telemetry_zero_or_missing_numbers_take_the_defaults():
    spec = RunSpec.from_json(raw(telemetry={"energy_source": None, "period_s": 0, "zones": None}))
    assert spec.telemetry == TelemetrySpec()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"schema": "edgebench.spec/99"}, "spec schema"),
        ({"model": ""}, "'model' must be a non-empty string"),
        ({"framework": 3}, "'framework' must be a non-empty string"),
        ({"threads": 0}, ">= 1"),
        ({"warmup": -1}, "'warmup' must be a non-negative integer"),
        ({"iterations": 2.5}, "'iterations' must be a non-negative integer"),
        ({"instances": 2, "concurrency": 1}, "concurrency must equal them"),
        ({"min_time_s": "2"}, "'min_time_s' must be a non-negative number"),
        ({"max_time_s": -1.0}, "'max_time_s' must be a non-negative number"),
        ({"options": [1]}, "'options' must be an object"),
        ({"telemetry": ["rapl"]}, "'telemetry' must be an object"),
        ({"telemetry": {"period_s": "fast"}}, "'telemetry.period_s'"),
        ({"telemetry": {"cooldown_temp_c": "hot"}}, "'telemetry.cooldown_temp_c'"),
    ],
)
def test_malformed_specs_are_refused_with_the_field_named(change, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(")):
        RunSpec.from_json(raw(**change))


def test_a_spec_that_is_not_an_object_is_refused():
    with pytest.raises(SpecError, match="JSON object"):
        RunSpec.from_json(["schema"])
