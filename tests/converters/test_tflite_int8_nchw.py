"""An int8 classifier .tflite with an NCHW int8 input, as PyTorch converters make one: the file
takes int8 [1, 3, H, W], TRANSPOSEs it to NHWC, and gives int8 scores. Built here from the
writer's full-integer MobileNetV2: its leading QUANTIZE becomes the TRANSPOSE of an int8 NCHW
input, and its trailing DEQUANTIZE is dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.records import stored_records
from fakes.tflite_runs import QUICK, run_litert, run_onnx

pytest.importorskip(
    "ai_edge_litert", reason="the .tflite schema is missing: pip install 'edgebench[tflite]'"
)
pytest.importorskip("onnxruntime", reason="pip install 'edgebench[onnxruntime]'")

from edgebench.converters.tflite.convert import convert_model
from edgebench.converters.tflite.quantize import quantize_int8
from edgebench.converters.tflite.schema import load_schema
from edgebench.converters.tflite_import import real_values, tflite_to_onnx
from edgebench.models import build_model


def _nchw_int8_io(data: bytes) -> bytes:
    import flatbuffers

    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(data, 0)
    graph = model.subgraphs[0]
    first, last = graph.operators[0], graph.operators[-1]
    nhwc = graph.tensors[first.outputs[0]]
    n, h, w, c = nhwc.shape
    image = schema.TensorT()
    image.name, image.shape, image.type = b"image_nchw", [n, c, h, w], nhwc.type
    image.quantization, image.buffer = nhwc.quantization, 0
    perm = schema.BufferT()
    perm.data = np.asarray([0, 2, 3, 1], np.int32).view(np.uint8)
    model.buffers.append(perm)
    order = schema.TensorT()
    order.name, order.shape, order.type = b"perm", [4], schema.TensorType.INT32
    order.buffer = len(model.buffers) - 1
    graph.tensors += [image, order]
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.TRANSPOSE
    model.operatorCodes.append(code)
    transpose = schema.OperatorT()
    transpose.opcodeIndex = len(model.operatorCodes) - 1
    transpose.inputs = [len(graph.tensors) - 2, len(graph.tensors) - 1]
    transpose.outputs = list(first.outputs)
    transpose.builtinOptionsType = schema.BuiltinOptions.TransposeOptions
    transpose.builtinOptions = schema.TransposeOptionsT()
    graph.operators = [transpose, *graph.operators[1:-1]]
    graph.inputs, graph.outputs = [len(graph.tensors) - 2], list(last.inputs)
    model.signatureDefs = None
    builder = flatbuffers.Builder(len(data) + 65536)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.fixture(scope="module")
def classifier(tmp_path_factory) -> Path:
    model = build_model("mobilenetv2")
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    images = np.random.default_rng(5).uniform(0, 1, [8, *shape]).astype(np.float32)
    quantized = quantize_int8(convert_model(model, {}, "fp32"), {model.graph.input[0].name: images})
    path = tmp_path_factory.mktemp("nchw") / "classifier_int8_nchw.tflite"
    path.write_bytes(_nchw_int8_io(quantized.converted.flatbuffer))
    return path


def test_the_twin_keeps_int8_io_in_plain_ops_within_steps_of_litert(classifier, tmp_path):
    """No DequantizeLinear or QuantizeLinear (ncnn's converter refuses them, MNN's could not
    run them); the int8 scores are a few steps from LiteRT's, and as values within the fp16
    rule's relative L2."""
    report = tflite_to_onnx(classifier, tmp_path / "twin.onnx")
    (image,) = report.inputs
    assert image.shape == [1, 3, 224, 224] and image.dtype == "int8"
    kinds = {n.op_type for n in onnx.load(tmp_path / "twin.onnx").graph.node}
    assert not kinds & {"DequantizeLinear", "QuantizeLinear"}, kinds
    x = np.random.default_rng(1).integers(-128, 128, image.shape).astype(np.int8)
    (scores,) = report.outputs
    want = run_litert(classifier.read_bytes(), {image.name: x})[scores.name]
    (got,) = run_onnx(tmp_path / "twin.onnx", {image.name: x})
    assert got.dtype == np.int8 and np.abs(got.astype(int) - want).max() <= 3
    real_got, real_want = real_values(classifier, [scores.name] * 2, [got, want])
    assert real_got.dtype == np.float32 and not np.array_equal(real_got, got)
    assert np.linalg.norm(real_got - real_want) / np.linalg.norm(real_want) < 0.06


def test_int8_scores_are_checked_as_values_so_the_twin_is_a_reference(classifier, run_cli, eb_env):
    """The twin's int8 scores are a step or two from LiteRT's: compared as integers (which
    must match exactly) every cell was mismatch; compared as the values they encode (fp16
    rule), the twin is a reference and the cells that run it are checked."""
    pytest.importorskip("openvino")
    args = ["run", "--models", str(classifier), "--frameworks", "onnxruntime,openvino"]
    result = run_cli([*args, *QUICK, "--rounds", "1"], timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "does not match LiteRT" not in result.stderr
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    for framework in ("onnxruntime", "openvino"):
        record = records[framework]
        assert record["status"] == "ok", (framework, record["error"])
        assert record["output_check"]["passed"]


def test_mnn_runs_the_twin_with_its_int8_io(classifier, run_cli, eb_env):
    """MNN's Python binding has no host type for int8, so a session copied the int8 image in as
    int32 bytes and the scores out as floats: the cell was mismatch (max abs diff 128). The
    Module API takes an int32 placeholder and gives the int8 scores back."""
    args = ["run", "--models", str(classifier), "--frameworks", "mnn"]
    result = run_cli([*args, *QUICK, "--rounds", "1"], timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    assert record["status"] == "ok", record["error"]
    check = record["output_check"]
    assert check["passed"] and check["max_abs_diff"] <= 3, check
