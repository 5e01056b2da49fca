"""Full-integer int8 from edgebench's TFLite writer: the file's tensors and parameters follow
TFLite's int8 rules, LiteRT runs it close to ONNX Runtime's fp32 result, ops without an int8
path stay float and are listed, and a calibration set that does not fit is one clear line."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ConversionError, ConversionOptions
from edgebench.converters.tflite.convert import Converted, convert_model
from edgebench.converters.tflite.float_ops import float_op_types
from edgebench.converters.tflite.quantize import Quantized, per_channel, quantize_int8
from edgebench.converters.tflite.schema import load_schema
from edgebench.converters.tflite_converter import TfliteConverter
from edgebench.models import build_model
from edgebench.runners.backends.tflite_backend import TfliteBackend

CALIBRATION_SAMPLES = 8
HELD_OUT = (101, 102, 103, 104)


def normal(shape: list[int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def input_shape(model: onnx.ModelProto) -> list[int]:
    return [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]


def calibration(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    return {model.graph.input[0].name: normal([CALIBRATION_SAMPLES, *input_shape(model)], seed)}


def quantized(model: onnx.ModelProto) -> Quantized:
    return quantize_int8(convert_model(model, {}, "fp32"), calibration(model))


def ort_output(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, {model.graph.input[0].name: x})[0]


def litert_output(converted: Converted, x: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=converted.flatbuffer, num_threads=1)
    interpreter.allocate_tensors()
    (tensor,) = converted.inputs
    if tensor.perm:
        x = np.transpose(x, tensor.perm)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.ascontiguousarray(x))
    interpreter.invoke()
    out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    perm = converted.outputs[0].perm
    return np.transpose(out, np.argsort(perm)) if perm else out


def sqnr_db(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape
    noise = float(np.sum((got.astype(np.float64) - want) ** 2))
    return 10 * np.log10(float(np.sum(want.astype(np.float64) ** 2)) / max(noise, 1e-30))


def held_out_sqnr(model: onnx.ModelProto, converted: Converted) -> float:
    """The worst SQNR over the held-out inputs (never seen in calibration)."""
    shape = input_shape(model)
    return min(
        sqnr_db(litert_output(converted, normal(shape, s)), ort_output(model, normal(shape, s)))
        for s in HELD_OUT
    )


class Flat:
    """The packed file read back: ops by code with their tensors."""

    def __init__(self, data: bytes) -> None:
        schema = load_schema()
        self.schema = schema
        self.model = schema.ModelT.InitFromPackedBuf(data, 0)
        self.sub = self.model.subgraphs[0]
        names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
        self.ops = []
        for op in self.sub.operators:
            code = self.model.operatorCodes[op.opcodeIndex]
            name = names[max(code.builtinCode, code.deprecatedBuiltinCode)]
            self.ops.append((name, list(op.inputs), list(op.outputs)))

    def tensor(self, index: int):
        return self.sub.tensors[index]

    def is_constant(self, index: int) -> bool:
        data = self.model.buffers[self.tensor(index).buffer].data
        return data is not None and len(data) > 0

    def type_of(self, index: int) -> int:
        return self.tensor(index).type

    def interior_float_ops(self) -> list[str]:
        """Ops other than the I/O QUANTIZE/DEQUANTIZE that read or write a float activation."""
        float32 = self.schema.TensorType.FLOAT32
        found = []
        for code, inputs, outputs in self.ops:
            if code in ("QUANTIZE", "DEQUANTIZE"):
                continue
            tensors = [t for t in (*inputs, *outputs) if t >= 0 and not self.is_constant(t)]
            if any(self.type_of(t) == float32 for t in tensors):
                found.append(code)
        return found


# --- MobileNetV2 (one conversion for the module) --------------------------------------------


@pytest.fixture(scope="module")
def mobilenet() -> tuple[onnx.ModelProto, Converted, Quantized]:
    model = build_model("mobilenetv2")
    fp32 = convert_model(model, {}, "fp32")
    return model, fp32, quantize_int8(fp32, calibration(model))


def test_mobilenetv2_file_is_full_integer(mobilenet) -> None:
    _, fp32, result = mobilenet
    flat = Flat(result.converted.flatbuffer)
    types = flat.schema.TensorType
    assert result.fallback_ops == []
    assert flat.interior_float_ops() == []
    # Model inputs and outputs stay float32 with the fp32 file's names: io.json does not change.
    assert [flat.type_of(i) for i in flat.sub.inputs] == [types.FLOAT32]
    assert [flat.type_of(i) for i in flat.sub.outputs] == [types.FLOAT32]
    assert [flat.tensor(i).name.decode() for i in flat.sub.outputs] == [
        t.name for t in fp32.outputs
    ]
    assert flat.model.signatureDefs[0].signatureKey.decode() == "serving_default"
    axes = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 0}
    checked = 0
    for code, inputs, outputs in flat.ops:
        if code not in axes:
            continue
        data, weight, bias = (flat.tensor(i) for i in inputs)
        assert data.type == types.INT8 and flat.tensor(outputs[0]).type == types.INT8
        assert weight.type == types.INT8 and bias.type == types.INT32
        channels = weight.shape[axes[code]]
        wq, bq = weight.quantization, bias.quantization
        assert wq.quantizedDimension == axes[code] and len(wq.scale) == channels
        assert list(wq.zeroPoint) == [0] * channels and list(bq.zeroPoint) == [0] * channels
        np.testing.assert_allclose(
            bq.scale, data.quantization.scale[0] * np.asarray(wq.scale), rtol=1e-6
        )
        values = np.frombuffer(bytes(flat.model.buffers[weight.buffer].data), np.int8)
        assert values.min() >= -127
        checked += 1
    assert checked == 35 + 17 + 1
    # Weights in int8: about a quarter of the fp32 file.
    assert len(result.converted.flatbuffer) < 0.3 * len(fp32.flatbuffer)


def test_mobilenetv2_int8_matches_onnxruntime(mobilenet) -> None:
    """Measured 31.5-32.7 dB and 8/8 top-1 on held-out standard-normal inputs; 25 dB leaves
    room for other LiteRT builds (XNNPACK and the builtin kernels round differently)."""
    model, _, result = mobilenet
    shape = input_shape(model)
    for seed in HELD_OUT:
        x = normal(shape, seed)
        want, got = ort_output(model, x), litert_output(result.converted, x)
        assert sqnr_db(got, want) > 25
        assert int(np.argmax(got)) == int(np.argmax(want))


def test_per_channel_weights_with_a_zero_channel_and_a_huge_bias() -> None:
    """An all-zero channel gets a usable scale; a bias too large for int32 at
    input scale x weight scale raises that channel's weight scale instead of wrapping."""
    weight = np.stack([np.linspace(-1, 1, 12), np.zeros(12), np.linspace(0, 0.01, 12)])
    weight = weight.reshape(3, 2, 2, 3).astype(np.float32)
    bias = np.asarray([0.5, 0.25, 5e4], np.float32)
    q_weight, scales, q_bias, bias_scales = per_channel(weight, 0, bias, input_scale=1e-5)
    assert q_weight.dtype == np.int8 and np.abs(q_weight).max() == 127
    assert np.all(scales > 0) and q_bias.dtype == np.int32
    assert np.abs(q_bias.astype(np.int64)).max() < 2**31 - 1
    np.testing.assert_allclose(q_bias * bias_scales.astype(np.float64), bias, rtol=1e-6)
    np.testing.assert_allclose(
        q_weight * scales.reshape(3, 1, 1, 1), weight, atol=float(scales.max()) / 2 + 1e-9
    )


