"""The record's typed parts: stored JSON read back key for key, a part holding a wrong type left
out with the field's name (the record kept), and rounds pooled by each part's own merge."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes.records import sampled_record

from edgebench.analysis.statistics import latency_stats
from edgebench.quantization import accuracy as quantization
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.results.breakdown_parts import Instances, OpProfile, ShapeVariant, Stages
from edgebench.results.energy_part import EnergyResult
from edgebench.results.nvidia_part import NvidiaState
from edgebench.results.output_check_part import OutputCheck
from edgebench.results.provenance_parts import Artifact, ToolReport
from edgebench.results.quant_parts import Accuracy, Quant
from edgebench.results.records import PARTS, Record, merged_parts
from edgebench.results.store import ResultsStore
from edgebench.results.sustained_part import SustainedSummary
from edgebench.results.telemetry_part import TelemetryTrace

#: Lines of records.jsonl as versions before the typed parts wrote them. The first two by
#: commit 3ff888f (through its own stages_field/pool_stages, instances_field, op_profile's
#: profile_result, quantization's Accuracy and analysis's EnergyResult): every part filled,
#: then the other forms (unavailable stages, profile and energy, the cell's own instance
#: count, a NaN accuracy figure). The next two by commit 6ea82ea, before sustained, artifact,
#: native and telemetry were typed (through its record_from_native and with_energy, and
#: record_from_result with the runner's CellTelemetry on a fake sysfs): a framework tool's
#: cell with its report, a full artifact and the shell loop's trace, and a sustained runner
#: cell with the runner's own trace. The last by commit 75f4d4f, before output_check was
#: typed (through its check_outputs): a mismatched cell whose check holds a NaN figure and a
#: blank-reference warning.
PREVIOUS_VERSION = Path(__file__).parent.parent / "data" / "records" / "previous_version.jsonl"


#: Fields records gained after the previous version, with the value an old record reads as.
ADDED_SINCE = {
    "backend": "cpu",
    "accelerator": None,
    "cpu_ms_per_inf": None,
    "cuda_graph": False,
    "nvidia": None,
    "fixed_performance": None,
    "precision_requested": None,
    "generation": None,
}


def _line(record: Record) -> str:
    """The record as the store writes it, less the fields added since the previous version
    (each checked to read back as its default)."""
    data = record.to_dict()
    for name, default in ADDED_SINCE.items():
        assert data.pop(name) == default, name
    return json.dumps(data, separators=(",", ":"), allow_nan=False)


def test_records_of_the_previous_version_read_back_byte_for_byte() -> None:
    lines = PREVIOUS_VERSION.read_text().splitlines()
    assert len(lines) == 5
    held: set[str] = set()
    for line in lines:
        stored, record = json.loads(line), Record.from_dict(json.loads(line))
        for name, part in PARTS.items():
            assert (stored.get(name) is None) == (getattr(record, name) is None), name
            assert stored.get(name) is None or isinstance(getattr(record, name), part), name
            held |= {name} if stored.get(name) is not None else set()
        assert _line(record) == line
    assert held == set(PARTS) - set(ADDED_SINCE)
    full, other, tool, sustained, mismatch = (Record.from_dict(json.loads(s)) for s in lines)
    assert full.stages.p50_ms["compute"] > full.stages.p50_ms["copy_out"]
    assert full.instances.measured and full.instances.at_once == 2
    assert [op.type for op in full.op_profile.ops] == ["Conv", "Gemm"]
    assert full.shape.change.from_inputs[0]["shape"] == [1, 3, 224, 224]
    assert full.quant.calibration.synthetic is True and full.accuracy.worst_output == "logits"
    assert other.stages.unavailable and other.op_profile.unavailable
    assert not other.instances.measured and other.instances.to_dict() == {
        "count": 2,
        "mode": "shared",
    }
    assert other.accuracy.cosine_min is None and other.quant.calibration is None
    assert full.energy.freq_max_khz == {"4": 2841600} and full.energy.flags == ["charging"]
    assert other.energy.unavailable == "no telemetry was recorded"
    assert full.artifact.cached is True and full.artifact.path is None
    assert tool.native.tool == "benchmark_app" and len(tool.native.raw_lines) == 20
    assert [f["name"] for f in tool.artifact.files] == ["model.xml", "model.bin"]
    assert tool.telemetry.source["sampled_by"] == "device shell loop"
    assert tool.telemetry.samples is None and len(tool.telemetry.power_w) == 12
    trace = sustained.telemetry
    assert trace.samples == len(trace.t_perf_ns) == len(trace.temp_c["cpu-thermal"])
    assert trace.marks["window_start"] < trace.marks["window_end"]
    assert trace.state_before is not None and trace.cooldown is None
    assert sustained.sustained.first_temp_c == 45.0 and sustained.sustained.first_power_w is None
    check = mismatch.output_check
    assert not check.passed and check.criterion_output == "feat" and check.rel_error is not None
    assert [c.name for c in check.outputs] == ["logits", "boxes", "feat"]
    assert math.isnan(check.outputs[2].rel_error) and check.outputs[1].degenerate  # a NaN
    assert [w.message for w in check.warnings] == [w.message for w in mismatch.warnings]
    assert full.output_check.passed and full.output_check.outputs[0].ratio == 0.2


def _every_form() -> list[dict[str, Any]]:
    """Each part in each form a writer leaves, and older or partial objects."""
    return [
        {"samples_ns": {"compute": [1, 2]}, "boundaries": {"compute": "run"}},  # no p50s yet
        {"p50_ms": {"compute": 4.0}},
        {"unavailable": "one call"},
        {"iterations": 3, "source": "x", "ops": [], "total_ms": 0.0, "inference_ms": 1.0},
        {"count": 4, "mode": "separate", "rss_before_load_mb": None, "rss_after_load_mb": [],
         "rss_one_running_mb": None, "rss_running_mb": None, "per_instance_mb": None,
         "load_mb_per_instance": None, "ran": None, "at_once": None},
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(5))
def test_partial_and_older_part_objects_keep_their_keys(index: int) -> None:
    data = _every_form()[index]
    field = ["stages", "stages", "stages", "op_profile", "instances"][index]
    record = sampled_record("d", "onnxruntime", 5.0, 1, **{field: data})
    assert record.to_dict()[field] == data
    again = Record.from_dict(json.loads(_line(record)))
    assert again.to_dict() == record.to_dict()


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("stages", {"p50_ms": "x"}, "stages.p50_ms"),
        ("stages", {"samples_ns": {"compute": "z"}}, "stages.samples_ns"),
        ("stages", {"boundaries": {"compute": 3}}, "stages.boundaries"),
        ("op_profile", {"ops": "bad"}, "op_profile.ops"),
        ("op_profile", {"iterations": "x"}, "op_profile.iterations"),
        ("op_profile", {"ops": [{"name": "a"}, 5]}, "op_profile.ops[1]"),
        ("op_profile", {"ops": [{"name": 1}]}, "op_profile.ops[0].name"),
        ("op_profile", {"ops": [{"time_ms": "1"}]}, "op_profile.ops[0].time_ms"),
        ("instances", {"rss_running_mb": "big"}, "instances.rss_running_mb"),
        ("instances", {"count": True}, "instances.count"),
        ("shape", {"change": "x"}, "shape.change"),
        ("shape", {"change": {"resize_ms": []}}, "shape.change.resize_ms"),
        ("quant", {"calibration": {"n": "8"}}, "quant.calibration.n"),
        ("quant", {"fp32_fallback_ops": [1]}, "quant.fp32_fallback_ops"),
        ("accuracy", {"passed": "yes"}, "accuracy.passed"),
        ("energy", {"flags": "charging"}, "energy.flags"),
        ("energy", {"freq_min_khz": {"4": 2.5e6}}, "energy.freq_min_khz"),
        ("sustained", {"seconds": "long"}, "sustained.seconds"),
        ("artifact", {"files": [{"name": 3}]}, "artifact.files"),
        ("artifact", {"cached": "yes"}, "artifact.cached"),
        ("native", {"raw_lines": "x"}, "native.raw_lines"),
        ("telemetry", {"temp_c": {"cpu": ["hot"]}}, "telemetry.temp_c"),
        ("telemetry", {"marks": {"window_start": 1.5}}, "telemetry.marks"),
        ("telemetry", {"t_perf_ns": None, "power_w": [1.0, "x"]}, "telemetry.power_w"),
        (
            "output_check",
            {"outputs": [{"name": "y"}, {"shape": "1x3"}]},
            "output_check.outputs[1].shape",
        ),
        ("output_check", {"outputs": ["y"]}, "output_check.outputs[0]"),
        ("output_check", {"warnings": [3]}, "output_check.warnings"),
    ],
)
def test_a_part_holding_a_wrong_type_is_left_out_of_the_record(
    field: str, value: Any, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = sampled_record("d", "onnxruntime", 5.0, 1, stages={"p50_ms": {"compute": 4.0}})
    data = good.to_dict() | {field: value}
    with caplog.at_level(logging.WARNING, logger="edgebench.results.records"):
        record = Record.from_dict(data)
    assert getattr(record, field) is None
    kept = {k: v for k, v in record.to_dict().items() if k != field}
    assert kept == {k: v for k, v in good.to_dict().items() if k != field}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"record {good.cell_id}: field {named} holds a JSON ")
    assert warning.endswith(f"; its {field} is left out")


@pytest.mark.parametrize(
    ("field", "value"), [("accuracy", []), ("stages", "fast"), ("energy", 3.5)]
)
def test_a_part_that_is_no_object_is_no_record(field: str, value: Any) -> None:
    data = sampled_record("d", "onnxruntime", 5.0, 1).to_dict() | {field: value}
    with pytest.raises(ValueError, match=rf"^field {field} holds a JSON "):
        Record.from_dict(data)


def test_the_store_keeps_a_line_whose_part_is_malformed(tmp_path: Path, caplog) -> None:
    run = ResultsStore(tmp_path).create_run({})
    good = sampled_record("d", "onnxruntime", 5.0, 1, run_id=run.run_id, stages={"p50_ms": {}})
    run.append(good)
    bad = good.to_dict() | {"instances": {"count": "three"}}
    with open(run.records_path, "a") as out:
        out.write(json.dumps(bad) + "\n")
    first, second = run.records()
    assert first.to_dict() == good.to_dict()
    assert second.instances is None and second.to_dict() == good.to_dict()
    assert "field instances.count holds a JSON string; its instances is left out" in caplog.text
    assert "skipped" not in caplog.text


def test_stage_percentiles_are_the_latency_statistics_of_the_stage() -> None:
    rng = np.random.default_rng(3)
    compute = (1e6 * rng.lognormal(0, 0.2, 101)).astype(int).tolist()
    stages = Stages.from_samples({"compute": compute, "copy_in": []}, {"compute": "run"})
    stats = latency_stats(compute)
    assert stages.p50_ms == {"compute": stats.p50} and stages.p99_ms == {"compute": stats.p99}
    assert stages.samples_ns == {"compute": compute, "copy_in": []}


def test_stages_pool_their_rounds_only_when_every_round_timed_them() -> None:
    rounds = [
        Stages.from_samples({"compute": [1_000_000, 3_000_000]}, {"compute": "a"}),
        Stages.from_samples({"compute": [2_000_000], "copy_in": [5]}, {"compute": "b"}),
    ]
    pooled = Stages.merge(rounds)
    assert pooled is not None
    assert pooled.samples_ns == {"compute": [1_000_000, 3_000_000, 2_000_000], "copy_in": [5]}
    assert pooled.p50_ms["compute"] == 2.0 and pooled.boundaries == {"compute": "a"}
    assert Stages.merge([rounds[0], Stages(unavailable="x")]) is rounds[0]
    assert Stages.merge([None, rounds[0]]) is None


def test_merged_parts_takes_each_part_from_its_own_merge() -> None:
    def round_record(seed: int, compute: list[int], count: int) -> Record:
        return sampled_record(
            "d",
            "onnxruntime",
            5.0,
            seed,
            stages=Stages.from_samples({"compute": compute}, {}),
            instances=Instances(count, "shared"),
            shape=ShapeVariant("fixed", 100 * seed),
            op_profile=OpProfile.missing(f"round {seed}"),
            quant=Quant(method=f"q{seed}"),
            accuracy=Accuracy(n=seed),
            energy=EnergyResult(window_s=float(seed)),
            sustained=SustainedSummary(float(seed), 1.0, 1.0),
            artifact=Artifact(format="onnx", path=f"/a/{seed}"),
            native=ToolReport(tool=f"tool {seed}"),
            telemetry=TelemetryTrace(t_perf_ns=[seed]),
            output_check=OutputCheck("ort", 0.01, seed == 1, 0.0, 0.0, 1.0, 1.0),
            accelerator=AcceleratorRun("Vulkan", device=f"gpu {seed}"),
            nvidia=NvidiaState(gpu=f"gpu {seed}"),
        )

    rounds = [round_record(1, [1_000_000], 2), round_record(2, [3_000_000], 3)]
    merged = replace(rounds[0], **merged_parts(rounds))
    assert merged.stages.samples_ns == {"compute": [1_000_000, 3_000_000]}
    assert merged.stages.p50_ms == {"compute": 2.0}
    # The parts that do not pool are the first round's, as the rest of the record is (a
    # generative cell's generation pools too: tests/generative/test_generation_record.py).
    assert set(PARTS) - {"stages", "generation"} == {
        *("instances", "shape", "op_profile", "quant", "accuracy", "energy"),
        *("sustained", "artifact", "native", "telemetry", "output_check", "accelerator"),
        "nvidia",
    }
    for name in set(PARTS) - {"stages", "generation"}:
        assert getattr(merged, name) is getattr(rounds[0], name), name


def test_the_accuracy_part_is_what_quantization_measures() -> None:
    rng = np.random.default_rng(5)
    reference = rng.normal(size=(6, 10))
    measured = quantization.measure_accuracy(
        ["logits"], [reference + rng.normal(0.0, 0.05, reference.shape)], ["logits"], [reference]
    )
    quantization.apply_rule(measured, quantization.AccuracyRule())
    assert Accuracy is quantization.Accuracy and PARTS["accuracy"] is quantization.Accuracy
    record = sampled_record("d", "onnxruntime", 5.0, 1, accuracy=measured)
    assert record.accuracy is measured
    stored = json.loads(_line(record))["accuracy"]
    assert stored == dataclasses.asdict(measured)
    assert list(stored) == [f.name for f in dataclasses.fields(quantization.Accuracy)]
    assert Record.from_dict(json.loads(_line(record))).accuracy == measured


def test_a_part_read_by_its_fields_is_written_with_its_keys_in_their_order() -> None:
    # The shell loop's order, not the field order; no samples, t_mono_ns or device state.
    stored = {"schema": "edgebench.telemetry/1", "t_perf_ns": [1, 2], "marks": {"window_end": 2},
              "power_w": None, "errors": [], "baseline": None}  # fmt: skip
    trace = TelemetryTrace.from_dict(stored, "telemetry")
    assert trace.to_dict() == stored and list(trace.to_dict()) == list(stored)
    assert trace.temp_c == {} and trace.samples is None  # absent: the field's default
    trace.samples = 2  # set since it was read: written after the stored keys
    assert list(trace.to_dict()) == [*stored, "samples"]
    built = TelemetryTrace(t_perf_ns=[1])  # built in code: every field
    assert list(built.to_dict()) == [f.name for f in dataclasses.fields(TelemetryTrace)]
    partial = {"passed": False, "n": 3}  # an accuracy read by its fields, the same way
    again = Record.from_dict(sampled_record("d", "x", 5.0, 1).to_dict() | {"accuracy": partial})
    assert again.accuracy.decisive_rows == 0 and again.to_dict()["accuracy"] == partial
