"""edgebench's own .tflite -> ONNX reader: the writer's files read back (built-in models,
random graphs, int8), two real MediaPipe models against LiteRT, and one-line refusals."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.random_graphs import random_graph
from fakes.tflite_runs import assert_fp32_close, run_litert, run_onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.errors import UserError

pytest.importorskip(
    "ai_edge_litert", reason="the .tflite schema is missing: pip install 'edgebench[tflite]'"
)
pytest.importorskip("onnxruntime", reason="pip install 'edgebench[onnxruntime]'")

from edgebench.converters.tflite.convert import Converted, convert_model
from edgebench.converters.tflite.schema import load_schema
from edgebench.converters.tflite_import import tflite_to_onnx
from edgebench.models import build_model

MEDIAPIPE = Path(__file__).resolve().parents[1] / "data" / "mediapipe"
SHA256 = {
    "face_detection_short_range.tflite": (
        "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8"
    ),
    "face_landmark.tflite": "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
}
BUILTINS = ("mobilenetv2", "resnet50", "vit-tiny", "detector")


def seeded(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def read_back(converted: Converted, tmp: Path) -> Path:
    """The writer's file, read back into ONNX by the reader."""
    source = tmp / "model.tflite"
    source.write_bytes(converted.flatbuffer)
    twin = tmp / "model.onnx"
    report = tflite_to_onnx(source, twin)
    assert [t.name for t in report.inputs] == [t.name for t in converted.inputs]
    assert [t.name for t in report.outputs] == [t.name for t in converted.outputs]
    assert [t.shape for t in report.outputs] == [t.shape for t in converted.outputs]
    return twin


def check_round_trip(model: onnx.ModelProto, tmp: Path, feeds: dict[str, np.ndarray]) -> None:
    """ONNX -> .tflite (writer) -> ONNX (reader) on ONNX Runtime matches ONNX Runtime on the
    original, each output compared in the .tflite's layout."""
    converted = convert_model(model, {}, "fp32")
    twin = read_back(converted, tmp)
    twin_feeds = {
        t.name: np.ascontiguousarray(
            np.transpose(feeds[t.onnx_name], t.perm or range(len(t.shape)))
        )
        for t in converted.inputs
    }
    got = run_onnx(twin, twin_feeds)
    for tensor, out, want in zip(converted.outputs, got, run_onnx(model, feeds), strict=True):
        assert_fp32_close(out, np.transpose(want, tensor.perm or range(want.ndim)))


@pytest.mark.parametrize("name", sorted(SHA256))
def test_mediapipe_twin_matches_litert(tmp_path: Path, name: str) -> None:
    source = MEDIAPIPE / name
    data = source.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHA256[name]
    report = tflite_to_onnx(source, tmp_path / "twin.onnx")
    assert report.op_counts["DEQUANTIZE"] > 50 and not report.dequantized
    (image,) = report.inputs
    assert image.layout == "NHWC" and image.shape[3] == 3
    twin = onnx.load(tmp_path / "twin.onnx")
    assert [i.name for i in twin.graph.input] == [image.name]
    assert [o.name for o in twin.graph.output] == [o.name for o in report.outputs]
    # NCHW inside: a Transpose only after the input, before each 4-D output, and where a
    # RESHAPE needs its input back in NHWC order.
    readers = {i: n.op_type for n in twin.graph.node for i in n.input}
    for node in (n for n in twin.graph.node if n.op_type == "Transpose"):
        assert node.input[0] == image.name or readers.get(node.output[0]) in ("Reshape", "Identity")
    assert sum(n.op_type == "Transpose" for n in twin.graph.node) == (
        1 + sum(o.layout == "NHWC" for o in report.outputs) + report.op_counts.get("RESHAPE", 0)
    )
    x = np.random.default_rng(1).uniform(-1, 1, image.shape).astype(np.float32)
    want = run_litert(data, {image.name: x})
    got = run_onnx(tmp_path / "twin.onnx", {image.name: x})
    for tensor, out in zip(report.outputs, got, strict=True):
        assert list(out.shape) == tensor.shape
        assert_fp32_close(out, want[tensor.name])


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_models_round_trip(tmp_path: Path, name: str) -> None:
    model = build_model(name)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    check_round_trip(model, tmp_path, {model.graph.input[0].name: seeded(shape)})


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_random_graphs_both_directions(tmp_path_factory, seed: int) -> None:
    """ONNX -> .tflite -> ONNX matches ONNX Runtime on the original; that twin written to
    .tflite again matches LiteRT on the first .tflite (the reader's NHWC edges survive)."""
    tmp = tmp_path_factory.mktemp("graph")
    model, _ops = random_graph(seed)
    feeds = {"x": seeded([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])}
    check_round_trip(model, tmp, feeds)
    first = convert_model(model, {}, "fp32")
    (tensor,) = first.inputs
    nhwc = np.ascontiguousarray(np.transpose(feeds["x"], tensor.perm or range(4)))
    want = run_litert(first.flatbuffer, {tensor.name: nhwc})
    second = convert_model(onnx.load(tmp / "model.onnx"), {}, "fp32")
    (again,) = second.inputs
    image = np.ascontiguousarray(np.transpose(nhwc, again.perm or range(nhwc.ndim)))
    got = run_litert(second.flatbuffer, {again.name: image})
    for out in second.outputs:
        value = got[out.name]
        if out.perm:
            value = np.transpose(value, np.argsort(out.perm))
        assert_fp32_close(value, want[out.onnx_name])


