"""ONNX Runtime's CUDA and TensorRT backends: the provider options per backend x precision x
CUDA graph, the engine cache folder, the one-line refusal with the CPU-only onnxruntime
installed here (naming the onnxruntime-gpu swap), node placement read from a real session's
profile on the CPU provider, the fallback when no node left the CPU, and fp16 refused on the
CPU. The cells themselves need an NVIDIA GPU: those tests carry the gpu marker."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from fakes.models import save_conv_model

from edgebench.runners.backend_loader import load_backend
from edgebench.runners.backends import ort_gpu
from edgebench.runners.protocol.backend_options import OrtGpuOptions
from edgebench.runners.protocol.errors import BackendError

PROFILE = {"x": {"min": [1, 3, 8, 8], "opt": [4, 3, 8, 8], "max": [8, 3, 8, 8]}}


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_cuda_options(precision, graph):
    chain = ort_gpu.provider_options("cuda", precision, OrtGpuOptions(cuda_graph=graph), "/c")
    assert [name for name, _ in chain] == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    cuda = chain[0][1]
    assert cuda == {
        "device_id": 0,
        "cudnn_conv_algo_search": "EXHAUSTIVE",
        "enable_cuda_graph": graph,
    }


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_tensorrt_options(precision, graph):
    options = OrtGpuOptions(cuda_graph=graph, shape_profile=PROFILE)
    chain = ort_gpu.provider_options("tensorrt", precision, options, "/cache/onnxruntime")
    names = [name for name, _ in chain]
    assert names == ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    trt, cuda = chain[0][1], chain[1][1]
    # The provider's network is weakly typed: without the flag an fp16 graph computes in fp32.
    assert trt["trt_fp16_enable"] is (precision == "fp16")
    assert trt["trt_int8_enable"] is (precision == "int8")
    assert trt["trt_engine_cache_enable"] and trt["trt_timing_cache_enable"]
    assert trt["trt_engine_cache_path"] == trt["trt_timing_cache_path"] == "/cache/onnxruntime"
    assert trt["trt_cuda_graph_enable"] is graph
    assert cuda["enable_cuda_graph"] is False  # only the asked provider captures graphs
    assert trt["trt_profile_min_shapes"] == "x:1x3x8x8"
    assert trt["trt_profile_opt_shapes"] == "x:4x3x8x8"
    assert trt["trt_profile_max_shapes"] == "x:8x3x8x8"


def test_options_refuse_what_is_not_a_gpu_backend():
    with pytest.raises(ValueError, match="not an onnxruntime GPU backend"):
        ort_gpu.provider_options("nnapi", "fp32", OrtGpuOptions(), "/c")
    chain = ort_gpu.provider_options("tensorrt", "fp32", OrtGpuOptions(), "/")
    assert "trt_profile_min_shapes" not in chain[0][1]


def test_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("EDGEBENCH_TRT_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    home = str(tmp_path / ".cache/edgebench/tensorrt/onnxruntime")
    assert ort_gpu.cache_dir(OrtGpuOptions()) == home
    monkeypatch.setenv("EDGEBENCH_TRT_CACHE", "/env/trt")
    assert ort_gpu.cache_dir(OrtGpuOptions()) == "/env/trt/onnxruntime"
    assert ort_gpu.cache_dir(OrtGpuOptions(engine_cache_dir="/cell")) == "/cell/onnxruntime"


def _cpu_only() -> None:
    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider (onnxruntime-gpu): no refusal to see")


@pytest.mark.parametrize("backend", ["cuda", "tensorrt"])
def test_a_gpu_backend_without_onnxruntime_gpu_names_the_swap(backend, tmp_path):
    _cpu_only()
    model = save_conv_model(tmp_path / "m.onnx", [1, 3, 8, 8])
    runner = load_backend("onnxruntime", backend)
    with pytest.raises(BackendError) as raised:
        runner.load(str(model), 1, "fp32", {})
    error = raised.value
    assert error.kind == "unsupported" and "\n" not in error.message
    assert "pip uninstall -y onnxruntime && pip install 'edgebench[onnxruntime-gpu]'" in (
        error.message
    )
    assert ("TensorRT's libraries" in error.message) is (backend == "tensorrt")


def test_fp16_is_refused_on_the_cpu(tmp_path):
    model = save_conv_model(tmp_path / "m.onnx", [1, 3, 8, 8])
    runner = load_backend("onnxruntime", "cpu")
    with pytest.raises(BackendError, match="does not support precision fp16") as raised:
        runner.load(str(model), 1, "fp16", {})
    assert raised.value.kind == "unsupported"


def _profiled_placement(tmp_path) -> dict[str, int]:
    model = save_conv_model(tmp_path / "m.onnx", [1, 3, 8, 8])
    options = onnxruntime.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "placement")
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    session.run(None, {name: np.ones((1, 3, 8, 8), np.float32)})
    return ort_gpu.placement_from_profile(session.end_profiling())


def test_placement_on_the_cpu_provider_is_read_from_the_profile(tmp_path):
    placement = _profiled_placement(tmp_path)
    assert set(placement) == {"CPUExecutionProvider"} and placement["CPUExecutionProvider"] >= 1


def test_every_node_on_the_cpu_is_a_fallback(tmp_path):
    placement = _profiled_placement(tmp_path)
    with pytest.raises(BackendError) as raised:
        ort_gpu.check_placement("cuda", placement)
    assert raised.value.kind == "fallback"
    count = placement["CPUExecutionProvider"]
    assert f"placed all {count} nodes on CPUExecutionProvider" in raised.value.message


def test_some_nodes_on_the_cpu_still_ran_there():
    placement = {
        "TensorrtExecutionProvider": 1,
        "CUDAExecutionProvider": 2,
        "CPUExecutionProvider": 3,
    }
    assert ort_gpu.check_placement("tensorrt", placement) == (3, 6)


def test_engine_files_are_the_providers_engines(tmp_path):
    (tmp_path / "TensorrtExecutionProvider_TRTKernel_graph_main_123_0_0_sm86.engine").write_bytes(
        b""
    )
    (tmp_path / "TensorrtExecutionProvider_TRTKernel_graph_main_123_0_0_sm86.profile").write_bytes(
        b""
    )
    assert len(ort_gpu.engine_files(str(tmp_path))) == 1
    assert ort_gpu.engine_files(str(tmp_path / "missing")) == []


def _gpu_provider(provider: str) -> None:
    if provider not in onnxruntime.get_available_providers():
        pytest.skip(
            f"needs {provider}: an NVIDIA GPU with its driver and onnxruntime-gpu "
            "(pip uninstall -y onnxruntime && pip install 'edgebench[onnxruntime-gpu]')"
        )


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "tensorrt"])
@pytest.mark.parametrize("graph", [False, True])
def test_a_gpu_cell_runs_on_the_gpu_with_its_stages(backend, graph, tmp_path):
    _gpu_provider(ort_gpu.GPU_PROVIDERS[backend][0])
    model = save_conv_model(tmp_path / "m.onnx", [1, 3, 8, 8])
    runner = load_backend("onnxruntime", backend)
    runner.load(str(model), 1, "fp32", {"cuda_graph": graph, "engine_cache_dir": str(tmp_path)})
    name = runner.model_inputs()[0].name
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    stream = runner.make_stream({name: x})
    first = stream()
    report = runner.accelerator_report()
    assert report["delegated_ops"] >= 1 and report["cuda_graph"] is graph
    again = stream()
    np.testing.assert_allclose(again[0], first[0], rtol=1e-5)
    cpu = load_backend("onnxruntime", "cpu")
    cpu.load(str(model), 1, "fp32", {})
    np.testing.assert_allclose(cpu.make_stream({name: x})()[0], first[0], rtol=1e-3, atol=1e-4)
