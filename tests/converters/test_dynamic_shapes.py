"""Dynamic-shape artifacts (``ConversionOptions.dynamic``): converted once, resized by the
runner at run time, for OpenVINO, MNN and ncnn; the other formats refuse.

Every run goes through the real runner (``runners/runner.py`` ``execute``, in this process
so the frameworks are imported once) and is compared with ONNX Runtime on the same seeded
inputs. ``reshape_head`` is the hard case: its Reshape targets are constants for 64x64, so
``relax_inputs`` has to generalise them and a fixed artifact cannot take another size.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
import pytest
from fakes.dynamic_models import (
    HEAD_SHAPE,
    INPUT,
    LARGE_SHAPE,
    SMALL_SHAPE,
    dynamic_classifier,
    reshape_head,
)
from fakes.toolchains import converter_or_skip

from edgebench.converters import ConversionError, ConversionOptions, Converter, get_converter
from edgebench.models.dynamic import relax_inputs
from edgebench.runners.backend_loader import load_backend
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.io_map import TensorMap
from edgebench.runners.protocol.tensors import make_inputs

ort = pytest.importorskip("onnxruntime")

#: format -> the Python module its runner backend needs.
RESIZABLE = {"openvino": "openvino", "mnn": "MNN", "ncnn": "ncnn"}
FORMATS = [
    pytest.param("openvino"),
    pytest.param("mnn"),
    pytest.param("ncnn", marks=pytest.mark.toolchains),  # pnnx lives in the ncnn toolchain
]
#: Whether the dynamic artifact takes another batch: MNNConvert writes a symbolic batch as 1,
#: and ncnn's Mats have no batch axis.
TAKES_BATCH = {"openvino": True, "mnn": False, "ncnn": False}
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    """The device-side runner (its package, as the host imports it)."""
    return importlib.import_module("edgebench.runners.runner")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dynamic-models")
    head = reshape_head()
    built = {
        "classifier": dynamic_classifier(),
        "head": head,
        "head-relaxed": relax_inputs(head, {INPUT: [0, 2, 3]}),
    }
    paths = {}
    for name, model in built.items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(model, str(paths[name]))
    return paths


def _converter(fmt: str) -> Converter:
    converter = converter_or_skip(fmt)
    pytest.importorskip(RESIZABLE[fmt])
    return converter


def _convert(fmt: str, source: Path, out: Path, **options: Any) -> Path:
    out.mkdir()
    files = _converter(fmt).convert(source, out, ConversionOptions(**options))
    return out / files[0]


def _run(
    runner: ModuleType, fmt: str, artifact: Path, shape: list[int] | None
) -> tuple[dict, np.ndarray | None]:
    """The runner's result and the first output, with the inputs at ``shape`` (None: the
    shape the artifact declares)."""
    saved = artifact.parent / f"outputs-{'x'.join(map(str, shape or []))}.npz"
    spec: dict[str, Any] = {
        "schema": "edgebench.spec/1",
        "model": str(artifact),
        "framework": fmt,
        "warmup": 0,
        "iterations": 1,
        "min_time_s": 0,
        "save_outputs": str(saved),
    }
    if shape is not None:
        spec["inputs"] = [{"name": INPUT, "shape": shape, "dtype": "float32"}]
    result = runner.execute(spec)
    if result["status"] != "ok":
        return result, None
    with np.load(saved) as data:
        return result, data["output_0"]


def _reference(model: Path, shape: list[int]) -> np.ndarray:
    feeds = make_inputs([InputSpec(INPUT, shape, "float32")], 0)
    return ort.InferenceSession(str(model)).run(None, feeds)[0]


def _assert_matches(result: dict, output: np.ndarray | None, reference: np.ndarray) -> None:
    assert result["status"] == "ok", result["error"]
    assert output is not None and output.shape == reference.shape
    np.testing.assert_allclose(output, reference, rtol=TOLERANCE, atol=TOLERANCE)


# -- dynamic artifacts ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["classifier", "head-relaxed"])
def test_one_dynamic_artifact_runs_at_two_shapes(
    runner: ModuleType, models: dict[str, Path], tmp_path: Path, fmt: str, name: str
) -> None:
    artifact = _convert(
        fmt, models[name], tmp_path / fmt, dynamic=True, input_shapes={INPUT: SMALL_SHAPE}
    )
    for shape in (SMALL_SHAPE, LARGE_SHAPE):
        result, output = _run(runner, fmt, artifact, shape)
        _assert_matches(result, output, _reference(models[name], shape))
        assert result["inputs"][0]["shape"] == shape

    # It declares its free dims as such: the runner wants a shape for them.
    undeclared, _ = _run(runner, fmt, artifact, None)
    assert undeclared["error"]["kind"] == "bad_spec"
    assert "dynamic dimensions" in undeclared["error"]["message"]

    batch = [2, *SMALL_SHAPE[1:]]
    result, output = _run(runner, fmt, artifact, batch)
    if TAKES_BATCH[fmt]:
        _assert_matches(result, output, _reference(models[name], batch))
    else:
        assert result["status"] != "ok"


@pytest.mark.toolchains
def test_the_ncnn_io_map_of_a_dynamic_artifact_leaves_free_dims_open(
    models: dict[str, Path], tmp_path: Path
) -> None:
    _convert(
        "ncnn",
        models["head-relaxed"],
        tmp_path / "ncnn",
        dynamic=True,
        input_shapes={INPUT: HEAD_SHAPE},
    )
    io = json.loads((tmp_path / "ncnn" / "io.json").read_text())
    (entry,) = io["inputs"]
    assert (entry["onnx_shape"], entry["shape"]) == ([1, 3, -1, -1], [3, -1, -1])
    (entry,) = io["outputs"]
    assert (entry["onnx_shape"], entry["shape"]) == ([1, -1, 5], [-1, 5])
    param = (tmp_path / "ncnn" / "model.param").read_text()
    assert "6=" in param  # pnnx wrote the Reshape targets as shape expressions


def test_the_io_map_fills_free_dims_from_the_value() -> None:
    one_free = TensorMap({"onnx_shape": [1, -1, 5], "shape": [-1, 5]})
    assert one_free.to_onnx(np.zeros((7, 5))).shape == (1, 7, 5)
    several = TensorMap({"onnx_shape": [1, 4, -1, -1], "shape": [4, -1, -1]})
    assert several.to_onnx(np.zeros((4, 3, 2))).shape == (1, 4, 3, 2)
    assert several.to_artifact(np.zeros((1, 4, 3, 2))).shape == (1, 4, 3, 2)
    fixed = TensorMap({"onnx_shape": [1, 10], "shape": [10]})
    assert fixed.to_onnx(np.zeros(10)).shape == (1, 10)
    assert fixed.to_onnx(np.zeros(12)).shape == (12,)  # does not fit: left alone


# -- fixed artifacts --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fixed_artifact_of_a_symbolic_model_is_fixed_at_its_shape(
    runner: ModuleType, models: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    artifact = _convert(
        fmt, models["classifier"], tmp_path / fmt, input_shapes={INPUT: SMALL_SHAPE}
    )
    result, output = _run(runner, fmt, artifact, None)  # the shape it declares
    _assert_matches(result, output, _reference(models["classifier"], SMALL_SHAPE))
    assert result["inputs"][0]["shape"] == SMALL_SHAPE


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fixed_artifact_at_another_shape_is_never_silently_wrong(
    runner: ModuleType, models: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    """The runner refuses the shape. Without that check, the frameworks differ: OpenVINO
    raises in ``set_tensor``, MNN's backend raises on ``runSession``'s error code (its resize
    fails, yet ``resizeSession`` says it worked), and ncnn (the Reshape's constants) returns a
    wrong result with no error, here asserted on the backend alone."""
    artifact = _convert(fmt, models["head"], tmp_path / fmt, input_shapes={INPUT: HEAD_SHAPE})
    result, _ = _run(runner, fmt, artifact, LARGE_SHAPE)
    assert result["status"] != "ok"
    assert result["error"]["kind"] == "bad_spec"
    assert str(HEAD_SHAPE) in result["error"]["message"]

    backend = load_backend(fmt)
    backend.load(str(artifact), 1, "fp32", {"streams": 1})
    reference = _reference(models["head-relaxed"], LARGE_SHAPE)
    try:
        feeds = make_inputs([InputSpec(INPUT, LARGE_SHAPE, "float32")], 0)
        (output,) = backend.make_stream(feeds)()
    except Exception as exc:  # OpenVINO: the request refuses the tensor; MNN: error code 3
        assert fmt in ("openvino", "mnn"), exc
    else:
        assert fmt == "ncnn"
        assert np.asarray(output).shape != reference.shape
    finally:
        backend.close()


# -- refusals ---------------------------------------------------------------------------------


REFUSING = [("tflite", None), ("tflite", "onnx2tf"), ("tnn", None), ("onnx-qdq", None)]


@pytest.mark.parametrize(("fmt", "choice"), REFUSING)
def test_formats_without_dynamic_artifacts_refuse_with_their_reason(
    models: dict[str, Path], tmp_path: Path, fmt: str, choice: str | None
) -> None:
    converter = get_converter(fmt, choice)
    assert not converter.dynamic_shapes
    note = converter.dynamic_note
    assert note and "\n" not in note
    precision = converter.precisions[0]
    options = ConversionOptions(precision, input_shapes={INPUT: SMALL_SHAPE}, dynamic=True)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ConversionError) as info:
        converter.convert(models["classifier"], out, options)
    assert info.value.kind == "failed"
    assert note in info.value.message
    assert not list(out.iterdir())


@pytest.mark.parametrize("fmt", list(RESIZABLE))
def test_calibrated_int8_and_static_models_refuse_dynamic(
    models: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    converter = get_converter(fmt)
    assert converter.dynamic_shapes
    int8 = ConversionOptions("int8", input_shapes={INPUT: SMALL_SHAPE}, dynamic=True)
    with pytest.raises(ConversionError, match="calibrated at fixed input shapes"):
        converter.convert(models["classifier"], tmp_path, int8)
    static = ConversionOptions(input_shapes={INPUT: HEAD_SHAPE}, dynamic=True)
    with pytest.raises(ConversionError, match="needs a model with symbolic input dims"):
        converter.convert(models["head"], tmp_path, static)


def test_dynamic_is_in_the_cache_key_only_when_set() -> None:
    fixed = ConversionOptions(input_shapes={INPUT: SMALL_SHAPE})
    assert fixed.key_fields() == {"precision": "fp32", "input_shapes": {INPUT: SMALL_SHAPE}}
    dynamic = ConversionOptions(input_shapes={INPUT: SMALL_SHAPE}, dynamic=True)
    assert dynamic.key_fields() == {**fixed.key_fields(), "dynamic": True}
