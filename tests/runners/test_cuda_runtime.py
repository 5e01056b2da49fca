"""The CUDA runtime through ctypes, and TensorRT's refusals on a machine without an NVIDIA GPU:
the real libcudart where it is installed (here: the CUDA 13 toolkit with no driver, so every
device call answers "no driver" for real), the one-line reasons through the runner process."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import onnx
import pytest
from fakes.quant_models import small_classifier
from fakes.runner_process import run_runner

from edgebench.runners import cuda_runtime, protocol
from edgebench.runners.backend_loader import instantiate, load_backend
from edgebench.runners.backends import declaration
from edgebench.runners.cuda_runtime import CudaError, CudaRuntime, CudaUnavailable
from edgebench.runners.protocol.errors import BackendError

NO_CUDART = "libcudart is not installed (the CUDA toolkit or pip install nvidia-cuda-runtime-cu12)"


@pytest.fixture(scope="module")
def cudart() -> CudaRuntime:
    """The real CUDA runtime library of this machine (skips naming it when there is none)."""
    try:
        return CudaRuntime(*cuda_runtime.load_library())
    except CudaUnavailable:
        pytest.skip(NO_CUDART)


@pytest.fixture(scope="module")
def no_gpu(cudart: CudaRuntime) -> CudaRuntime:
    try:
        count = cudart.device_count()
    except CudaError:
        return cudart
    if count:
        pytest.skip("this machine has an NVIDIA GPU: the no-GPU paths cannot be shown here")
    return cudart


def test_no_gpu_is_one_line_naming_the_call_and_cudas_error(no_gpu: CudaRuntime) -> None:
    with pytest.raises(CudaUnavailable) as caught:
        cuda_runtime.open_cuda()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("no NVIDIA GPU: cudaGetDeviceCount")
    # With no driver at all the runtime says InsufficientDriver; with a driver and no device,
    # NoDevice (or a count of none).
    assert (
        "cudaErrorInsufficientDriver (" in message
        or "cudaErrorNoDevice (" in message
        or ("found none" in message)
    )


def test_a_failing_call_names_itself_and_cudas_words(no_gpu: CudaRuntime) -> None:
    with pytest.raises(CudaError, match=r"^cudaMalloc: cudaError\w+ \(.+\)$"):
        no_gpu.malloc(1024)
    with pytest.raises(CudaError, match=r"^cudaStreamCreateWithFlags: cudaError"):
        no_gpu.stream_create()


def test_versions_answer_without_a_driver(cudart: CudaRuntime) -> None:
    runtime = cudart.runtime_version()
    assert runtime >= 11000  # what the runtime was built as, asked of the library alone
    assert cuda_runtime.version_text(runtime).startswith(str(runtime // 1000) + ".")
    assert cuda_runtime.version_text(12040) == "12.4"
    assert cudart.driver_version() >= 0  # 0: no driver


def test_a_missing_library_says_so_and_how_to_point_at_one() -> None:
    missing = ["/nonexistent/libcudart.so.13"]
    with pytest.raises(CudaUnavailable) as caught:
        cuda_runtime.open_cuda(missing)
    assert str(caught.value).startswith("no NVIDIA GPU: libcudart not found (tried 1 places")
    assert cuda_runtime.ENV_LIBRARY in str(caught.value)


@pytest.fixture()
def without_driver(no_gpu: CudaRuntime) -> Path:
    """The file of this machine's real libcudart, which finds no driver for it."""
    with pytest.raises(CudaError) as caught:
        no_gpu.device_count()
    if caught.value.code != cuda_runtime.INSUFFICIENT_DRIVER:
        pytest.skip(f"this machine's libcudart does not say InsufficientDriver: {caught.value}")
    files = [Path(c) for c in cuda_runtime.library_candidates() if Path(c).is_absolute()]
    return next(f.resolve() for f in files if f.is_file())


