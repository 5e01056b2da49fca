"""TensorRT for real, through the runner process as a device runs it: mobilenetv2's engine
against ONNX Runtime on the CPU, the engine cache (miss, hit, off), fp16, CUDA Graphs on and
off, shared and separate instances, a dynamic-shape engine. Needs an NVIDIA GPU with its driver
and the tensorrt package; every test skips without them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.dynamic_models import INPUT, LARGE_SHAPE, SMALL_SHAPE, dynamic_classifier
from fakes.runner_process import run_runner

from edgebench.converters import ConversionOptions, get_converter
from edgebench.models.cache import builtin_model_path
from edgebench.runners import protocol
from edgebench.runners.cuda_runtime import CudaUnavailable, open_cuda

NEEDS = "needs an NVIDIA GPU and the tensorrt package (pip install 'edgebench[tensorrt]')"
#: fp32 with TF32 off: the same sums in another order; mobilenetv2's logits are ~1-10.
FP32_CLOSE = {"rtol": 1e-3, "atol": 1e-3}

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def gpu() -> None:
    if importlib.util.find_spec("tensorrt") is None:
        pytest.skip(NEEDS)
    try:
        open_cuda()
    except CudaUnavailable as exc:
        pytest.skip(f"{NEEDS}: {exc}")


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builtin_model_path("mobilenetv2", tmp_path_factory.mktemp("models"))


def spec_for(model: Path, framework: str, backend: str, **extra: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": framework,
        "backend": backend,
        "warmup": 3,
        "iterations": 20,
        "min_time_s": 0,
        "stages": True,
    }
    spec.update(extra)
    return spec


def outputs_of(path: Path) -> list[np.ndarray]:
    with np.load(path) as saved:
        return [saved[f"output_{i}"] for i in range(len(saved["__names__"]))]


def run_ok(spec: dict) -> dict:
    result = run_runner(spec, timeout=900)
    assert result["status"] == "ok", result.get("error")
    return result


@pytest.fixture(scope="module")
def reference(mobilenet: Path, tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    """ONNX Runtime's outputs on the CPU for the same seeded inputs."""
    saved = tmp_path_factory.mktemp("ort") / "ort.npz"
    run_ok(spec_for(mobilenet, "onnxruntime", "cpu", save_outputs=str(saved)))
    return outputs_of(saved)


def test_an_engine_matches_onnxruntime_and_is_cached(
    mobilenet: Path, reference: list[np.ndarray], tmp_path: Path
) -> None:
    options = {"engine_cache_dir": str(tmp_path / "engines")}
    first = run_ok(
        spec_for(
            mobilenet, "tensorrt", "cuda", options=options, save_outputs=str(tmp_path / "a.npz")
        )
    )
    report = first["accelerator"]
    assert report["api"] == "CUDA" and report["device_type"] in ("discrete", "integrated")
    assert report["engine_cache"] == "miss" and report["engine_build_ms"] > 0
    assert report["precision"].startswith("fp32") and report["cuda_graph"] is False
    assert report["placement"]["GPU"] > 0
    for got, expected in zip(outputs_of(tmp_path / "a.npz"), reference, strict=True):
        np.testing.assert_allclose(got, expected, **FP32_CLOSE)
    stages = first["stages"]
    assert "execute_async_v3" in stages["boundaries"]["compute"]
    assert "CUDA-event" in report["stages_note"]
    assert all(v > 0 for v in stages["samples_ns"]["compute"])
    # Device times of the stages fit inside the host's sample of the same call.
    for index, sample in enumerate(first["samples_ns"]):
        parts = sum(stages["samples_ns"][s][index] for s in ("copy_in", "compute", "copy_out"))
        assert parts <= sample

    again = run_ok(spec_for(mobilenet, "tensorrt", "cuda", options=options))
    assert again["accelerator"]["engine_cache"] == "hit"
    assert again["accelerator"]["engine_build_ms"] == report["engine_build_ms"]
    assert again["load_ns"] < first["load_ns"]
    assert len(list((tmp_path / "engines").glob("*.engine"))) == 1
    assert len(list((tmp_path / "engines").glob("timing-*.cache"))) == 1

    off = run_ok(spec_for(mobilenet, "tensorrt", "cuda", options={"engine_cache": False}))
    assert off["accelerator"]["engine_cache"] == "off"


def test_cuda_graphs_replay_the_same_inference(
    mobilenet: Path, reference: list[np.ndarray], tmp_path: Path
) -> None:
    options = {"engine_cache_dir": str(tmp_path), "cuda_graph": True}
    result = run_ok(
        spec_for(
            mobilenet, "tensorrt", "cuda", options=options, save_outputs=str(tmp_path / "g.npz")
        )
    )
    assert result["accelerator"]["cuda_graph"] is True
    for got, expected in zip(outputs_of(tmp_path / "g.npz"), reference, strict=True):
        np.testing.assert_allclose(got, expected, **FP32_CLOSE)


def test_fp16_runs_the_models_own_half_precision(
    mobilenet: Path, reference: list[np.ndarray], tmp_path: Path
) -> None:
    converter = get_converter("onnx-fp16")
    reason = converter.unavailable_reason()
    if reason:
        pytest.skip(reason)
    converter.convert(mobilenet, tmp_path, ConversionOptions())
    half = next(tmp_path.glob("*.onnx"))
    result = run_ok(
        spec_for(
            half,
            "tensorrt",
            "cuda",
            precision="fp16",
            save_outputs=str(tmp_path / "h.npz"),
            options={"engine_cache_dir": str(tmp_path / "engines")},
        )
    )
    assert result["accelerator"]["precision"] == "fp16"
    got, expected = outputs_of(tmp_path / "h.npz")[0], reference[0]
    assert np.argmax(got) == np.argmax(expected)
    np.testing.assert_allclose(got, expected, rtol=5e-2, atol=5e-2)


def test_shared_instances_hold_one_engine_and_separate_ones_each_their_own(
    mobilenet: Path, tmp_path: Path
) -> None:
    growth = {}
    for mode in ("shared", "separate"):
        result = run_ok(
            spec_for(
                mobilenet,
                "tensorrt",
                "cuda",
                instances=3,
                concurrency=3,
                instance_mode=mode,
                options={"engine_cache_dir": str(tmp_path)},
            )
        )
        instances = result["instances"]
        assert instances["ran"] == 3
        memory = instances["device_memory_after_load_mb"]
        assert len(memory) == 3 and all(m is not None for m in memory)
        growth[mode] = memory[-1] - memory[0]
    # N contexts on one engine share its weights; N engines hold N copies.
    assert growth["shared"] <= growth["separate"]


def test_a_shape_profile_builds_one_dynamic_engine_for_a_shape_change(tmp_path: Path) -> None:

    model = tmp_path / "dynamic.onnx"
    onnx.save(dynamic_classifier(), str(model))
    profile = {INPUT: {"min": SMALL_SHAPE, "opt": LARGE_SHAPE, "max": LARGE_SHAPE}}
    result = run_ok(
        spec_for(
            model,
            "tensorrt",
            "cuda",
            inputs=[{"name": INPUT, "shape": LARGE_SHAPE}],
            shape_change_from=[{"name": INPUT, "shape": SMALL_SHAPE}],
            options={"shape_profile": profile, "engine_cache_dir": str(tmp_path)},
        )
    )
    assert result["shape_change"]["first_ns"] > 0
    assert len(list(tmp_path.glob("*.engine"))) == 1
