"""edgebench's own ONNX -> TFLite writer, checked by running its files in LiteRT against
ONNX Runtime: the built-in models, fp16, random graphs and the converter's interface."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fakes.random_graphs import random_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, get_converter
from edgebench.converters.artifact_cache import file_sha256
from edgebench.converters.tflite.convert import Converted, convert_model
from edgebench.converters.tflite_converter import TfliteConverter
from edgebench.models import build_model
from edgebench.runners.protocol.io_map import IoMap

BUILTINS = ("mobilenetv2", "resnet50", "vit-tiny", "detector")


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def litert_outputs(converted: Converted, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run the flatbuffer in LiteRT (XNNPACK on), feeding and reading in ONNX layout."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=converted.flatbuffer, num_threads=1)
    interpreter.allocate_tensors()
    by_name = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    for tensor in converted.inputs:
        value = feeds[tensor.onnx_name]
        if tensor.perm:
            value = np.transpose(value, tensor.perm)
        interpreter.set_tensor(by_name[tensor.name], np.ascontiguousarray(value))
    interpreter.invoke()
    out_by_name = {d["name"]: d["index"] for d in interpreter.get_output_details()}
    results = []
    for tensor in converted.outputs:
        value = interpreter.get_tensor(out_by_name[tensor.name])
        if tensor.perm:
            value = np.transpose(value, np.argsort(tensor.perm))
        assert list(value.shape) == tensor.onnx_shape
        results.append(value)
    return results


def seeded(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-3) -> None:
    """The output check's fp32 rule: |d| <= rtol * (|ref| + max|ref|), plus a tiny floor."""
    assert got.shape == want.shape
    bound = rtol * (np.abs(want) + np.abs(want).max()) + 1e-5
    worst = float((np.abs(got - want) - bound).max())
    assert worst <= 0, f"max |diff| {np.abs(got - want).max():.3g} beyond the bound"


