"""Cells on NVIDIA backends: TensorRT takes CUDA as its default backend and has no CPU cell,
a run that names no frameworks leaves TensorRT out where there is no NVIDIA GPU, a device
without one gives every CUDA cell the probe's one line, fp16 cells get the fp16 ONNX artifact,
the CUDA Graphs variant is a column of its own, and dynamic cells send TensorRT the sweep's
shape range."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from planning.test_backend_axis import FakeDevice, cells_for

from edgebench.compute_backends import captures_cuda_graphs, engine_label
from edgebench.lab.accelerator_facts import Accelerator
from edgebench.planning.variants import Breakdown, expand, shape_range
from edgebench.statuses import ErrorKind, Status

NO_GPU = "no NVIDIA GPU: nvidia-smi not found"
ORIN_GPU = Accelerator("CUDA", "Orin (nvgpu)", "integrated")


def nvidia_device(*accelerators: Accelerator) -> FakeDevice:
    device = FakeDevice(accelerators=accelerators)
    device.facts().accelerator_problems = {} if accelerators else {"CUDA": NO_GPU}
    return device


def build(frameworks, device, precision="fp32", chosen=True, backends=()):
    return cells_for(frameworks, backends, device, precision=precision, chosen=chosen)


def test_tensorrt_runs_on_cuda_by_default_and_has_no_cpu_cell(caplog):
    (cell,) = build(["tensorrt"], nvidia_device(ORIN_GPU))
    assert (cell.backend, cell.engine, cell.verdict) == ("cuda", "tensorrt", None)
    assert cell.cell_id.endswith("/bcuda") and cell.spec()["backend"] == "cuda"
    assert cells_for(["tensorrt"], ["cpu"]) == []
    assert "tensorrt has no cpu backend (it runs on cuda only)" in caplog.text


def test_a_default_run_leaves_tensorrt_out_only_where_there_is_no_nvidia_gpu():
    frameworks = ["onnxruntime", "tensorrt"]
    assert [c.engine for c in build(frameworks, nvidia_device(), chosen=False)] == ["onnxruntime"]
    with_gpu = build(frameworks, nvidia_device(ORIN_GPU), chosen=False)
    assert [c.engine for c in with_gpu] == ["onnxruntime", "tensorrt"]
    # Named, it gets its cell everywhere: one line says why it cannot run there.
    assert [c.engine for c in build(frameworks, nvidia_device())] == ["onnxruntime", "tensorrt"]


def test_every_cuda_cell_on_a_device_without_nvidia_gpu_says_so_in_one_line():
    cells = build(
        ["onnxruntime", "tensorrt"], nvidia_device(), backends=["cpu", "cuda", "tensorrt"]
    )
    verdicts = {c.engine: c.verdict for c in cells}
    assert verdicts["onnxruntime"] is None
    for engine in ("onnxruntime·cuda", "onnxruntime·tensorrt", "tensorrt"):
        status, kind, reason = verdicts[engine]
        assert (status, kind) == (Status.UNSUPPORTED, ErrorKind.UNSUPPORTED)
        assert reason == NO_GPU
    # Facts that say nothing of CUDA (an older probe) leave the cell to the runner.
    silent = FakeDevice()
    silent.facts().accelerator_problems = {}
    (cell,) = build(["tensorrt"], silent)
    assert cell.verdict is None


def test_fp16_cells_on_cuda_run_the_fp16_onnx_artifact_and_cpu_cells_do_not():
    device = nvidia_device(ORIN_GPU)
    cells = build(["onnxruntime", "tensorrt"], device, "fp16", backends=["cpu", "cuda"])
    routes = {c.engine: c.convert_to for c in cells}
    assert routes == {"onnxruntime": None, "onnxruntime·cuda": "onnx-fp16", "tensorrt": "onnx-fp16"}
    int8 = build(["tensorrt"], device, "int8")
    assert [c.convert_to for c in int8] == ["onnx-qdq"]


def test_the_cuda_graphs_variant_is_its_own_engine_column_with_the_runner_option():
    device = nvidia_device(ORIN_GPU)
    base = build(["onnxruntime", "tensorrt"], device, backends=["cpu", "cuda"])
    cells = expand(base, Breakdown(cuda_graphs=True), Path("/unused"))
    engines = [c.engine for c in cells]
    assert engines == [
        "onnxruntime",
        "onnxruntime·cuda",
        "onnxruntime·cuda+graphs",
        "tensorrt",
        "tensorrt+graphs",
    ]
    graph = cells[-1]
    assert graph.cell_id == cells[-2].cell_id + "/graph"
    assert graph.spec()["options"] == {"cuda_graph": True}
    assert cells[-2].spec()["options"] == {}
    assert not captures_cuda_graphs("mnn", "cuda") and not captures_cuda_graphs("ncnn", "vulkan")
    assert engine_label("onnxruntime", "tensorrt", True) == "onnxruntime·tensorrt+graphs"
    # Without the flag no variant is added.
    assert len(expand(base, Breakdown(), Path("/unused"))) == len(base)


def test_a_dynamic_cell_sends_the_sweeps_shape_range_with_its_own_shape_as_optimum():
    points = [
        [{"name": "x", "shape": [1, 3, 160, 160]}, {"name": "m", "shape": [1, 4]}],
        [{"name": "x", "shape": [4, 3, 320, 224]}, {"name": "m", "shape": [1, 4]}],
        [{"name": "x", "shape": [2, 3, 224, 320]}, {"name": "m", "shape": [1, 4]}],
    ]
    ranges = shape_range(points)
    assert ranges == {"x": ([1, 3, 160, 160], [4, 3, 320, 320]), "m": ([1, 4], [1, 4])}
    (planned,) = build(["tensorrt"], nvidia_device(ORIN_GPU))
    cell = replace(planned, inputs=points[2], shape_range=ranges)
    profile = cell.spec()["options"]["shape_profile"]
    assert profile["x"] == {
        "min": [1, 3, 160, 160],
        "opt": [2, 3, 224, 320],
        "max": [4, 3, 320, 320],
    }