# --- small nets, one concern each ------------------------------------------------------------


def _initializer(name: str, array: np.ndarray) -> onnx.TensorProto:
    if array.dtype.kind == "f":
        array = array.astype(np.float32)
    return numpy_helper.from_array(array, name)


def _net(nodes: list, shape: list[int], inits: dict[str, np.ndarray]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_initializer(k, v) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _conv(name: str, x: str, cin: int, cout: int, k: int = 3, group: int = 1, **attrs):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    weight = rng.standard_normal((cout, cin // group, k, k)).astype(np.float32)
    weight /= np.sqrt(cin // group * k * k)
    bias = 0.1 * rng.standard_normal(cout).astype(np.float32)
    pads = attrs.pop("pads", [k // 2] * 4)
    node = helper.make_node(
        "Conv", [x, f"{name}.w", f"{name}.b"], [name], group=group, pads=pads, **attrs
    )
    return node, {f"{name}.w": weight, f"{name}.b": bias}


def _chain(parts: list) -> tuple[list, dict]:
    nodes, inits = [], {}
    for part in parts:
        if isinstance(part, tuple):
            nodes.append(part[0])
            inits.update(part[1])
        else:
            nodes.append(part)
    return nodes, inits


def _node(op: str, inputs: list[str], output: str, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def conv_bn_relu6() -> onnx.ModelProto:
    c = 8
    bn = {
        "bn.g": np.linspace(0.5, 2, c).astype(np.float32),
        "bn.b": np.linspace(-1, 1, c).astype(np.float32),
        "bn.m": np.linspace(-0.2, 0.2, c).astype(np.float32),
        "bn.v": np.linspace(0.5, 1.5, c).astype(np.float32),
        "lo": np.asarray(0.0, np.float32),
        "hi": np.asarray(6.0, np.float32),
    }
    nodes, inits = _chain(
        [
            _conv("c1", "x", 3, c),
            _node("BatchNormalization", ["c1", "bn.g", "bn.b", "bn.m", "bn.v"], "bn"),
            _node("Clip", ["bn", "lo", "hi"], "r"),
            _conv("c2", "r", c, c, 1),
            _node("Relu", ["c2"], "y"),
        ]
    )
    return _net(nodes, [1, 3, 16, 16], {**inits, **bn})


def depthwise_residual() -> onnx.ModelProto:
    nodes, inits = _chain(
        [
            _conv("c1", "x", 3, 16, 1),
            _conv("dw", "c1", 16, 16, 3, group=16),
            _node("Relu", ["dw"], "r"),
            _conv("pw", "r", 16, 16, 1),
            _node("Add", ["c1", "pw"], "sum"),
            _conv("dw2", "sum", 16, 32, 3, group=16, strides=[2, 2]),
            _node("Sub", ["dw2", "shift"], "y"),
        ]
    )
    return _net(nodes, [1, 3, 16, 16], {**inits, "shift": np.asarray(0.5, np.float32)})


def concat_of_different_ranges() -> onnx.ModelProto:
    nodes, inits = _chain(
        [
            _conv("a", "x", 3, 4),
            _conv("b", "x", 3, 4),
            _node("Mul", ["b", "twenty"], "b20"),
            _node("Relu", ["x"], "xr"),
            # The model input itself: its QUANTIZE has its own range, so it is requantized.
            _node("Concat", ["a", "b20", "xr", "x"], "cat", axis=1),
            _conv("c", "cat", 14, 8, 1),
            _node("Max", ["c", "minus_one"], "y"),
        ]
    )
    consts = {"twenty": np.asarray(20.0, np.float32), "minus_one": np.asarray(-1.0, np.float32)}
    return _net(nodes, [1, 3, 12, 12], {**inits, **consts})


def pools_gemm_softmax() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    nodes, inits = _chain(
        [
            _conv("c", "x", 3, 16),
            _node("MaxPool", ["c"], "mp", kernel_shape=[2, 2], strides=[2, 2]),
            _node("AveragePool", ["mp"], "ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            _node("GlobalAveragePool", ["ap"], "gap"),
            _node("Flatten", ["gap"], "flat"),
            _node("Gemm", ["flat", "fc.w", "fc.b"], "logits", transB=1),
            _node("Softmax", ["logits"], "y", axis=-1),
        ]
    )
    fc = {
        "fc.w": (rng.standard_normal((10, 16)) * 2).astype(np.float32),
        "fc.b": rng.standard_normal(10).astype(np.float32),
    }
    return _net(nodes, [1, 3, 16, 16], {**inits, **fc})


def activations() -> onnx.ModelProto:
    slope = np.linspace(0.05, 0.3, 8).reshape(8, 1, 1).astype(np.float32)
    nodes, inits = _chain(
        [
            _conv("c1", "x", 3, 8),
            _node("HardSwish", ["c1"], "hs"),
            _conv("c2", "hs", 8, 8),
            _node("Sigmoid", ["c2"], "sig"),
            _node("Mul", ["c2", "sig"], "swish"),
            _node("LeakyRelu", ["swish"], "lr", alpha=0.1),
            _node("PRelu", ["lr", "slope"], "pr"),
            _conv("c3", "pr", 8, 8),
            _node("Tanh", ["c3"], "th"),
            _node("Add", ["th", "c3"], "y"),
        ]
    )
    return _net(nodes, [1, 3, 12, 12], {**inits, "slope": slope})


def resize_and_layout() -> onnx.ModelProto:
    ints = {
        "pads": np.asarray([0, 0, 1, 2, 0, 0, 1, 0], np.int64),
        "starts": np.asarray([1, 1], np.int64),
        "ends": np.asarray([15, 17], np.int64),
        "axes": np.asarray([2, 3], np.int64),
        "shape": np.asarray([1, 8, -1], np.int64),
    }
    scales = {"s2": np.asarray([1, 1, 2, 2], np.float32)}
    nodes, inits = _chain(
        [
            _conv("c1", "x", 3, 8, strides=[2, 2]),
            _node("Resize", ["c1", "", "s2"], "up", mode="nearest"),
            _conv("c2", "up", 8, 8),
            _node("Resize", ["c2", "", "s2"], "up2", mode="linear"),
            _node("Pad", ["up2", "pads"], "pad"),
            _node("Slice", ["pad", "starts", "ends", "axes"], "sl"),
            _node("ReduceMean", ["sl"], "mean", axes=[1], keepdims=1),
            _node("Sub", ["sl", "mean"], "centred"),
            _node("Transpose", ["centred"], "tr", perm=[0, 1, 3, 2]),
            _node("Reshape", ["tr", "shape"], "y"),
        ]
    )
    return _net(nodes, [1, 3, 16, 16], {**inits, **scales, **ints})


def transposed_conv() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    weight = (rng.standard_normal((8, 4, 2, 2)) / 4).astype(np.float32)
    nodes, inits = _chain(
        [
            _conv("c", "x", 3, 8),
            _node("ConvTranspose", ["c", "t.w", "t.b"], "t", strides=[2, 2]),
            _node("Relu", ["t"], "y"),
        ]
    )
    return _net(nodes, [1, 3, 8, 8], {**inits, "t.w": weight, "t.b": np.ones(4, np.float32)})


# name -> (builder, ops that must be in the file, SQNR floor in dB): each floor is 3 dB under
# what LiteRT 2.3 (XNNPACK) measures. Softmax loses most: its int8 kernel reads logits
# quantized to ~1/6 here, and exp() turns that step into a relative error of the probability.
SMALL_NETS = {
    "conv_bn_relu6": (conv_bn_relu6, {"CONV_2D"}, 35),
    "depthwise_residual": (depthwise_residual, {"DEPTHWISE_CONV_2D", "ADD", "SUB"}, 27),
    "concat_of_different_ranges": (
        concat_of_different_ranges,
        {"CONCATENATION", "MAXIMUM", "MUL"},
        27,
    ),
    "pools_gemm_softmax": (
        pools_gemm_softmax,
        {"MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"},
        22,
    ),
    "activations": (
        activations,
        {"HARD_SWISH", "LOGISTIC", "MUL", "LEAKY_RELU", "PRELU", "TANH"},
        26,
    ),
    "resize_and_layout": (
        resize_and_layout,
        {"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "PAD", "SLICE", "MEAN", "TRANSPOSE"},
        26,
    ),
    "transposed_conv": (transposed_conv, {"TRANSPOSE_CONV"}, 34),
}


@pytest.mark.parametrize("name", SMALL_NETS)
def test_small_nets_run_in_int8_close_to_fp32(name: str) -> None:
    build, expected_ops, floor = SMALL_NETS[name]
    model = build()
    result = quantized(model)
    assert expected_ops <= set(result.converted.op_counts), result.converted.op_counts
    assert result.fallback_ops == []
    assert Flat(result.converted.flatbuffer).interior_float_ops() == []
    assert held_out_sqnr(model, result.converted) > floor


def test_int8_only_kernel_rules_hold_in_the_file() -> None:
    """Same parameters in and out of concatenation and pooling (requantized where the inputs
    differ), SOFTMAX 1/256 and -128."""
    flat = Flat(quantized(pools_gemm_softmax()).converted.flatbuffer)

    def params(index: int) -> tuple[float, int]:
        q = flat.tensor(index).quantization
        return float(q.scale[0]), int(q.zeroPoint[0])

    by_code = {code: (inputs, outputs) for code, inputs, outputs in flat.ops}
    for code in ("MAX_POOL_2D", "AVERAGE_POOL_2D", "RESHAPE"):
        inputs, outputs = by_code[code]
        assert params(inputs[0]) == params(outputs[0]), code
    assert params(by_code["SOFTMAX"][1][0]) == (1 / 256, -128)

    flat = Flat(quantized(concat_of_different_ranges()).converted.flatbuffer)
    inputs, outputs = next((i, o) for c, i, o in flat.ops if c == "CONCATENATION")
    assert all(params(i) == params(outputs[0]) for i in inputs)
    int8 = flat.schema.TensorType.INT8
    requantized = [i for c, i, o in flat.ops if c == "QUANTIZE" and flat.type_of(i[0]) == int8]
    assert len(requantized) == 1  # the model input; the other branches take the output's range


def test_ops_left_in_float_are_listed() -> None:
    """DIV has no int8 kernel: it stays float between DEQUANTIZE and QUANTIZE. A SOFTMAX
    between two DIVs stays float too (in int8 it would only add rounding). Both are listed;
    the convs and the MUL/ADD that feed a DIV stay int8."""
    nodes, inits = _chain(
        [
            _conv("c1", "x", 3, 8),
            _node("Mul", ["c1", "c1"], "sq"),
            _node("Add", ["sq", "one"], "den"),
            _node("Div", ["c1", "den"], "ratio"),
            _node("Softmax", ["ratio"], "soft", axis=1),
            _node("Div", ["soft", "den"], "scaled"),
            _conv("c2", "scaled", 8, 8),
            _node("Relu", ["c2"], "y"),
        ]
    )
    model = _net(nodes, [1, 3, 12, 12], {**inits, "one": np.asarray(1.0, np.float32)})
    result = quantized(model)
    assert result.fallback_ops == ["DIV", "SOFTMAX"]
    flat = Flat(result.converted.flatbuffer)
    assert flat.interior_float_ops() == ["DIV", "SOFTMAX", "DIV"]
    # Read back from the file alone, as for onnx2tf's int8 files: the same list.
    assert float_op_types(result.converted.flatbuffer) == result.fallback_ops
    counts = result.converted.op_counts
    assert counts["MUL"] == 1 and counts["ADD"] == 1 and counts["CONV_2D"] == 2
    # I/O, plus c1 and den into the DIVs; I/O, plus the DIV's result into c2.
    assert counts["DEQUANTIZE"] == 3 and counts["QUANTIZE"] == 2
    assert held_out_sqnr(model, result.converted) > 29  # measured 32.3


# --- the converter's interface -----------------------------------------------------------------


def _save(model: onnx.ModelProto, tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def test_converter_writes_int8_file_that_the_runner_loads(tmp_path: Path) -> None:
    model = pools_gemm_softmax()
    np.savez(tmp_path / "cal.npz", **calibration(model))
    out = tmp_path / "out"
    out.mkdir()
    converter = TfliteConverter()
    assert "int8" in converter.precisions and "int8" in TfliteBackend.precisions
    options = ConversionOptions("int8", calibration=tmp_path / "cal.npz")
    files = converter.convert(_save(model, tmp_path), out, options)
    assert files == ["model.tflite", "io.json"]
    assert converter.last_quant is not None
    assert set(converter.last_quant) == {"method", "granularity", "fp32_fallback_ops"}
    assert converter.last_quant["fp32_fallback_ops"] == []
    assert converter.last_quant["granularity"] == "per-channel"
    io = json.loads((out / "io.json").read_text())
    assert io["inputs"][0]["perm"] == [0, 2, 3, 1]
    assert "int8" in converter.last_log

    backend = TfliteBackend()
    backend.load(str(out / "model.tflite"), 1, "int8", {})
    x = normal(input_shape(model), HELD_OUT[0])
    got = backend.make_stream({"x": x})()[0]
    assert sqnr_db(got, ort_output(model, x)) > 30

    # The fp32 file from the same converter is untouched by the int8 work.
    fp32_out = tmp_path / "fp32"
    fp32_out.mkdir()
    converter.convert(_save(model, tmp_path), fp32_out, ConversionOptions())
    assert converter.last_quant is None
    assert (fp32_out / "model.tflite").read_bytes() == convert_model(model, {}).flatbuffer


@pytest.mark.parametrize(
    ("arrays", "shapes", "message"),
    [
        ({"image": np.zeros((4, 1, 3, 16, 16), np.float32)}, {}, "no array for input 'x'"),
        ({"x": np.zeros((4, 1, 3, 8, 8), np.float32)}, {}, r"have shape \[1, 3, 8, 8\]"),
        (
            {"x": np.zeros((4, 1, 3, 8, 8), np.float32)},
            {"x": [1, 3, 16, 16]},
            r"samples have shape \[1, 3, 8, 8\], the model wants \[1, 3, 16, 16\]",
        ),
        ({"x": np.full((2, 1, 3, 16, 16), np.nan, np.float32)}, {}, "NaN"),
    ],
)
def test_bad_calibration_set_is_one_line(tmp_path: Path, arrays, shapes, message) -> None:
    np.savez(tmp_path / "cal.npz", **arrays)
    options = ConversionOptions("int8", shapes, calibration=tmp_path / "cal.npz")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ConversionError, match=message) as caught:
        TfliteConverter().convert(_save(conv_bn_relu6(), tmp_path), out, options)
    assert caught.value.kind == "failed"
    assert "\n" not in caught.value.message
