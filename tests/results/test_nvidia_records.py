"""What a record keeps of a CUDA cell: its engine column (with the CUDA Graphs variant), the
accelerator line with the engine's build cost and placement, and the device memory each
instance adds."""

from __future__ import annotations

import pytest

from edgebench.measure.breakdowns import instances_field
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.results.records import Record
from edgebench.runners.protocol.result_parts import InstancesPart
from edgebench.runners.protocol.typed_json import read_object


def _part(raw: dict) -> InstancesPart:
    """The runner's ``instances`` object as the host reads it from a result."""
    return read_object(InstancesPart, raw, "instances")


def test_a_cuda_graph_record_is_its_own_engine_and_reads_back():
    record = Record(
        run_id="r",
        cell_id="orin/m/tensorrt/fp16/t1/call/s1/bcuda/graph",
        device="orin",
        model="m",
        framework="tensorrt",
        precision="fp16",
        threads=1,
        cores="all",
        status="ok",
        backend="cuda",
        cuda_graph=True,
    )
    assert record.engine == "tensorrt+graphs"
    again = Record.from_dict(record.to_dict())
    assert again.cuda_graph is True and again.engine == "tensorrt+graphs"
    plain = Record.from_dict({**record.to_dict(), "cuda_graph": False})
    assert plain.engine == "tensorrt"


def test_the_accelerator_line_names_the_engine_build_and_where_nodes_ran():
    run = AcceleratorRun(
        api="TensorRT",
        device="NVIDIA H200",
        precision="fp16",
        engine_build_ms=41200.0,
        engine_cache="miss",
        cuda_graph=True,
        placement={"TensorrtExecutionProvider": 101, "CPUExecutionProvider": 2},
    )
    line = run.describe()
    assert "engine built in 41.2 s, now cached" in line
    assert "TensorrtExecutionProvider 101 CPUExecutionProvider 2" in line
    assert line.endswith("CUDA Graph")
    hit = AcceleratorRun(api="CUDA", engine_build_ms=900.0, engine_cache="hit")
    assert "engine built in 0.9 s, from the engine cache" in hit.describe()
    assert AcceleratorRun.from_dict(run.to_dict(), "accelerator") == run


def test_instances_on_a_gpu_record_the_device_memory_each_one_adds():
    raw = {
        "count": 4,
        "mode": "shared",
        "rss_after_load_kb": [1024, 2048, 3072, 4096],
        "device_memory_after_load_mb": [300.0, 320.0, 340.0, 360.0],
    }
    part = instances_field(_part(raw), 512)
    assert part.device_memory_after_load_mb == [300.0, 320.0, 340.0, 360.0]
    assert part.device_load_mb_per_instance == 20.0
    assert instances_field(_part({**raw, "count": 1}), 512).device_load_mb_per_instance is None
    # CPU cells have no device memory: their stored part keeps the keys it always had.
    cpu = instances_field(_part({k: v for k, v in raw.items() if not k.startswith("device")}), 512)
    assert "device_memory_after_load_mb" not in cpu.to_dict()
    assert type(part).from_dict(part.to_dict()) == part


def test_a_trtexec_record_takes_its_statistics_and_stages_from_the_raw_samples():
    from fakes.trtexec_outputs import TRT10_BUILD_RUN, export_times
    from planning.test_backend_axis import FakeDevice, cells_for

    from edgebench.framework_tools.trtexec import TrtexecAdapter, parse_export_times
    from edgebench.lab.facts import DeviceFacts
    from edgebench.measure.records import record_from_native

    device = FakeDevice()
    device._facts = DeviceFacts(cpus=[0, 1])
    (cell,) = cells_for(["tensorrt"], ["cuda"], device)
    cell.model.sha256 = None
    parsed = TrtexecAdapter().parse_lines(TRT10_BUILD_RUN.splitlines(), "model.onnx")
    tool_median = parsed.median_ms
    queries = [(0.1, 1.0 + i / 100, 0.05) for i in range(41)]
    parsed.add_times(parse_export_times(export_times(queries)))
    record = record_from_native("r", cell, parsed)
    assert record.n_samples == 41 and len(record.samples_ns) == 41
    assert record.latency_ms["p50"] == pytest.approx(0.1 + 1.2 + 0.05)
    assert record.latency_ms["p50"] != tool_median  # the samples decide, not the summary
    assert record.stages.p50_ms == pytest.approx({"copy_in": 0.1, "compute": 1.2, "copy_out": 0.05})
    assert "H2D" in record.stages.boundaries["copy_in"]
    assert not any(w.kind == "no_percentiles" for w in record.warnings)
