"""The Python runner on accelerator backends, run as a device runs it: ncnn on Vulkan for real
(lavapipe, Mesa's software Vulkan, where there is no GPU), a device-less machine, MNN's wheel
falling back to the CPU, LiteRT, OpenVINO and ONNX Runtime without their devices, and pairs the
runner cannot select. A small classifier keeps each cell to milliseconds on the software
device."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.dynamic_models import INPUT, LARGE_SHAPE, SMALL_SHAPE, dynamic_classifier
from fakes.gpu_tools import driver_manifest
from fakes.quant_models import small_classifier
from fakes.runner_process import run_runner
from fakes.toolchains import converter_or_skip

from edgebench.compute_backends import ACCELERATORS as REGISTRY
from edgebench.converters import ConversionOptions
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.runners import protocol
from edgebench.runners.backends import discover
from edgebench.runners.backends.accelerator import accelerator_report
from edgebench.runners.timing import WindowLimits, run_window

VULKAN_PACKAGES = "apt-get install mesa-vulkan-drivers libvulkan1"
#: fp32 on lavapipe and on the CPU sum in different orders; the logits are ~1-10.
CLOSE = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("classifier") / "classifier.onnx"
    onnx.save(small_classifier(), str(path))
    return path


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The classifier with free height and width."""
    path = tmp_path_factory.mktemp("dynamic") / "dynamic.onnx"
    onnx.save(dynamic_classifier(), str(path))
    return path


def converted(onnx_path: Path, fmt: str, options: ConversionOptions | None = None) -> Path:
    """``onnx_path`` converted by edgebench's converter for ``fmt`` (next to it)."""
    converter = converter_or_skip(fmt)
    out = onnx_path.parent / fmt
    if not out.is_dir():
        out.mkdir()
        converter.convert(onnx_path, out, options or ConversionOptions())
    return next(p for p in out.iterdir() if p.suffix in (".param", ".mnn", ".tflite", ".xml"))


def spec_for(model: Path, framework: str, backend: str, **extra: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": framework,
        "backend": backend,
        "threads": 1,
        "warmup": 1,
        "iterations": 5,
        "min_time_s": 0,
    }
    spec.update(extra)
    return spec


@pytest.fixture(scope="module")
def vulkan_device() -> str:
    """The name ncnn gives the Vulkan device this machine has (skips without one)."""
    ncnn = pytest.importorskip("ncnn")
    if ncnn.get_gpu_count() == 0:
        pytest.skip(f"no Vulkan device for ncnn ({VULKAN_PACKAGES})")
    return str(ncnn.get_gpu_info(ncnn.get_default_gpu_index()).device_name())


