"""NVIDIA facts on a machine without an NVIDIA GPU, for real (no libnvidia-ml.so.1 here), and
on a synthetic Jetson: the probe's CUDA line, the library versions, the nvml source's refusal,
and the cell's ``nvidia`` key with its window samples."""

from __future__ import annotations

import ctypes
import re
import shutil

import pytest
from fakes.c_stubs import shared_library
from fakes.jetson_board import jetson_tools, jetson_tree, path_with

from edgebench.runners import cuda_runtime, nvidia_info
from edgebench.runners.accelerators import probe_api
from edgebench.runners.energy_source import TelemetryUnavailable
from edgebench.runners.energy_sources import make_source
from edgebench.runners.nvidia_cell import NvidiaWatch, cell_report

NVML_HERE = nvidia_info.open_first(nvidia_info.NVML_NAMES)[0] is not None
needs_no_nvml = pytest.mark.skipif(NVML_HERE, reason="this machine has NVML (an NVIDIA driver)")


@needs_no_nvml
def test_nvml_missing_is_one_line():
    with pytest.raises(nvidia_info.NvidiaUnavailable) as raised:
        nvidia_info.Nvml()
    assert raised.value.kind == "no_loader"
    assert str(raised.value) == nvidia_info.NO_NVML


@needs_no_nvml
def test_the_probe_says_there_is_no_nvidia_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_SYSFS_ROOT", str(tmp_path))
    answer = probe_api("CUDA")
    assert answer["devices"] == []
    assert answer["problem"]["kind"] == "no_loader"
    message = answer["problem"]["message"]
    if shutil.which("nvidia-smi") is None:
        assert message.startswith("no NVIDIA GPU: nvidia-smi not found")
    else:
        assert message == nvidia_info.NO_NVML


@needs_no_nvml
def test_the_probe_counts_a_jetson_as_a_cuda_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_SYSFS_ROOT", str(jetson_tree(tmp_path)))
    answer = probe_api("CUDA")
    assert answer["problem"] is None
    (device,) = answer["devices"]
    assert device["type"] == "integrated" and device["compute_capability"] == "8.7"
    assert device["driver"] == "L4T 36.4.7"


@needs_no_nvml
def test_the_nvml_source_refuses_in_one_line(tmp_path):
    with pytest.raises(TelemetryUnavailable, match=r"^nvml: no NVIDIA GPU: libnvidia-ml"):
        make_source("nvml", root=str(tmp_path))


def test_library_versions_say_why_each_is_missing():
    versions = nvidia_info.library_versions()
    assert set(versions) == {"cuda_runtime", "cuda_driver", "cudnn", "tensorrt", "unavailable"}
    for key, why in versions["unavailable"].items():
        assert versions[key] is None and why
    if versions["cuda_runtime"] is None:
        pytest.skip("needs the CUDA toolkit's libcudart (/usr/local/cuda) to read its version")
    assert re.fullmatch(r"\d+\.\d+", versions["cuda_runtime"])


def test_cuda_runtime_answers_with_no_driver():
    try:
        cuda_runtime.load_library()
    except cuda_runtime.CudaUnavailable:
        pytest.skip("needs the CUDA toolkit's libcudart (install the CUDA toolkit)")
    version, why = nvidia_info.cuda_runtime_version()
    assert version is not None, why


@needs_no_nvml
def test_a_cpu_cell_off_nvidia_hardware_has_no_nvidia_key(tmp_path):
    assert NvidiaWatch.for_cell("cpu", str(tmp_path)) is None
    assert cell_report(None, str(tmp_path)) is None


