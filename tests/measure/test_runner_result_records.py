"""The host reads a runner's result as the protocol's typed ``RunResult``: the real runner's
result becomes a measured record, and a malformed one a failed record with one reason naming
the field (never a traceback), for a cell and for the output check's reference alike."""

from __future__ import annotations

import pytest
from fakes.local_cells import onnxruntime_cells
from fakes.models import save_conv_model
from fakes.runner_process import run_runner

from edgebench.measure.records import record_from_result
from edgebench.measure.reference_outputs import ReferenceUnavailable, reference_result
from edgebench.statuses import ErrorKind, Status


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A cell of the conv model and the real runner's result for its spec."""
    model = save_conv_model(tmp_path_factory.mktemp("model") / "conv.onnx", [1, 3, 32, 32])
    (cell,) = onnxruntime_cells(model)
    return cell, run_runner(cell.spec(seed=0))


def test_the_real_runners_result_becomes_a_measured_record(measured):
    cell, result = measured
    record = record_from_result("typed", cell, result)
    assert record.status == Status.OK, record.error
    assert record.samples_ns == result["samples_ns"] and record.n_samples == 3
    assert record.outputs == result["outputs"] and record.inputs == result["inputs"]
    assert record.load_ms == result["load_ns"] / 1e6
    assert record.framework_version == result["framework_version"]


@pytest.mark.parametrize(
    "change, named",
    [
        ({"samples_ns": ["12", 13, 14]}, "result.samples_ns[0] must be an integer"),
        ({"peak_rss_kb": "a lot"}, "result.peak_rss_kb must be an integer"),
        ({"stages": {"samples_ns": {"compute": [1.5]}}}, "result.stages.samples_ns.compute[0]"),
        ({"instances": {"count": 2}}, "result.instances.mode is missing"),
    ],
)
def test_a_malformed_result_is_a_failed_record_naming_the_field(measured, change, named):
    cell, result = measured
    record = record_from_result("typed", cell, {**result, **change})
    assert record.status == Status.FAILED and record.error_kind == ErrorKind.RUNNER
    assert record.error.startswith(f"the runner's result is malformed: {named}")
    assert "\n" not in record.error and record.samples_ns == []


def test_a_malformed_reference_result_is_an_unavailable_reference(measured):
    _, result = measured
    assert reference_result(result, "ONNX Runtime reference").status == Status.OK
    with pytest.raises(ReferenceUnavailable, match=r"result\.status is missing"):
        reference_result({k: v for k, v in result.items() if k != "status"}, "the reference")