def test_ncnn_on_vulkan_matches_its_cpu_cell_and_reports_the_device(
    classifier: Path, vulkan_device: str, tmp_path: Path
) -> None:
    model = converted(classifier, "ncnn")
    cells = {}
    for backend in ("cpu", "vulkan"):
        saved = tmp_path / f"{backend}.npz"
        spec = spec_for(model, "ncnn", backend, save_outputs=str(saved), profile_ops=1)
        result = run_runner(spec)
        assert result["status"] == "ok", result["error"]
        assert isinstance(result["cpu_ns_per_inference"], int)
        assert result["cpu_ns_per_inference"] > 0
        cells[backend] = (result, np.load(saved))
    (cpu, cpu_out), (vulkan, vulkan_out) = cells["cpu"], cells["vulkan"]
    assert list(cpu_out["__names__"]) == list(vulkan_out["__names__"])
    outputs = [name for name in cpu_out if name != "__names__"]
    assert outputs
    for name in outputs:
        np.testing.assert_allclose(vulkan_out[name], cpu_out[name], **CLOSE)

    assert "accelerator" not in cpu
    report = vulkan["accelerator"]
    assert set(report) == {f.name for f in dataclasses.fields(AcceleratorRun)}
    assert report["api"] == "Vulkan" and report["device"] == vulkan_device
    if report["device_type"] == "cpu" or "llvmpipe" in vulkan_device:
        assert report["software"] is True
    assert report["precision"] == "fp32"  # the fp32 cell keeps ncnn's fp16 options off
    assert 0 < report["delegated_ops"] <= report["total_ops"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", report["api_version"]) and report["driver"]
    # A number where the driver counts the process's device memory, else why not: never both.
    assert (report["device_memory_mb"] is None) == bool(report["device_memory_unavailable"])
    assert "download" in report["stages_note"]
    assert "download" in vulkan["stages"]["boundaries"]["compute"]
    assert "CPU backend only" in vulkan["op_profile"]["unavailable"]


def test_ncnn_on_vulkan_serves_instances_and_a_shape_change(
    classifier: Path, dynamic: Path, vulkan_device: str
) -> None:
    model = converted(classifier, "ncnn")
    for mode in ("separate", "shared"):
        spec = spec_for(model, "ncnn", "vulkan", instances=2, concurrency=2, instance_mode=mode)
        result = run_runner(spec)
        assert result["status"] == "ok", result["error"]
        assert result["instances"]["ran"] == 2 and result["accelerator"]["api"] == "Vulkan"
    options = ConversionOptions(dynamic=True, input_shapes={INPUT: SMALL_SHAPE})
    free = converted(dynamic, "ncnn", options)
    spec = spec_for(
        free,
        "ncnn",
        "vulkan",
        inputs=[{"name": INPUT, "shape": LARGE_SHAPE}],
        shape_change_from=[{"name": INPUT, "shape": SMALL_SHAPE}],
    )
    result = run_runner(spec)
    assert result["status"] == "ok", result["error"]
    assert result["shape_change"]["first_ns"] > 0
    assert result["inputs"][0]["shape"] == LARGE_SHAPE


def test_ncnn_on_vulkan_without_a_device_is_unsupported_naming_the_packages(
    classifier: Path, tmp_path: Path
) -> None:
    pytest.importorskip("ncnn")
    model = converted(classifier, "ncnn")
    # The Vulkan loader reads only the drivers these name: one found nowhere, so none.
    manifest = driver_manifest(tmp_path / "no-driver.json")
    env = dict(os.environ, VK_ICD_FILENAMES=str(manifest), VK_DRIVER_FILES=str(manifest))
    result = run_runner(spec_for(model, "ncnn", "vulkan"), env=env)
    assert result["status"] == "unsupported"
    assert result["error"]["kind"] == "unsupported"
    assert "mesa-vulkan-drivers libvulkan1" in result["error"]["message"]
    assert result["samples_ns"] == [] and "accelerator" not in result


def test_mnn_wheel_on_opencl_is_a_fallback_with_mnns_words(classifier: Path) -> None:
    pytest.importorskip("MNN")
    model = converted(classifier, "mnn")
    result = run_runner(spec_for(model, "mnn", "opencl"))
    if result["status"] == "ok":
        pytest.skip("this MNN build has OpenCL compiled in and found a device")
    assert result["status"] == "unsupported"
    assert result["error"]["kind"] == "fallback"
    message = result["error"]["message"]
    assert message.startswith("mnn asked for opencl and ran on the CPU: ")
    assert "type=3" in message  # MNN's own line names the forward type it could not find
    assert result["samples_ns"] == [] and result["first_inference_ns"] is None


def test_tflite_gpu_without_an_adapter_says_litert_s_reason(classifier: Path) -> None:
    pytest.importorskip("ai_edge_litert")
    model = converted(classifier, "tflite")
    result = run_runner(spec_for(model, "tflite", "gpu"))
    if result["status"] == "ok":
        assert result["accelerator"]["api"] == "LiteRT GPU"
        return
    assert result["error"]["kind"] == "unsupported", result["error"]
    message = result["error"]["message"]
    assert message.startswith("LiteRT could not run the model on a GPU: ")
    assert "ERROR" not in message and ".cc:" not in message  # the words, not the log line
    assert result["samples_ns"] == []


@pytest.mark.parametrize(
    ("framework", "fmt", "backend", "needs"),
    [
        ("openvino", "openvino", "gpu", "intel-opencl-icd"),
        ("openvino", "openvino", "npu", "Intel NPU"),
        ("onnxruntime", None, "nnapi", "NNAPI execution provider"),
        ("onnxruntime", None, "qnn", "onnxruntime-qnn"),
    ],
)
def test_a_missing_device_or_provider_is_unsupported_naming_what_provides_it(
    classifier: Path, framework: str, fmt: str | None, backend: str, needs: str
) -> None:
    pytest.importorskip(framework)
    model = converted(classifier, fmt) if fmt else classifier
    result = run_runner(spec_for(model, framework, backend))
    if result["status"] == "ok":
        pytest.skip(f"this machine has {framework}'s {backend}")
    assert result["error"]["kind"] == "unsupported", result["error"]
    assert needs in result["error"]["message"]


@pytest.mark.parametrize(("framework", "backend"), [("ncnn", "cuda"), ("tflite", "nnapi")])
def test_a_backend_the_binding_cannot_select_is_refused(
    classifier: Path, framework: str, backend: str
) -> None:
    result = run_runner(spec_for(classifier, framework, backend))
    assert result["status"] == "unsupported"
    assert result["error"]["kind"] == "unsupported"
    expected = f"the Python runner cannot run {framework} on {backend}: "
    assert result["error"]["message"].startswith(expected)


def test_backend_modules_select_the_registrys_python_accelerators() -> None:
    found, broken = discover()
    assert broken == {}
    for framework, declared in found.items():
        registry = {b.name for b in REGISTRY if b.framework == framework and b.python}
        assert set(declared.accelerators) == registry, framework


def test_the_accelerator_report_has_the_records_fields() -> None:
    report = accelerator_report("Vulkan", device="llvmpipe", software=True)
    assert set(report) == {f.name for f in dataclasses.fields(AcceleratorRun)}
    assert AcceleratorRun(**report).describe().startswith("Vulkan, llvmpipe (software)")
    with pytest.raises(ValueError, match="latency_ms"):
        accelerator_report("Vulkan", latency_ms=1.0)


def spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


@pytest.mark.alone
def test_cpu_time_per_inference_counts_the_cpu_not_the_wait() -> None:
    limits = WindowLimits(iterations=10, min_time_ns=0, max_iterations=10, max_time_ns=10**10)
    idle = threading.Event()
    busy = run_window([lambda: spin(0.004)], limits).timing
    waiting = run_window([lambda: idle.wait(0.004)], limits).timing
    for timing in (busy, waiting):
        assert isinstance(timing["cpu_ns_per_inference"], int)
    # A spinning inference costs about its latency in CPU time; a waiting one far less.
    assert busy["cpu_ns_per_inference"] >= 0.5 * min(busy["samples_ns"])
    assert busy["cpu_ns_per_inference"] <= 1.5 * max(busy["samples_ns"])
    assert waiting["cpu_ns_per_inference"] < 0.25 * min(waiting["samples_ns"])
    two = run_window([lambda: spin(0.002)] * 2, limits).timing
    assert two["cpu_ns_per_inference"] > 0 and len(two["samples_ns"]) >= 10