@pytest.fixture(scope="module")
def builtin_models() -> dict[str, onnx.ModelProto]:
    return {name: build_model(name) for name in BUILTINS}


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_models_match_onnxruntime(builtin_models, name: str) -> None:
    model = builtin_models[name]
    converted = convert_model(model, {}, "fp32")
    x = seeded([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
    feeds = {model.graph.input[0].name: x}
    for got, want in zip(litert_outputs(converted, feeds), ort_outputs(model, feeds), strict=True):
        assert_close(got, want)
    assert converted.inputs[0].perm == [0, 2, 3, 1]  # images go in NHWC
    assert "DEQUANTIZE" not in converted.op_counts


def test_fusions_on_builtins(builtin_models) -> None:
    """BatchNormalization folds into the conv, ReLU/ReLU6 into the op before it, erf-GELU
    becomes GELU, MatMul + bias one FULLY_CONNECTED; no transposes in the CNNs."""
    mobilenet = convert_model(builtin_models["mobilenetv2"], {}).op_counts
    assert set(mobilenet) <= {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "PAD",
        "ADD",
        "MEAN",
        "RESHAPE",
        "FULLY_CONNECTED",
    }
    resnet = convert_model(builtin_models["resnet50"], {}).op_counts
    assert "RELU" not in resnet and "TRANSPOSE" not in resnet and "MUL" not in resnet
    vit = convert_model(builtin_models["vit-tiny"], {}).op_counts
    assert vit["GELU"] == 12 and "DIV" not in vit
    assert vit["FULLY_CONNECTED"] == 12 * 4 + 1  # qkv, proj, fc1, fc2 per block + head


def test_fp16_stores_half_weights_behind_dequantize(builtin_models) -> None:
    model = builtin_models["mobilenetv2"]
    full = convert_model(model, {}, "fp32")
    half = convert_model(model, {}, "fp16")
    assert half.op_counts["DEQUANTIZE"] >= 52  # every conv weight and the classifier's
    assert len(half.flatbuffer) < 0.6 * len(full.flatbuffer)
    feeds = {model.graph.input[0].name: seeded((1, 3, 224, 224))}
    got = litert_outputs(half, feeds)[0]
    want = ort_outputs(model, feeds)[0]
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 6e-2
    assert np.argmax(got) == np.argmax(want)


def test_converter_writes_model_and_io_json(tmp_path: Path, builtin_models) -> None:
    path = tmp_path / "detector.onnx"
    onnx.save(builtin_models["detector"], str(path))
    out = tmp_path / "out"
    out.mkdir()
    converter = TfliteConverter()
    files = converter.convert(path, out, ConversionOptions())
    assert files == ["model.tflite", "io.json"]
    io = json.loads((out / "io.json").read_text())
    assert io["format"] == "tflite" and io["inputs"][0]["perm"] == [0, 2, 3, 1]
    assert io["inputs"][0]["shape"] == [1, 320, 320, 3]
    assert io["outputs"][0]["onnx_shape"] == [1, 6300, 85]
    assert IoMap.beside(str(out / "model.tflite")) is not None
    assert "CONV_2D" in converter.last_log


def test_cache_keys_on_the_converter(tmp_path: Path, builtin_models) -> None:
    """Our writer and onnx2tf never share a cache entry; a choice that does not exist is one
    clear line."""
    path = tmp_path / "m.onnx"
    onnx.save(builtin_models["mobilenetv2"], str(path))
    cache = ArtifactCache(tmp_path / "cache")
    ours, theirs = get_converter("tflite"), get_converter("tflite", "onnx2tf")
    assert ours.version() != theirs.version()
    options = ConversionOptions()
    assert cache.entry_path(ours, "s", options) != cache.entry_path(theirs, "s", options)
    artifact = cache.convert(ours, path, file_sha256(path), options)
    assert artifact.manifest["converter"] == "TfliteConverter" and not artifact.cached
    assert cache.convert(ours, path, file_sha256(path), options).cached
    with pytest.raises(ConversionError, match="no tflite converter 'tf'; choose from edgebench"):
        get_converter("tflite", "tf")


def _one_node(op: str, **attrs) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="the_node", **attrs)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_unsupported_op_names_op_and_node() -> None:
    with pytest.raises(ConversionError) as caught:
        convert_model(_one_node("Erf"), {})
    assert caught.value.kind == "unsupported_op"
    assert caught.value.message == (
        "TFLite converter does not support operator Erf (node 'the_node')"
    )


def test_unsupported_variant_says_why() -> None:
    with pytest.raises(ConversionError, match=r"operator Resize .*mode 'cubic'"):
        model = _one_node("Resize", mode="cubic")
        model.graph.node[0].input.extend(["", "scales"])
        model.graph.initializer.append(
            numpy_helper.from_array(np.asarray([1, 1, 2, 2], np.float32), "scales")
        )
        convert_model(model, {})


def test_dynamic_input_needs_a_shape_and_folds_with_one() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Reshape", ["r", "target"], ["y"]),
    ]
    consts = [
        numpy_helper.from_array(np.asarray(0, np.int64), "zero"),
        numpy_helper.from_array(np.asarray([0], np.int64), "axes"),
        numpy_helper.from_array(np.asarray([-1], np.int64), "minus1"),
    ]
    graph = helper.make_graph(
        nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], consts
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError, match="'x' has a dynamic dimension 2; give its shape"):
        convert_model(model, {})
    for shape in ([1, 3, 8, 10], [2, 3, 5, 7]):
        converted = convert_model(model, {"x": shape})
        assert "SHAPE" not in converted.op_counts and "GATHER" not in converted.op_counts
        feeds = {"x": seeded(shape)}
        assert_close(litert_outputs(converted, feeds)[0], ort_outputs(model, feeds)[0])


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_random_graphs_match_onnxruntime(seed: int) -> None:
    model, _ops = random_graph(seed)
    feeds = {"x": seeded([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])}
    want = ort_outputs(model, feeds)[0]
    converted = convert_model(model, {}, "fp32")
    got = litert_outputs(converted, feeds)[0]
    assert_close(got, want)