def _with_custom_op(data: bytes, position: int, custom: str) -> bytes:
    """The model with operator ``position`` turned into a CUSTOM op of that name."""
    import flatbuffers

    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(data, 0)
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    code.customCode = custom
    model.operatorCodes.append(code)
    op = model.subgraphs[0].operators[position]
    op.opcodeIndex = len(model.operatorCodes) - 1
    op.builtinOptionsType, op.builtinOptions = 0, None
    builder = flatbuffers.Builder(len(data) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_unsupported_op_is_one_line(tmp_path: Path) -> None:
    data = (MEDIAPIPE / "face_detection_short_range.tflite").read_bytes()
    source = tmp_path / "face.tflite"
    source.write_bytes(_with_custom_op(data, 17, "Convolution2DTransposeBias"))
    with pytest.raises(UserError) as caught:
        tflite_to_onnx(source, tmp_path / "face.onnx")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        'face.tflite: op 17 (CUSTOM "Convolution2DTransposeBias") is not supported by '
        "edgebench's .tflite reader;"
    )
    assert not (tmp_path / "face.onnx").exists()


@pytest.mark.parametrize("damage", ["truncated", "not_tflite", "empty"])
def test_corrupt_file_is_one_line(tmp_path: Path, damage: str) -> None:
    data = (MEDIAPIPE / "face_detection_short_range.tflite").read_bytes()
    broken = {
        "truncated": data[: len(data) // 3],
        "not_tflite": b"\x00" * 4 + b"ONNX" + data[8:200],
        "empty": b"",
    }[damage]
    source = tmp_path / "face.tflite"
    source.write_bytes(broken)
    with pytest.raises(UserError) as caught:
        tflite_to_onnx(source, tmp_path / "face.onnx")
    message = str(caught.value)
    assert message.startswith("face.tflite: ") and "\n" not in message
    assert "corrupt or truncated" in message or "not a .tflite flatbuffer" in message


def test_int8_file_is_dequantized_and_flagged(tmp_path: Path) -> None:
    """The writer's full-integer int8 file comes back as float: weights dequantized, int8
    activations computed in float, and the report says so. The twin is then the float model
    up to int8 weight rounding, and near what LiteRT's int8 kernels compute."""
    from edgebench.converters.tflite.quantize import quantize_int8

    model = build_model("mobilenetv2")
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    name = model.graph.input[0].name
    converted = convert_model(model, {}, "fp32")
    quantized = quantize_int8(converted, {name: seeded([8, *shape], seed=5)})
    source = tmp_path / "int8.tflite"
    source.write_bytes(quantized.converted.flatbuffer)
    report = tflite_to_onnx(source, tmp_path / "int8.onnx")
    assert report.dequantized
    assert any("int8" in w for w in report.warnings)
    assert report.op_counts["QUANTIZE"] >= 1 and report.op_counts["CONV_2D"] >= 1
    x = seeded(shape, seed=9)
    (tensor,) = quantized.converted.inputs
    image = np.ascontiguousarray(np.transpose(x, tensor.perm))
    (twin,) = run_onnx(tmp_path / "int8.onnx", {tensor.name: image})
    (float_model,) = run_onnx(model, {name: x})
    int8 = run_litert(quantized.converted.flatbuffer, {tensor.name: image})
    (out,) = quantized.converted.outputs
    for reference in (float_model, int8[out.name]):
        error = np.linalg.norm(twin - reference) / np.linalg.norm(reference)
        assert error < 0.15, f"relative L2 {error:.3f}"


def _int8_io(data: bytes) -> bytes:
    """The int8 file with its leading QUANTIZE and trailing DEQUANTIZE removed, so that the
    model itself takes and gives int8 (as fully quantized third-party files do)."""
    import flatbuffers

    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(data, 0)
    graph = model.subgraphs[0]
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}

    def code(op) -> str:
        record = model.operatorCodes[op.opcodeIndex]
        return names[max(record.builtinCode, record.deprecatedBuiltinCode)]

    first, last = graph.operators[0], graph.operators[-1]
    assert (code(first), code(last)) == ("QUANTIZE", "DEQUANTIZE")
    graph.inputs, graph.outputs = list(first.outputs), list(last.inputs)
    graph.operators = graph.operators[1:-1]
    model.signatureDefs = None
    builder = flatbuffers.Builder(len(data) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_int8_io_is_kept_int8(tmp_path: Path) -> None:
    """A model that takes and gives int8: the twin keeps int8 io, dequantizing after the input
    and quantizing before the output, and lands within a few int8 steps of LiteRT."""
    from edgebench.converters.tflite.quantize import quantize_int8

    model = build_model("detector")
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    name = model.graph.input[0].name
    quantized = quantize_int8(convert_model(model, {}, "fp32"), {name: seeded([8, *shape], 5)})
    data = _int8_io(quantized.converted.flatbuffer)
    source = tmp_path / "int8_io.tflite"
    source.write_bytes(data)
    report = tflite_to_onnx(source, tmp_path / "int8_io.onnx")
    assert report.dequantized
    assert [t.dtype for t in report.inputs] == ["int8"]
    assert {t.dtype for t in report.outputs} == {"int8"}
    twin = onnx.load(tmp_path / "int8_io.onnx")
    assert twin.graph.node[0].op_type == "DequantizeLinear"
    (image,) = report.inputs
    x = np.random.default_rng(3).integers(-128, 128, image.shape).astype(np.int8)
    want = run_litert(data, {image.name: x})
    got = run_onnx(tmp_path / "int8_io.onnx", {image.name: x})
    for tensor, out in zip(report.outputs, got, strict=True):
        reference = want[tensor.name].astype(np.int32)
        steps = np.abs(out.astype(np.int32) - reference)
        assert out.dtype == np.int8 and np.median(steps) <= 2, f"{tensor.name}: {steps.max()}"


def test_int8_saturation_follows_litert(tmp_path: Path) -> None:
    """Calibrated on inputs a quarter the size of the ones it is then fed, the int8 file
    saturates; the twin clamps each int8 tensor's range as LiteRT's kernels do and stays
    close (computed in float without the clamps it was 57% away; with them, 1%)."""
    from edgebench.converters.tflite.quantize import quantize_int8

    model = build_model("mobilenetv2")
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    calibration = {model.graph.input[0].name: 0.25 * seeded([8, *shape], 5)}
    quantized = quantize_int8(convert_model(model, {}, "fp32"), calibration).converted
    source = tmp_path / "narrow.tflite"
    source.write_bytes(quantized.flatbuffer)
    tflite_to_onnx(source, tmp_path / "narrow.onnx")
    (tensor,) = quantized.inputs
    image = np.ascontiguousarray(np.transpose(seeded(shape, 9), tensor.perm))
    (twin,) = run_onnx(tmp_path / "narrow.onnx", {tensor.name: image})
    (int8,) = run_litert(quantized.flatbuffer, {tensor.name: image}).values()
    assert np.linalg.norm(twin - int8) / np.linalg.norm(int8) < 0.05