def test_a_runtime_too_new_for_the_driver_gives_way_to_the_next(
    without_driver: Path, tmp_path: Path
) -> None:
    """A CUDA-12 driver host with the CUDA 13 toolkit: the CUDA 13 library's InsufficientDriver
    is not the answer while another libcudart remains. Two real copies of this machine's
    library stand for the 13 and the 12 one (a copy is a distinct library to the linker);
    neither finds a driver here, so the message names both with CUDA's words."""
    newer, older = tmp_path / "13" / "libcudart.so.13", tmp_path / "12" / "libcudart.so.12"
    for copy in (newer, older):
        copy.parent.mkdir()
        shutil.copyfile(without_driver, copy)
    missing = str(tmp_path / "none" / "libcudart.so.12")
    with pytest.raises(CudaUnavailable) as caught:
        cuda_runtime.open_cuda([str(newer), missing, str(older)])
    message = str(caught.value)
    assert "\n" not in message and message.startswith("no NVIDIA GPU: cudaGetDeviceCount: ")
    tried = message[len("no NVIDIA GPU: ") :].split("; ")
    assert [entry.rsplit(" [", 1)[1] for entry in tried] == [f"{newer}]", f"{older}]"]
    assert all("cudaErrorInsufficientDriver (" in entry for entry in tried)


def test_one_library_found_under_two_names_is_tried_once(without_driver: Path, tmp_path: Path):
    alias = tmp_path / "libcudart.so"
    alias.symlink_to(without_driver)
    with pytest.raises(CudaUnavailable) as caught:
        cuda_runtime.open_cuda([str(without_driver), str(alias)])
    assert str(caught.value).count("cudaGetDeviceCount") == 1


def test_library_candidates_put_the_override_and_pip_wheels_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tmp_path / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcudart.so.13").write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setenv(cuda_runtime.ENV_LIBRARY, "/opt/custom/libcudart.so.12")
    found = cuda_runtime.library_candidates()
    assert found[:2] == ["/opt/custom/libcudart.so.12", str(wheel / "libcudart.so.13")]
    assert found.index("libcudart.so.13") < found.index("libcudart.so.12")
    assert "/usr/local/cuda/lib64/libcudart.so.13" in found or not Path("/usr/local/cuda").exists()


def test_tensorrt_has_no_cpu_backend() -> None:
    with pytest.raises(BackendError) as caught:
        load_backend("tensorrt", "cpu")
    assert caught.value.kind == "unsupported"
    assert caught.value.message == (
        "tensorrt runs on NVIDIA GPUs only (backend cuda); it has no cpu backend"
    )
    with pytest.raises(BackendError, match="its tensorrt binding selects cuda \\("):
        load_backend("tensorrt", "vulkan")


def test_tensorrt_without_a_gpu_is_unsupported_before_the_import() -> None:
    """Checked before tensorrt is imported: the reason is the missing GPU, whatever is
    installed (real: no driver here, or no libcudart at all)."""
    with pytest.raises(BackendError) as caught:
        load_backend("tensorrt", "cuda")
    try:
        cuda_runtime.open_cuda()
    except CudaUnavailable as exc:
        expected = str(exc)
    else:
        pytest.skip("this machine has an NVIDIA GPU")
    assert caught.value.kind == "unsupported"
    assert caught.value.message == expected


def test_tensorrt_not_installed_names_its_pip_extra() -> None:
    if importlib.util.find_spec("tensorrt") is not None:
        pytest.skip("the tensorrt package is installed here")
    declared = declaration("tensorrt_backend")._replace(device_check=None)
    with pytest.raises(BackendError) as caught:
        instantiate(declared)
    assert caught.value.kind == "not_installed"
    assert "pip install 'edgebench[tensorrt]'" in caught.value.message


def test_the_runner_refuses_tensorrt_in_one_line(tmp_path: Path) -> None:
    model = tmp_path / "classifier.onnx"
    onnx.save(small_classifier(), str(model))
    spec = {"schema": protocol.SPEC_SCHEMA, "model": str(model), "framework": "tensorrt"}
    cpu = run_runner({**spec, "backend": "cpu"})
    assert cpu["status"] == "unsupported"
    assert cpu["error"]["message"].endswith("it has no cpu backend")
    cuda = run_runner({**spec, "backend": "cuda"})
    if cuda["status"] == "ok":
        pytest.skip("this machine runs TensorRT")
    assert cuda["error"]["kind"] in ("unsupported", "not_installed")
    assert "\n" not in cuda["error"]["message"]
    assert cuda["samples_ns"] == [] and "accelerator" not in cuda