@needs_no_nvml
def test_a_cuda_cell_on_a_jetson_samples_the_window(tmp_path, monkeypatch):
    root = str(jetson_tree(tmp_path / "root", load_permille=870))
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin")))
    watch = NvidiaWatch.for_cell("tensorrt", root)
    with watch.window():
        pass
    report = cell_report(watch, root)
    assert report["source"] == "jetson"
    assert report["gpu"] == "Orin (nvgpu)" and report["compute_capability"] == "8.7"
    assert (report["power_mode"], report["power_mode_id"]) == ("MAXN", 0)
    assert report["clocks_locked"] is True
    assert report["samples"] >= 2  # the window's start and its end
    assert report["load_pct"] == {"min": 87.0, "mean": 87.0, "max": 87.0}
    assert report["sm_clock_mhz"]["max"] == 624.8
    assert report["unavailable"]["nvml"] == nvidia_info.NO_NVML
    assert "debugfs needs root" in report["unavailable"]["gpu_memory_mb"]


@needs_no_nvml
def test_a_cpu_cell_on_a_jetson_still_records_its_power_mode(tmp_path, monkeypatch):
    root = str(jetson_tree(tmp_path / "root"))
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin", mode="7W", mode_id=3)))
    report = cell_report(NvidiaWatch.for_cell("cpu", root), root)
    assert report["power_mode"] == "7W" and report["samples"] == 0


def _process_list(struct, entries):
    infos = (struct * len(entries))()
    for info, (pid, used) in zip(infos, entries, strict=True):
        info.pid, info.usedGpuMemory = pid, used
    return infos


@pytest.mark.parametrize("struct", [nvidia_info._ProcessV2, nvidia_info._ProcessV1])
def test_process_memory_is_read_for_this_pid_only(struct):
    infos = _process_list(struct, [(7, 64 * nvidia_info.MIB), (42, 1536 * nvidia_info.MIB)])
    assert nvidia_info.process_memory_mb(infos, 42, "v3") == (1536.0, "v3")


@pytest.mark.parametrize("struct", [nvidia_info._ProcessV2, nvidia_info._ProcessV1])
def test_process_memory_nvml_cannot_tell_is_not_available(struct):
    """NVML_VALUE_NOT_AVAILABLE read as bytes would be about 1.8e13 MiB."""
    infos = _process_list(struct, [(42, nvidia_info.NVML_VALUE_NOT_AVAILABLE)])
    assert infos[0].usedGpuMemory == 2**64 - 1  # the field holds the sentinel as NVML writes it
    used, why = nvidia_info.process_memory_mb(infos, 42, "nvmlDeviceGetComputeRunningProcesses_v3")
    assert used is None
    assert why == (
        "nvmlDeviceGetComputeRunningProcesses_v3: process 42's GPU memory is not available "
        "(NVML_VALUE_NOT_AVAILABLE)"
    )


def test_process_memory_of_a_pid_nvml_does_not_list_is_not_zero():
    """A runner in a container has its own PID; NVML lists the host's."""
    infos = _process_list(nvidia_info._ProcessV2, [(90001, 512 * nvidia_info.MIB)])
    used, why = nvidia_info.process_memory_mb(infos, 42, "v3")
    assert used is None
    assert why.startswith("v3 lists no process 42 on this GPU (of 1): not available")


def test_tensorrt_11_is_looked_for_first():
    names = nvidia_info.NVINFER_NAMES
    assert names[0] == "libnvinfer.so.11"
    assert (
        names.index("libnvinfer.so.11")
        < names.index("libnvinfer.so.10")
        < names.index("libnvinfer.so")
    )


def test_get_infer_lib_version_is_read_as_the_int32_it_returns(tmp_path):
    """A stand-in libnvinfer whose getInferLibVersion leaves the upper half of the 64-bit
    return register dirty, as an int32_t function may: only its low 32 bits are the answer
    (TensorRT 11.1.0 is 110100)."""
    library = shared_library(
        tmp_path / "libnvinfer.so.11",
        "long long getInferLibVersion(void) { return (0x5a5a5a5aLL << 32) | 110100; }\n",
    )
    function = nvidia_info.version_function(ctypes.CDLL(str(library)), "getInferLibVersion")
    assert function.restype is ctypes.c_int32
    assert nvidia_info.tensorrt_version([str(library)]) == ("11.1.0", "")
