"""The warnings registry: each kind declared once, warnings stored as messages with their kind and
figures beside them, and records written before warnings had kinds still read and shown."""

from __future__ import annotations

import json
import re
import string
from html import escape
from pathlib import Path

import pytest

from edgebench.results.record_warnings import (
    CORES_NOT_APPLIED,
    FEW_SAMPLES,
    HIGH_VARIANCE,
    INSTANCES_CUT_SHORT,
    NO_OUTPUT_CHECK,
    UNCLASSIFIED,
    WARNING_KINDS,
    Merge,
    RecordWarning,
    merge_warnings,
    pool_warnings,
    unclassified,
    warnings_from_json,
)
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

#: Figures for every kind in the registry: a kind added without an entry here fails the test
#: below, which words each one from them.
SAMPLE_FIGURES = {
    "few_samples": {"samples": 40},
    "few_token_samples": {"samples": 21},
    "high_variance": {"cv": 0.125},
    "cores_not_applied": {"asked": [0, 1], "effective": [2, 3]},
    "no_percentiles": {"tool": "benchncnn", "printed": ["min", "max", "avg"]},
    "input_not_used": {"runner": "a native benchmark tool"},
    "governor_not_set": {"error": "cpu0: cannot set governor performance: permission denied"},
    "governor_not_performance": {"governors": ["schedutil", "powersave"]},
    "no_telemetry": {"reason": "sampled on ADB and SSH devices only"},
    "fixed_performance_not_set": {"reason": "Failed to set FIXED_PERFORMANCE mode"},
    "clock_limits_moved": {"changes": ["max freq 2.4 -> 1.5 GHz on cpu4-7"]},
    "rounds_cut_short": {"done": 2, "rounds": 3},
    "no_output_check": {"reason": "no ONNX reference for this model"},
    "blank_reference": {"output": "y", "problem": "is all zero", "input": "the seeded input"},
    "no_accuracy": {"reason": "the runner returned no outputs"},
    "accuracy_from_one_input": {},
    "op_profile_failed": {"problem": "benchmark_app timed out after 60 s"},
    "ops_outweigh_inference": {"total_ms": 0.72, "inference_ms": 0.105, "source": "benchmark_app"},
    "instances_cut_short": {"ran": 3, "count": 4, "stop_reason": "max_time"},
    "instances_apart": {"at_once": 2, "count": 4},
}


def template_fields(wording: object) -> set[str]:
    if not isinstance(wording, str):
        return set()
    return {name for _, name, _, _ in string.Formatter().parse(wording) if name}


def test_every_kind_declares_its_parts_and_is_worded_from_its_figures():
    assert set(SAMPLE_FIGURES) == set(WARNING_KINDS) - {UNCLASSIFIED.name}
    for name, kind in WARNING_KINDS.items():
        assert kind.name == name and name.isidentifier() and name.islower()
        assert all(isinstance(what, str) and what for what in kind.figures.values()), name
        assert isinstance(kind.merge, Merge) and isinstance(kind.pooled, bool)
        if kind.merge == Merge.WORST:
            assert kind.worst in kind.figures, name
        else:
            assert kind.worst is None, name
        if kind is UNCLASSIFIED:
            continue
        assert kind.headline, name
        assert template_fields(kind.headline) | template_fields(kind.advice) <= set(kind.figures)
        warning = kind.make(**SAMPLE_FIGURES[name])
        assert warning.kind == name and dict(warning.figures) == SAMPLE_FIGURES[name]
        assert warning.message and "{" not in warning.message and "\n" not in warning.message
        assert warning.shown() == warning.message


def test_docs_list_every_kind_with_its_figures():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    section = doc.split("## Warnings")[1].split("\n## ")[0]
    rows = [line.split(" | ")[:2] for line in section.splitlines() if line.startswith("| `")]
    listed = {name: cells[1] for cells in rows for name in re.findall(r"`(\w+)`", cells[0])}
    assert set(listed) == set(WARNING_KINDS)
    for name, figures in listed.items():
        assert set(re.findall(r"`(\w+)`", figures)) == set(WARNING_KINDS[name].figures), name


def test_a_kind_refuses_figures_it_does_not_declare():
    with pytest.raises(TypeError, match="high_variance"):
        HIGH_VARIANCE.make(cv=0.2, samples=10)
    with pytest.raises(TypeError, match="few_samples"):
        FEW_SAMPLES.make()


def test_the_worst_of_a_kind_stands_for_the_others_and_each_other_warning_is_kept():
    warnings = [
        HIGH_VARIANCE.make(cv=0.12),
        NO_OUTPUT_CHECK.make(reason="a"),
        FEW_SAMPLES.make(samples=40),
        HIGH_VARIANCE.make(cv=0.31),
        FEW_SAMPLES.make(samples=12),
        NO_OUTPUT_CHECK.make(reason="b"),
        NO_OUTPUT_CHECK.make(reason="a"),
    ]
    assert merge_warnings(warnings) == [
        HIGH_VARIANCE.make(cv=0.31),  # the highest CV, where its kind first appeared
        NO_OUTPUT_CHECK.make(reason="a"),
        NO_OUTPUT_CHECK.make(reason="b"),
        FEW_SAMPLES.make(samples=12),  # the fewest samples
    ]


