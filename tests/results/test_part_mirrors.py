"""The runner's result parts (runners/protocol/result_parts.py) against the host record's parts
(results/): the same JSON keys both ways, so a field added on one side only is caught here, not
lost silently in a stored run. The runner cannot import the host's parts (it runs on Python 3.8
with nothing of the host), hence the two definitions. Where the host converts a part (ns to ms,
KiB to MB, figures it derives), the pair and every key that differs are named below."""

import dataclasses
import inspect

import pytest

from edgebench.results import breakdown_parts
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.results.generation_part import Generation
from edgebench.results.nvidia_part import NvidiaState
from edgebench.results.records import PARTS
from edgebench.results.telemetry_part import TelemetryTrace
from edgebench.runners.protocol import result_parts
from edgebench.runners.protocol.typed_json import key_of

#: Runner part -> the record part that stores it as written: the same keys.
SAME = {
    result_parts.AcceleratorPart: AcceleratorRun,
    result_parts.NvidiaPart: NvidiaState,
    result_parts.TelemetryPart: TelemetryTrace,
    result_parts.OpProfilePart: breakdown_parts.OpProfile,
    result_parts.ProfiledOpPart: breakdown_parts.ProfiledOp,
}

#: Runner part -> (record part, keys only the runner writes, keys only the record has): parts
#: the host converts when it builds the record (measure/breakdowns.py,
#: measure/generation_record.py).
CONVERTED = {
    # The host adds the stage percentiles it computes from the samples.
    result_parts.StagesPart: (breakdown_parts.Stages, set(), {"p50_ms", "p99_ms"}),
    # KiB from the device become MB; the host adds the baseline it measured before the load
    # and the per-instance figures it derives.
    result_parts.InstancesPart: (
        breakdown_parts.Instances,
        {"rss_after_load_kb", "rss_one_running_kb", "rss_running_kb"},
        {
            "rss_after_load_mb",
            "rss_one_running_mb",
            "rss_running_mb",
            "rss_before_load_mb",
            "measured",
            "per_instance_mb",
            "load_mb_per_instance",
            "device_load_mb_per_instance",
        },
    ),
    # ns become ms, and ``from`` (the shapes) is stored as ``from_inputs``.
    result_parts.ShapeChangePart: (
        breakdown_parts.ShapeChange,
        {"from", "resize_ns", "first_ns"},
        {"from_inputs", "resize_ms", "first_ms"},
    ),
    # The prefill runs and ns spans become per-test lists in ms; the host adds the energy per
    # token it integrates over the spans, and what it could not compute.
    result_parts.GenerationPart: (
        Generation,
        {"prefill", "decode_wall_ns", "prefill_spans_ns", "decode_spans_ns"},
        {
            "ttft_prompt_tokens",
            "ttft_ms",
            "prefill_prompt_tokens",
            "prefill_ms",
            "decode_wall_ms",
            "decode_wall_tokens",
            "energy_mj_per_prefill_token",
            "energy_mj_per_decode_token",
            "unavailable",
        },
    ),
}

#: Runner parts with no record part of their own, and where the record keeps them.
NOT_RECORD_PARTS = {
    result_parts.ResultError: "the record's error and error_kind strings",
    result_parts.InputEntry: "the record's inputs, a list of plain objects",
    result_parts.OutputSummary: "the record's outputs, a list of plain objects",
    result_parts.PrefillRun: "inside GenerationPart, converted with it",
}


def keys(part: type) -> set[str]:
    return {key_of(f) for f in dataclasses.fields(part)}


def runner_parts() -> set[type]:
    return {
        c
        for _, c in inspect.getmembers(result_parts, inspect.isclass)
        if dataclasses.is_dataclass(c) and c.__module__ == result_parts.__name__
    }


@pytest.mark.parametrize("runner", sorted(SAME, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_a_part_stored_as_written_has_the_same_keys_on_both_sides(runner):
    runner_keys, record_keys = keys(runner), keys(SAME[runner])
    assert runner_keys == record_keys, (
        f"only in {runner.__name__}: {sorted(runner_keys - record_keys)}; "
        f"only in {SAME[runner].__name__}: {sorted(record_keys - runner_keys)}"
    )


@pytest.mark.parametrize(
    "runner", sorted(CONVERTED, key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_a_converted_part_differs_only_by_the_keys_named_here(runner):
    record, runner_only, record_only = CONVERTED[runner]
    runner_keys, record_keys = keys(runner), keys(record)
    assert runner_keys - record_keys == runner_only, runner.__name__
    assert record_keys - runner_keys == record_only, record.__name__


def test_every_runner_part_is_paired_or_says_where_the_record_keeps_it():
    classified = set(SAME) | set(CONVERTED) | set(NOT_RECORD_PARTS)
    assert runner_parts() == classified, sorted(c.__name__ for c in runner_parts() ^ classified)


def test_the_record_parts_named_here_are_the_records_own():
    stored = set(PARTS.values())
    for record in (*SAME.values(), *(pair[0] for pair in CONVERTED.values())):
        nested = record in (breakdown_parts.ProfiledOp, breakdown_parts.ShapeChange)
        assert nested or record in stored, record.__name__


def test_the_key_comparison_sees_a_field_added_on_one_side():
    @dataclasses.dataclass
    class Widened(result_parts.AcceleratorPart):
        new_field: int | None = None

    assert keys(Widened) - keys(AcceleratorRun) == {"new_field"}
