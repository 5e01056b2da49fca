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


def _with_custom_op(data: bytes, position: int, custom: str, options: bytes = b"") -> bytes:
    """The model with operator ``position`` turned into a CUSTOM op of that name, holding
    ``options`` as its custom options."""
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
    op.customOptions = list(options) or None
    builder = flatbuffers.Builder(len(data) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_unsupported_op_is_one_line(tmp_path: Path) -> None:
    data = (MEDIAPIPE / "face_detection_short_range.tflite").read_bytes()
    source = tmp_path / "face.tflite"
    source.write_bytes(_with_custom_op(data, 17, "MaxPoolingWithArgmax2D"))
    with pytest.raises(UserError) as caught:
        tflite_to_onnx(source, tmp_path / "face.onnx")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        'face.tflite: op 17 (CUSTOM "MaxPoolingWithArgmax2D") is not supported by '
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
    assert [n.op_type for n in twin.graph.node[:3]] == ["Cast", "Sub", "Mul"]
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


SELFIE = MEDIAPIPE / "selfie_segmentation.tflite"
SELFIE_SHA256 = "8d13b7fae74af625c641226813616a2117bd6bca19eb3b75574621fc08557f27"


def _with_outputs(data: bytes, names: list[str]) -> bytes:
    """The model with the named tensors added to its outputs."""
    import flatbuffers

    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(data, 0)
    graph = model.subgraphs[0]
    index = {t.name.decode(): i for i, t in enumerate(graph.tensors)}
    graph.outputs = [*graph.outputs, *(index[name] for name in names)]
    model.signatureDefs = None
    builder = flatbuffers.Builder(len(data) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _smooth_image(shape) -> np.ndarray:
    """Colour ramps in [-1, 1]: the segmenter's output is not all zero on them (on noise it
    is, and a check of zeros proves little)."""
    _, height, width, _ = shape
    y, x = np.mgrid[0:height, 0:width] / np.float32(max(height, width) - 1)
    return (np.stack([x, y, x * y], axis=-1)[None] * 2 - 1).astype(np.float32)


def test_mediapipe_segmentation_with_its_custom_transposed_convolution(tmp_path: Path) -> None:
    """MediaPipe's selfie segmenter ends in its custom Convolution2DTransposeBias: the twin
    reads it, and matches LiteRT on the mask and on the custom op's own output (the logits)."""
    data = SELFIE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SELFIE_SHA256
    exposed = tmp_path / "selfie_logits.tflite"
    exposed.write_bytes(_with_outputs(data, ["segment"]))
    report = tflite_to_onnx(exposed, tmp_path / "twin.onnx")
    assert report.op_counts["CUSTOM:Convolution2DTransposeBias"] == 1 and not report.dequantized
    assert [o.name for o in report.outputs] == ["activation_10", "segment"]
    (image,) = report.inputs
    for x in (_smooth_image(image.shape), seeded(image.shape, 2)):
        want = run_litert(exposed.read_bytes(), {image.name: x})
        got = run_onnx(tmp_path / "twin.onnx", {image.name: x})
        for tensor, out in zip(report.outputs, got, strict=True):
            assert list(out.shape) == tensor.shape == [1, 256, 256, 1]
            assert_fp32_close(out, want[tensor.name])
        assert np.ptp(want["segment"]) > 10  # the logits vary: the check is not of a constant


def test_litert_runs_the_custom_op_only_through_its_default_xnnpack_delegate() -> None:
    """No kernel for Convolution2DTransposeBias is registered in LiteRT's interpreter; its
    default XNNPACK delegate claims the op. Without the default delegates it is unresolved."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    bare = Interpreter(
        model_path=str(SELFIE),
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    with pytest.raises(RuntimeError, match="unresolved custom op: Convolution2DTransposeBias"):
        bare.allocate_tensors()
        bare.invoke()


#: TfLitePadding of MediaPipe's custom options (1 SAME, 2 VALID), not the schema's.
C_SAME, C_VALID = 1, 2


@pytest.mark.parametrize(
    ("size", "kernel", "strides", "padding"),
    [
        ((7, 7), (3, 3), (2, 2), C_SAME),  # trims 2: 13x13
        ((8, 8), (3, 3), (2, 2), C_SAME),  # trims 1, at the end: 16x16
        ((7, 7), (2, 2), (2, 2), C_SAME),  # trims 1 of the full 14: 13x13
        ((7, 7), (3, 3), (2, 2), C_VALID),  # the full 15x15
        ((6, 5), (3, 2), (1, 2), C_SAME),  # unequal strides, read as (w, h) from the options
        ((5, 6), (4, 4), (3, 3), C_VALID),
    ],
)
def test_convolution_2d_transpose_bias_matches_litert(
    tmp_path: Path, size, kernel, strides, padding
) -> None:
    from edgebench.converters.tflite.model_builder import ModelBuilder

    rng = np.random.default_rng(sum(size) + 10 * padding)
    out_hw = []
    for n, k, s in zip(size, kernel, strides, strict=True):
        trim = max(0, k - (n - 1) % s - 1) if padding == C_SAME else 0
        out_hw.append(s * (n - 1) + k - trim)
    b = ModelBuilder()
    x = b.tensor("image", [1, *size, 5])
    w = b.constant(rng.standard_normal((4, *kernel, 5)).astype(np.float32), "w")
    bias = b.constant(rng.standard_normal(4).astype(np.float32), "bias")
    out = b.tensor("deconv", [1, *out_hw, 4])
    b.op("TRANSPOSE_CONV", [x, w, bias], [out])  # becomes the custom op below
    options = np.asarray([padding, strides[1], strides[0]], "<i4").tobytes()
    data = _with_custom_op(
        b.serialize([x], [out], "deconv"), 0, "Convolution2DTransposeBias", options
    )
    source = tmp_path / "deconv.tflite"
    source.write_bytes(data)
    tflite_to_onnx(source, tmp_path / "deconv.onnx")
    image = rng.standard_normal((1, *size, 5)).astype(np.float32)
    want = run_litert(data, {"image": image})["deconv"]
    (got,) = run_onnx(tmp_path / "deconv.onnx", {"image": image})
    assert want.shape == (1, *out_hw, 4)
    assert_fp32_close(got, want)


def test_convolution_2d_transpose_bias_without_its_options_is_one_line(tmp_path: Path) -> None:
    from edgebench.converters.tflite.model_builder import ModelBuilder

    b = ModelBuilder()
    x = b.tensor("image", [1, 4, 4, 2])
    w = b.constant(np.ones((3, 2, 2, 2), np.float32), "w")
    out = b.tensor("deconv", [1, 8, 8, 3])
    b.op("TRANSPOSE_CONV", [x, w, b.constant(np.zeros(3, np.float32), "bias")], [out])
    source = tmp_path / "bare.tflite"
    source.write_bytes(
        _with_custom_op(b.serialize([x], [out], "bare"), 0, "Convolution2DTransposeBias")
    )
    with pytest.raises(UserError) as caught:
        tflite_to_onnx(source, tmp_path / "bare.onnx")
    assert str(caught.value).startswith(
        'bare.tflite: op 0 (CUSTOM "Convolution2DTransposeBias": needs 3 inputs and 12 bytes '
        "of options) is not supported"
    )
