"""A cell's spec carries the options of its backend's row (ComputeBackend.options): a TensorRT
or ONNX Runtime GPU cell its CUDA graph and shape range, a backend without options none, and
every spec the host writes is one the runner's strict reader takes."""

from __future__ import annotations

from dataclasses import replace

from planning.test_backend_axis import cells_for
from planning.test_nvidia_cells import ORIN_GPU, nvidia_device

from edgebench.compute_backends import ACCELERATORS, captures_cuda_graphs
from edgebench.runners.backends import options_type
from edgebench.runners.protocol.spec import RunSpec

RANGE = {"x": ([1, 3, 8, 8], [4, 3, 16, 16])}
PROFILE = {"x": {"min": [1, 3, 8, 8], "opt": [1, 3, 8, 8], "max": [4, 3, 16, 16]}}


def dynamic(cell, cuda_graph: bool = False):
    return replace(cell, shape_range=RANGE, shape_mode="dynamic", cuda_graph=cuda_graph)


def test_a_tensorrt_dynamic_cell_sends_its_shape_profile_and_cuda_graph() -> None:
    (cell,) = cells_for(["tensorrt"], [], nvidia_device(ORIN_GPU))
    sent = dynamic(cell, cuda_graph=True).spec()["options"]
    assert sent == {"cuda_graph": True, "shape_profile": PROFILE}
    assert dynamic(cell).spec()["options"] == {"shape_profile": PROFILE}


def test_a_backend_without_options_sends_none_even_for_a_dynamic_cell() -> None:
    for cell in cells_for(["onnxruntime", "ncnn"], ["cpu", "vulkan"]):
        assert dynamic(cell).spec()["options"] == {}, cell.engine


def test_every_backends_spec_is_one_the_runner_reads() -> None:
    (base,) = cells_for(["onnxruntime"], ["cpu"])
    for row in ACCELERATORS:
        cell = dynamic(base, captures_cuda_graphs(row.framework, row.name))
        cell = replace(cell, framework=row.framework, backend=row.name)
        sent = cell.spec()
        options = RunSpec.from_json(sent, options_type).options
        if row.options is None:
            assert options == {}, row
        else:
            assert row.options.from_json(options).to_json() == options
            assert options.get("cuda_graph") is (True if cell.cuda_graph else None)
