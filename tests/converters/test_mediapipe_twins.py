"""The ONNX twins of the two MediaPipe models (tests/data/mediapipe, read by edgebench's .tflite
reader) through every converter: each artifact runs in its own framework and passes
edgebench's fp32 output check against ONNX Runtime on the twin, which itself matches LiteRT
on the original (test_tflite_import.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
from fakes.tflite_runs import run_onnx
from fakes.toolchains import converter_or_skip

pytest.importorskip(
    "ai_edge_litert", reason="the .tflite schema is missing: pip install 'edgebench[tflite]'"
)
pytest.importorskip("onnxruntime", reason="pip install 'edgebench[onnxruntime]'")

from edgebench.converters import ConversionOptions, get_converter
from edgebench.converters.tflite_import import ImportReport, tflite_to_onnx
from edgebench.frameworks import find_framework
from edgebench.measure.output_check import compare_arrays

MEDIAPIPE = Path(__file__).resolve().parents[1] / "data" / "mediapipe"
MODELS = ("face_detection_short_range", "face_landmark")
FRAMEWORKS = ("tflite", "mnn", "openvino", "ncnn")


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> dict[str, tuple[Path, ImportReport, dict, dict]]:
    """Per model: the twin, its report, the feeds and ONNX Runtime's outputs by name."""
    result = {}
    for model in MODELS:
        folder = tmp_path_factory.mktemp(model)
        report = tflite_to_onnx(MEDIAPIPE / f"{model}.tflite", folder / "twin.onnx")
        (image,) = report.inputs
        feeds = {image.name: np.random.default_rng(1).uniform(-1, 1, image.shape)}
        feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
        outputs = run_onnx(folder / "twin.onnx", feeds)
        reference = {t.name: out for t, out in zip(report.outputs, outputs, strict=True)}
        result[model] = (folder / "twin.onnx", report, feeds, reference)
    return result


def check(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray], label: str) -> None:
    assert set(outputs) == set(reference), label
    for name, want in reference.items():
        got = np.asarray(outputs[name]).reshape(want.shape)
        result = compare_arrays(name, name, got, want)
        # The landmark model's face score is one number: "near-constant" by definition.
        assert result.degenerate is None or want.size == 1, (label, name, result.degenerate)
        assert result.passed, (label, name, result.criterion, result.max_abs_diff)


@pytest.mark.parametrize("model", MODELS)
def test_tnn_writer_on_the_twin(twins, tmp_path: Path, model: str) -> None:
    from fakes.tnn_checking.reader import read_model
    from fakes.tnn_checking.reference import run_model

    twin, _report, feeds, reference = twins[model]
    files = get_converter("tnn").convert(twin, tmp_path, ConversionOptions())
    tnn = read_model(tmp_path / files[0], tmp_path / files[1])
    outputs = run_model(tnn, feeds)
    check({name: outputs[name] for name in tnn.outputs}, reference, f"tnn {model}")


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("model", MODELS)
def test_twin_converts_and_passes_the_check(
    twins, tmp_path: Path, framework: str, model: str
) -> None:
    converter = converter_or_skip(framework)
    twin, _report, feeds, reference = twins[model]
    files = converter.convert(twin, tmp_path, ConversionOptions())
    backend_name = find_framework(framework).backend  # type: ignore[union-attr]
    backend_module = importlib.import_module(f"edgebench.runners.backends.{backend_name}")
    backend = backend_module.BACKEND()
    backend.load(str(tmp_path / files[0]), 1, "fp32", {})
    try:
        outputs = dict(zip(backend.output_names(), backend.make_stream(feeds)(), strict=True))
    finally:
        backend.close()
    check(outputs, reference, f"{framework} {model}")
