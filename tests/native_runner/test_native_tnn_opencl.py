"""edgebench-native on TNN's OpenCL device, on this machine's first OpenCL device, which the test
build's TNN takes whatever its type (`--gpu-devices any`: TNN's own OpenCL runtime takes GPU-type
devices only). Every TNN OpenCL program enables half precision: on a device with cl_khr_fp16 the
cell runs, reports the device and gives the X86 device's outputs; on one without (pocl's CPU
device) it is unsupported, saying so, instead of TNN's crash. Without an OpenCL driver the cell
names the packages while CPU cells still run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fakes.native_builds import converted_conv, first_opencl_device_name, run_native

from edgebench.builds.native_runner import BuiltRunner
from edgebench.runners import protocol

NO_OPENCL = {"OCL_ICD_VENDORS": "/nonexistent", "OCL_ICD_FILENAMES": ""}


@pytest.fixture(scope="module")
def native_opencl_tnn(native_x86_tnn: BuiltRunner) -> BuiltRunner:
    probe = run_native(native_x86_tnn.path, "--probe")
    assert probe["frameworks"]["tnn"]["backends"] == ["cpu", "opencl"], probe["frameworks"]
    return native_x86_tnn


@pytest.fixture(scope="module")
def tnn_conv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_conv(tmp_path_factory.mktemp("conv"), "tnn", ".tnnproto")


def _spec(model: Path, backend: str, **changes: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": "tnn",
        "backend": backend,
        "threads": 1,
        "warmup": 1,
        "iterations": 3,
        "min_time_s": 0,
        "seed": 4,
    }
    spec.update(changes)
    return spec


def first_device_has_fp16() -> bool:
    """Whether clinfo lists cl_khr_fp16 among the first OpenCL device's extensions."""
    raw = subprocess.run(["clinfo", "--raw"], capture_output=True, text=True, timeout=60).stdout
    line = next((ln for ln in raw.splitlines() if "CL_DEVICE_EXTENSIONS " in ln), "")
    return "cl_khr_fp16" in line.split()


def test_tnn_on_opencl_runs_where_the_device_has_half_precision(
    native_opencl_tnn: BuiltRunner, tnn_conv: Path, tmp_path: Path
) -> None:
    device = first_opencl_device_name()
    gpu = run_native(
        native_opencl_tnn.path, _spec(tnn_conv, "opencl", save_outputs=str(tmp_path / "gpu.npz"))
    )
    if not first_device_has_fp16():
        assert (gpu["status"], gpu["error"]["kind"]) == ("unsupported", "unsupported")
        assert f"(cl_khr_fp16), which {device} lacks" in gpu["error"]["message"]
        return
    assert gpu["status"] == "ok", gpu["error"]
    report = gpu["accelerator"]
    assert (report["api"], report["device"]) == ("OpenCL", device)
    assert report["precision"] == "fp32" and report["api_version"]
    cpu = run_native(
        native_opencl_tnn.path, _spec(tnn_conv, "cpu", save_outputs=str(tmp_path / "cpu.npz"))
    )
    assert cpu["status"] == "ok", cpu["error"]
    with np.load(tmp_path / "gpu.npz") as ours, np.load(tmp_path / "cpu.npz") as theirs:
        np.testing.assert_allclose(ours["output_0"], theirs["output_0"], rtol=1e-4, atol=1e-4)


def test_without_an_opencl_driver_the_cell_names_the_packages(
    native_opencl_tnn: BuiltRunner, tnn_conv: Path
) -> None:
    env = {**os.environ, **NO_OPENCL}
    result = run_native(native_opencl_tnn.path, _spec(tnn_conv, "opencl"), env=env)
    assert result["status"] == "unsupported", result["error"]
    assert "pocl-opencl-icd" in result["error"]["message"]
    assert run_native(native_opencl_tnn.path, _spec(tnn_conv, "cpu"), env=env)["status"] == "ok"
