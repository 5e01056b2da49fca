"""The precision a model file holds, read from the file (converters/artifact_precision.py):
full-integer, weight-only and fp16 .tflite files from edgebench's writer, QDQ and float ONNX,
and the files OpenVINO and MNN make from an int8 .tflite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.models import save_conv_model
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ConversionOptions
from edgebench.converters.artifact_precision import (
    FilePrecision,
    allowed_precisions,
    ran_precision,
    read_precision,
)
from edgebench.converters.tflite.schema import schema_missing

if schema_missing():
    pytest.skip(schema_missing(), allow_module_level=True)


def tflite_files(folder: Path) -> dict[str, Path]:
    """The one-conv model as .tflite files from edgebench's writer: fp32, fp16 and int8."""
    from edgebench.converters.tflite.convert import convert_model
    from edgebench.converters.tflite.quantize import quantize_int8

    model = onnx.load(str(save_conv_model(folder / "conv.onnx", [1, 3, 32, 32])))
    fp32 = convert_model(model, {}, "fp32")
    samples = np.random.default_rng(0).standard_normal((8, 1, 3, 32, 32), dtype=np.float32)
    files = {
        "fp32": fp32.flatbuffer,
        "fp16": convert_model(model, {}, "fp16").flatbuffer,
        "int8": quantize_int8(fp32, {"x": samples}).converted.flatbuffer,
    }
    paths = {}
    for precision, data in files.items():
        paths[precision] = folder / f"conv_{precision}.tflite"
        paths[precision].write_bytes(data)
    return paths


@pytest.fixture(scope="module")
def tflites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tflite_files(tmp_path_factory.mktemp("tflite"))


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_a_tflite_says_its_precision(tflites: dict[str, Path], precision: str) -> None:
    found = read_precision(tflites[precision], "tflite")
    assert found.precision == precision, found
    assert found.quantized is (precision == "int8")


def qdq_model(path: Path, weights_only: bool) -> Path:
    """A MatMul whose weight is int8 behind DequantizeLinear; with ``weights_only`` false, its
    input goes through QuantizeLinear too."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.int8).reshape(4, 3), "w_q")
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "s"], ["w"])]
    source = "x"
    if not weights_only:
        zero = numpy_helper.from_array(np.array(0, np.int8), "z")
        nodes += [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
            helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
        ]
        source = "xd"
    nodes.append(helper.make_node("MatMul", [source, "w"], ["y"]))
    inits = [w, scale] + ([] if weights_only else [zero])
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_onnx_quantized_weight_only_and_float(tmp_path: Path) -> None:
    full = read_precision(qdq_model(tmp_path / "full.onnx", weights_only=False), "onnx-qdq")
    assert (full.precision, full.evidence) == ("int8", "QuantizeLinear nodes")
    weights = read_precision(qdq_model(tmp_path / "w.onnx", weights_only=True), "onnx")
    assert weights.precision == "int8-weights"
    plain = read_precision(save_conv_model(tmp_path / "conv.onnx", [1, 3, 8, 8]), "onnx")
    assert plain.precision is None  # float: fp32 or fp16 is the run's choice (TensorRT's flags)


def test_what_a_cell_runs_at() -> None:
    float_file = FilePrecision(None, "no quantized tensors")
    assert ran_precision("fp16", float_file) == "fp16"
    assert ran_precision("int8", float_file) == "fp32"
    assert ran_precision("fp32", FilePrecision("int8", "x")) == "int8"
    assert allowed_precisions(float_file) == ("fp32", "fp16")


def test_an_unreadable_file_leaves_the_precision_to_the_run(tmp_path: Path) -> None:
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"\x00" * 7)
    assert read_precision(broken, "tflite").precision is None
    assert read_precision(tmp_path / "missing.xml", "openvino").precision is None


@pytest.mark.parametrize("fmt", ["openvino", "mnn"])
def test_the_direct_conversion_of_an_int8_tflite_keeps_it_int8(
    tflites: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    """OpenVINO's TFLite frontend (FakeQuantize layers) and MNNConvert -f TFLITE (DT_INT8
    tensors) keep the file's quantization at fp32: what the record says must follow."""
    pytest.importorskip({"openvino": "openvino", "mnn": "MNN"}[fmt])
    from edgebench.converters.tflite_direct import QUANTIZED_IN_FILE, direct_converter

    for precision, expected in (("int8", "int8"), ("fp32", None)):
        converter = direct_converter(fmt)
        out = tmp_path / f"{fmt}-{precision}"
        out.mkdir()
        names = converter.convert(tflites[precision], out, ConversionOptions(precision="fp32"))
        found = read_precision(out / names[0], fmt)
        assert found.precision == expected, (precision, found)
        assert (converter.last_quant or {}).get("method") == (
            QUANTIZED_IN_FILE if expected else None
        )


def test_int8_io_dequantized_in_the_graph_is_no_int8_weight(tmp_path: Path) -> None:
    # An int8 .tflite's twin takes its int8 input as the file did and computes in float: its
    # int8 input (and the zero point it is shifted by) are not weights.
    x = helper.make_tensor_value_info("image", TensorProto.INT8, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    zero = numpy_helper.from_array(np.array(3, np.int8), "zero")
    nodes = [
        helper.make_node("DequantizeLinear", ["image", "scale", "zero"], ["real"]),
        helper.make_node("Relu", ["real"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "int8-input", [x], [y], [scale, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "twin.onnx")
    found = read_precision(tmp_path / "twin.onnx", "onnx")
    assert found.precision is None and found.evidence == "no quantized tensors"  # float
