"""edgebench-native on ncnn's Vulkan backend, for real on this machine's Vulkan device (Mesa's
lavapipe where there is no GPU): through `edgebench run` with outputs checked against ONNX
Runtime, the CPU cell in the same binary, the accelerator report and the device's own stage
split; without a Vulkan driver the cell names the packages and CPU cells still run."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from fakes.native_builds import converted_conv, first_vulkan_device, host_native_lab, run_native
from fakes.records import stored_records

from edgebench.builds.native_runner import BuiltRunner
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.runners import protocol

NO_DRIVER = {"VK_DRIVER_FILES": "/nonexistent.json", "VK_ICD_FILENAMES": "/nonexistent.json"}


@pytest.fixture(scope="module")
def vulkan_device() -> dict:
    return first_vulkan_device()


@pytest.fixture(scope="module")
def native_vulkan(native_x86: BuiltRunner) -> BuiltRunner:
    probe = run_native(native_x86.path, "--probe")
    if "vulkan" not in probe["frameworks"]["ncnn"]["backends"]:
        pytest.fail(f"{native_x86.path} was built without ncnn's Vulkan")
    return native_x86


@pytest.fixture(scope="module")
def ncnn_conv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_conv(tmp_path_factory.mktemp("conv"), "ncnn", ".param")


def _spec(model: Path, backend: str, **changes: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": "ncnn",
        "backend": backend,
        "threads": 1,
        "warmup": 1,
        "iterations": 4,
        "min_time_s": 0,
        "seed": 5,
    }
    spec.update(changes)
    return spec


def test_mobilenet_on_vulkan_through_edgebench_run(
    run_cli, eb_env, tmp_path: Path, native_vulkan: BuiltRunner, vulkan_device: dict
) -> None:
    lab = host_native_lab(tmp_path)
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "host-native"),
            *("--models", "mobilenetv2", "--frameworks", "ncnn", "--backends", "cpu,vulkan"),
            *("--warmup", "1", "--iterations", "3", "--min-time", "0", "--rounds", "1"),
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["backend"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    assert set(records) == {"cpu", "vulkan"}
    cpu, gpu = records["cpu"], records["vulkan"]
    assert cpu["status"] == "ok" and cpu["accelerator"] is None, cpu.get("error")
    assert gpu["status"] == "ok", gpu.get("error")
    for record in (cpu, gpu):
        assert record["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
        assert record["output_check"]["passed"], record["output_check"]
        assert record["output_check"]["reference"].startswith("onnxruntime")
        assert record["cpu_ms_per_inf"] > 0
    accelerator = gpu["accelerator"]
    assert (accelerator["api"], accelerator["device"]) == ("Vulkan", vulkan_device["name"])
    assert accelerator["precision"] == "fp32" and accelerator["driver"]
    assert 0 < accelerator["delegated_ops"] <= accelerator["total_ops"]
    # lavapipe is a software device, never an emulated CPU: the record says which.
    assert gpu["emulated"] is False, gpu["emulation"]


def test_vulkan_cell_reports_the_device_and_splits_the_copies(
    native_vulkan: BuiltRunner, ncnn_conv: Path, vulkan_device: dict
) -> None:
    result = run_native(native_vulkan.path, _spec(ncnn_conv, "vulkan", profile_ops=1))
    assert result["status"] == "ok", result["error"]
    accelerator = result["accelerator"]
    assert set(accelerator) == {f.name for f in dataclasses.fields(AcceleratorRun)}
    device = vulkan_device
    assert (accelerator["device"], accelerator["device_type"]) == (device["name"], device["type"])
    assert accelerator["api_version"] == device["api_version"]
    assert accelerator["driver"] == (device["driver_info"] or device["driver_version"])
    if device["type"] == "cpu":
        assert accelerator["software"]
    if device["memory_budget"]:
        assert accelerator["device_memory_mb"] is not None
    else:
        assert "no VK_EXT_memory_budget" in accelerator["device_memory_unavailable"]
    stages = result["stages"]
    assert "record_upload" in stages["boundaries"]["copy_in"]
    assert "record_download" in stages["boundaries"]["copy_out"]
    for stage in ("copy_in", "compute", "copy_out"):
        assert len(stages["samples_ns"][stage]) == 4
        assert all(ns > 0 for ns in stages["samples_ns"][stage])
    assert result["cpu_ns_per_inference"] > 0
    assert "CPU backend only" in result["op_profile"]["unavailable"]

    cpu = run_native(native_vulkan.path, _spec(ncnn_conv, "cpu"))
    assert cpu["status"] == "ok" and "accelerator" not in cpu
    assert cpu["outputs"][0]["shape"] == result["outputs"][0]["shape"]


def test_without_a_driver_vulkan_is_unsupported_and_cpu_still_runs(
    native_vulkan: BuiltRunner, ncnn_conv: Path
) -> None:
    env = {**os.environ, **NO_DRIVER}
    gpu = run_native(native_vulkan.path, _spec(ncnn_conv, "vulkan"), env=env)
    assert (gpu["status"], gpu["error"]["kind"]) == ("unsupported", "unsupported"), gpu["error"]
    assert "mesa-vulkan-drivers libvulkan1" in gpu["error"]["message"]
    assert gpu["samples_ns"] == []
    cpu = run_native(native_vulkan.path, _spec(ncnn_conv, "cpu"), env=env)
    assert cpu["status"] == "ok", cpu["error"]


def test_a_backend_the_build_lacks_is_refused(native_vulkan: BuiltRunner, ncnn_conv: Path) -> None:
    result = run_native(native_vulkan.path, _spec(ncnn_conv, "opencl"))
    assert result["status"] == "unsupported", result["error"]
    assert "runs ncnn on cpu, vulkan" in result["error"]["message"]
    int8 = run_native(native_vulkan.path, _spec(ncnn_conv, "vulkan", precision="int8"))
    assert int8["status"] == "unsupported" and "no int8 Vulkan path" in int8["error"]["message"]


def test_probe_lists_the_backends(native_vulkan: BuiltRunner) -> None:
    probe = run_native(native_vulkan.path, "--probe")
    assert probe["schema"] == protocol.PROBE_SCHEMA
    assert probe["frameworks"]["ncnn"]["backends"] == ["cpu", "vulkan"]
    assert json.dumps(probe)  # plain JSON throughout
