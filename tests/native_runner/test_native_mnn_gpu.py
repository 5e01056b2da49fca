"""edgebench-native on MNN's Vulkan and OpenCL backends, for real on this machine's software
devices: Mesa's lavapipe for Vulkan (MNN's Vulkan runtime takes any device type) and pocl for
OpenCL, which the test build's MNN takes (`--gpu-devices any`: MNN's own OpenCL runtime takes
GPU-type devices only). Outputs are checked against ONNX Runtime through `edgebench run`; the
device is reported and marked software; without a driver the cell names the packages."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fakes.models import save_conv_model
from fakes.native_builds import (
    converted_conv,
    first_opencl_device_name,
    first_vulkan_device,
    host_native_lab,
    run_native,
)
from fakes.records import stored_records

from edgebench.builds.native_runner import BuiltRunner
from edgebench.runners import protocol

NO_VULKAN = {"VK_DRIVER_FILES": "/nonexistent.json", "VK_ICD_FILENAMES": "/nonexistent.json"}
NO_OPENCL = {"OCL_ICD_VENDORS": "/nonexistent", "OCL_ICD_FILENAMES": ""}


def vulkan_device_name() -> str:
    return str(first_vulkan_device()["name"])


@pytest.fixture(scope="module")
def native_gpu_mnn(native_x86_mnn: BuiltRunner) -> BuiltRunner:
    probe = run_native(native_x86_mnn.path, "--probe")
    backends = probe["frameworks"]["mnn"]["backends"]
    assert backends == ["cpu", "vulkan", "opencl"], backends
    return native_x86_mnn


@pytest.fixture(scope="module")
def mnn_conv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_conv(tmp_path_factory.mktemp("conv"), "mnn", ".mnn")


def _spec(model: Path, backend: str, **changes: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": "mnn",
        "backend": backend,
        "threads": 1,
        "warmup": 1,
        "iterations": 3,
        "min_time_s": 0,
        "seed": 3,
    }
    spec.update(changes)
    return spec


@pytest.mark.parametrize("backend", ["vulkan", "opencl"])
def test_mnn_gpu_cell_reports_the_device_and_matches_the_cpu(
    native_gpu_mnn: BuiltRunner, mnn_conv: Path, tmp_path: Path, backend: str
) -> None:
    device = vulkan_device_name() if backend == "vulkan" else first_opencl_device_name()
    gpu = run_native(
        native_gpu_mnn.path, _spec(mnn_conv, backend, save_outputs=str(tmp_path / "gpu.npz"))
    )
    assert gpu["status"] == "ok", gpu["error"]
    report = gpu["accelerator"]
    assert report["api"] == {"vulkan": "Vulkan", "opencl": "OpenCL"}[backend]
    assert report["device"] == device and report["device_type"] == "cpu" and report["software"]
    assert report["precision"] == "fp32" and report["driver"] and report["api_version"]
    assert gpu["cpu_ns_per_inference"] > 0 and len(gpu["samples_ns"]) == 3
    cpu = run_native(
        native_gpu_mnn.path, _spec(mnn_conv, "cpu", save_outputs=str(tmp_path / "cpu.npz"))
    )
    assert cpu["status"] == "ok", cpu["error"]
    with np.load(tmp_path / "gpu.npz") as ours, np.load(tmp_path / "cpu.npz") as theirs:
        np.testing.assert_allclose(ours["output_0"], theirs["output_0"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("backend", "env", "packages"),
    [("vulkan", NO_VULKAN, "mesa-vulkan-drivers libvulkan1"), ("opencl", NO_OPENCL, "pocl")],
)
def test_without_a_driver_the_cell_names_the_packages(
    native_gpu_mnn: BuiltRunner, mnn_conv: Path, backend: str, env: dict, packages: str
) -> None:
    result = run_native(native_gpu_mnn.path, _spec(mnn_conv, backend), env={**os.environ, **env})
    assert result["status"] == "unsupported", result["error"]
    assert packages in result["error"]["message"]
    cpu = run_native(native_gpu_mnn.path, _spec(mnn_conv, "cpu"), env={**os.environ, **env})
    assert cpu["status"] == "ok", cpu["error"]


def test_several_streams_on_a_gpu_are_refused(native_gpu_mnn: BuiltRunner, mnn_conv: Path) -> None:
    vulkan_device_name()
    result = run_native(native_gpu_mnn.path, _spec(mnn_conv, "vulkan", concurrency=2))
    assert result["status"] == "unsupported"
    assert "one stream per load" in result["error"]["message"]


def test_mnn_on_gpus_through_edgebench_run(
    run_cli, eb_env, tmp_path: Path, native_gpu_mnn: BuiltRunner
) -> None:
    """On the one-conv model: MNN's OpenCL load tunes its kernels on pocl, 80 s for MobileNetV2."""
    vulkan_device_name()
    first_opencl_device_name()
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])
    result = run_cli(
        [
            *("run", "--lab", str(host_native_lab(tmp_path)), "--devices", "host-native"),
            *("--models", str(model), "--frameworks", "mnn"),
            *("--backends", "cpu,vulkan,opencl"),
            *("--warmup", "1", "--iterations", "3", "--min-time", "0", "--rounds", "1"),
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["backend"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    assert set(records) == {"cpu", "vulkan", "opencl"}
    for backend, record in records.items():
        assert record["status"] == "ok", (backend, record.get("error"))
        assert record["output_check"]["passed"], (backend, record["output_check"])
        assert (record["accelerator"] is None) == (backend == "cpu")
    # pocl is a software device, never an emulated CPU: the record says which.
    assert records["opencl"]["accelerator"]["software"] and records["opencl"]["emulated"] is False