def test_pooling_rounds_drops_what_the_pooled_samples_recompute_and_keeps_the_rest():
    cut_short = INSTANCES_CUT_SHORT.make(ran=3, count=4, stop_reason="max_time")
    rounds = [[FEW_SAMPLES.make(samples=30), cut_short], [FEW_SAMPLES.make(samples=30)]]
    assert pool_warnings(rounds, []) == [cut_short]
    pooled = [FEW_SAMPLES.make(samples=60)]
    assert pool_warnings(rounds, pooled) == [cut_short, *pooled]


def ok_record(run_id: str, warnings: list[RecordWarning] | None = None) -> Record:
    samples = [1_000_000 + 1_000 * (i % 5) for i in range(60)]
    return Record(
        run_id=run_id,
        cell_id="local/m/onnxruntime/fp32/t1/call/s1",
        device="local",
        model="m",
        framework="onnxruntime",
        precision="fp32",
        threads=1,
        cores="all",
        status="ok",
        latency_ms={"min": 1.0, "p50": 1.002, "p90": 1.004, "p95": 1.004, "p99": 1.004,
                    "mean": 1.002, "std": 0.0014, "cv": 0.0014},
        samples_ns=samples,
        n_samples=len(samples),
        warnings=warnings or [],
    )  # fmt: skip


def test_a_record_stores_messages_with_kind_and_figures_beside_them():
    warnings = [HIGH_VARIANCE.make(cv=0.125), CORES_NOT_APPLIED.make(asked=[0], effective=[1])]
    data = json.loads(json.dumps(ok_record("r", warnings).to_dict()))
    assert data["warnings"] == [w.message for w in warnings]
    assert data["warning_details"] == [
        {"kind": "high_variance", "figures": {"cv": 0.125}},
        {"kind": "cores_not_applied", "figures": {"asked": [0], "effective": [1]}},
    ]
    assert Record.from_dict(data).warnings == warnings


def test_a_kind_from_a_newer_version_is_kept_and_shown_as_its_message():
    details = [{"kind": "gpu_throttled", "figures": {"mhz": 300}}]
    (warning,) = warnings_from_json(["the GPU ran at 300 MHz"], details)
    assert warning == RecordWarning("gpu_throttled", {"mhz": 300}, "the GPU ran at 300 MHz")
    assert warning.shown(" (+1 similar)") == "the GPU ran at 300 MHz (+1 similar)"


@pytest.mark.parametrize(
    "details",
    [[], [{"kind": "high_variance"}], ["high_variance"], {"kind": "high_variance"}],
    ids=["too-few", "no-figures", "not-an-object", "not-a-list"],
)
def test_details_that_do_not_match_the_messages_are_not_a_record(details):
    data = ok_record("r", [HIGH_VARIANCE.make(cv=0.2)]).to_dict() | {"warning_details": details}
    with pytest.raises(ValueError, match="warning_details"):
        Record.from_dict(data)


#: Warnings as the previous version stored them: messages only.
OLD_WARNINGS = [
    "high variance (CV 12%): pin cores, close other load, or raise --min-time",
    "high variance (CV 18%): pin cores, close other load, or raise --min-time",
    "no output check: no ONNX reference for this model",
]


def old_format_line(run_id: str) -> str:
    """A record line as the version before warning kinds wrote it: no ``warning_details``."""
    data = ok_record(run_id).to_dict()
    assert "warning_details" not in data
    return json.dumps(data | {"warnings": OLD_WARNINGS}) + "\n"


def test_an_old_record_reads_its_warnings_as_unclassified_messages(tmp_path):
    run = ResultsStore(tmp_path / "runs").create_run({"status": "complete"})
    run.records_path.write_text(old_format_line(run.run_id))
    (record,) = run.records()
    assert record.warnings == [unclassified(message) for message in OLD_WARNINGS]
    assert all(w.kind == "unclassified" and not w.figures for w in record.warnings)
    assert record.to_dict()["warnings"] == OLD_WARNINGS
    assert "warning_details" not in record.to_dict()  # written back as it was read


def test_show_compare_report_and_history_read_an_old_record(run_cli, eb_env, tmp_path):
    store = ResultsStore(Path(eb_env["EDGEBENCH_RESULTS"]))
    old = store.create_run({"status": "complete"})
    old.records_path.write_text(old_format_line(old.run_id))
    new = store.create_run({"status": "complete"})
    new.append(ok_record(new.run_id, [HIGH_VARIANCE.make(cv=0.2)]))

    shown = run_cli(["show", old.run_id])
    assert shown.returncode == 0, shown.stderr
    for message in OLD_WARNINGS:  # each as it was written: no figures are read from it
        assert f": warning: {message}" in shown.stdout

    compared = run_cli(["compare", old.run_id, new.run_id])
    assert compared.returncode == 0, compared.stderr
    assert "local" in compared.stdout and "Traceback" not in compared.stderr

    out = tmp_path / "reports"
    reported = run_cli(["report", old.run_id, "--format", "html,md,csv", "--out", str(out)])
    assert reported.returncode == 0, reported.stderr
    html = next(out.rglob("*.html")).read_text()
    assert all(escape(message) in html for message in OLD_WARNINGS)

    history = run_cli(["history"])
    assert history.returncode == 0, history.stderr
    assert old.run_id in history.stdout and new.run_id in history.stdout
