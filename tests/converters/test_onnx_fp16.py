"""The fp16 ONNX artifact TensorRT and ONNX Runtime on CUDA take at fp16: fp16 weights and
constants, fp32 inputs and outputs, Resize's float32-only inputs left alone, and outputs that
ONNX Runtime computes within half precision of the fp32 model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ConversionError, ConversionOptions, get_converter
from edgebench.converters.fp16 import to_fp16
from edgebench.models.registry import build_model


def run(path_or_model, feeds):
    data = path_or_model if isinstance(path_or_model, str) else path_or_model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def rel_l2(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def test_mobilenetv2_in_fp16_keeps_fp32_io_and_agrees_within_half_precision(tmp_path: Path):
    source = tmp_path / "mobilenetv2.onnx"
    onnx.save(build_model("mobilenetv2"), str(source))
    converter = get_converter("onnx-fp16")
    files = converter.convert(source, tmp_path, ConversionOptions(precision="fp16"))
    half = onnx.load(str(tmp_path / files[0]))
    weights = [i for i in half.graph.initializer if i.dims]
    assert weights and all(i.data_type == TensorProto.FLOAT16 for i in weights)
    io_types = {v.type.tensor_type.elem_type for v in [*half.graph.input, *half.graph.output]}
    assert io_types == {TensorProto.FLOAT}
    assert half.graph.node[0].op_type == "Cast" and half.graph.node[-1].op_type == "Cast"
    assert "2 io_casts" in converter.last_log
    feeds = {"input": np.random.default_rng(0).standard_normal((1, 3, 224, 224), np.float32)}
    (want,) = run(str(source), feeds)
    (got,) = run(str(tmp_path / files[0]), feeds)
    assert got.dtype == np.float32
    # Half precision loses about three decimal digits over ~50 layers; fp32 would be ~1e-6.
    assert 1e-5 < rel_l2(got, want) < 1e-2
    assert int(np.argmax(got)) == int(np.argmax(want))


def resize_model() -> onnx.ModelProto:
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [
        helper.make_node("Constant", [], ["k"], value_float=0.5),
        helper.make_node("Mul", ["x", "k"], ["y"]),
        helper.make_node("Resize", ["y", "", "scales"], ["z"], mode="nearest"),
        helper.make_node("Cast", ["z"], ["w"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 4, 4])],
        [scales],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_float32_only_inputs_stay_float32_and_casts_and_constants_turn_half():
    model = resize_model()
    half, counts = to_fp16(model)
    onnx.checker.check_model(half, full_check=True)
    (scales,) = half.graph.initializer
    assert scales.data_type == TensorProto.FLOAT
    assert counts == {
        "initializers": 0,
        "constants": 1,
        "casts": 1,
        "io_casts": 2,
        "float32_casts": 0,
    }
    feeds = {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)}
    np.testing.assert_array_equal(run(half, feeds)[0], run(model, feeds)[0])
    assert model.graph.initializer[0].data_type == TensorProto.FLOAT  # the input is untouched


def test_a_weight_beyond_half_precision_is_refused_in_one_line(tmp_path: Path):
    model = resize_model()
    big = numpy_helper.from_array(np.array([1e6], np.float32), "big")
    model.graph.initializer.append(big)
    model.graph.node[1].input[1] = "big"
    source = tmp_path / "big.onnx"
    onnx.save(model, str(source))
    with pytest.raises(ConversionError) as caught:
        get_converter("onnx-fp16").convert(source, tmp_path, ConversionOptions(precision="fp16"))
    assert caught.value.kind == "failed"
    assert "weight 'big' holds 1e+06, beyond float16's range" in caught.value.message
