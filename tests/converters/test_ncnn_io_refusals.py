"""Models whose io ncnn cannot hold are refused in one line naming the input, before pnnx
says something else: an int8 input or output (an int8 .tflite's ONNX twin keeps its int8 io;
pnnx stopped at the twin's Cast with 'does not support operator Tensor.to')."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from fakes.toolchains import pnnx_or_skip
from onnx import TensorProto, helper

from edgebench.converters import ConversionError, ConversionOptions, get_converter


def _int8_io_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("image", TensorProto.INT8, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("scores", TensorProto.INT8, [1, 3, 8, 8])
    nodes = [
        helper.make_node("Cast", ["image"], ["real"], to=TensorProto.FLOAT),
        helper.make_node("Relu", ["real"], ["positive"]),
        helper.make_node("Cast", ["positive"], ["scores"], to=TensorProto.INT8),
    ]
    graph = helper.make_graph(nodes, "int8-io", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_int8_io_is_one_line_naming_the_tensors(tmp_path: Path) -> None:
    pnnx_or_skip()
    model = _int8_io_model(tmp_path / "int8io.onnx")
    with pytest.raises(ConversionError) as caught:
        get_converter("ncnn").convert(model, tmp_path / "out", ConversionOptions())
    message = caught.value.message
    assert "ncnn cannot take int8 inputs or outputs: 'image' (int8), 'scores' (int8)" in message
    assert "Tensor.to" not in message and "\n" not in message
