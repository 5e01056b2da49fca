"""The reader's ops one at a time, in the forms edgebench's writer never emits (SAME transposed
convolutions, slice masks, softmax beta, fused TANH, squeeze, ...): small .tflite files built
with the writer's ModelBuilder, run in LiteRT and as ONNX twins on ONNX Runtime."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fakes.tflite_runs import assert_fp32_close, run_litert, run_onnx

pytest.importorskip(
    "ai_edge_litert", reason="the .tflite schema is missing: pip install 'edgebench[tflite]'"
)
pytest.importorskip("onnxruntime", reason="pip install 'edgebench[onnxruntime]'")

from edgebench.converters.tflite.model_builder import ModelBuilder
from edgebench.converters.tflite_import import tflite_to_onnx

SAME, VALID = 0, 1
TANH, RELU_N1_TO_1, RELU6 = 4, 2, 3
RNG = np.random.default_rng(7)


def weights(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(max(np.prod(shape[1:]), 1))).astype(np.float32)


# Each case: (input NHWC shape, build(builder, x, features) -> the output tensor). ``features``
# is a 1x1 convolution of the input, so the op under test reads a tensor the reader holds NCHW.
Build = Callable[[ModelBuilder, int, int], int]


def _op(b: ModelBuilder, code: str, inputs: list[int], shape, options=None, **fields) -> int:
    out = b.tensor(code.lower(), shape)
    b.op(code, inputs, [out], options, **fields)
    return out


def _int32(b: ModelBuilder, values, name: str) -> int:
    return b.constant(np.asarray(values, np.int32), name)


def transpose_conv(padding: int, out_hw: int, stride: int = 2) -> Build:
    def build(b: ModelBuilder, _x: int, f: int) -> int:
        shape = [1, out_hw, out_hw, 4]
        inputs = [_int32(b, shape, "out_shape"), b.constant(weights(4, 3, 3, 6), "w"), f]
        inputs.append(b.constant(weights(4), "bias"))
        out = b.tensor("deconv", shape)
        b.op(
            "TRANSPOSE_CONV",
            inputs,
            [out],
            "TransposeConvOptions",
            version=3,
            padding=padding,
            strideH=stride,
            strideW=stride,
        )
        return out

    return build


def conv(padding: int, stride: int, dilation: int, activation: int, out_hw: int) -> Build:
    def build(b: ModelBuilder, _x: int, f: int) -> int:
        w, bias = b.constant(weights(5, 3, 3, 6), "w"), b.constant(weights(5), "b")
        return _op(
            b,
            "CONV_2D",
            [f, w, bias],
            [1, out_hw, out_hw, 5],
            "Conv2DOptions",
            padding=padding,
            strideH=stride,
            strideW=stride,
            dilationHFactor=dilation,
            dilationWFactor=dilation,
            fusedActivationFunction=activation,
        )

    return build


def depthwise(b: ModelBuilder, _x: int, f: int) -> int:
    w, bias = b.constant(weights(1, 3, 3, 12), "w"), b.constant(weights(12), "b")
    return _op(
        b,
        "DEPTHWISE_CONV_2D",
        [f, w, bias],
        [1, 4, 4, 12],
        "DepthwiseConv2DOptions",
        padding=SAME,
        strideH=2,
        strideW=2,
        depthMultiplier=2,
    )


def strided_slice(b: ModelBuilder, _x: int, f: int) -> int:
    """[0, ::-2, 1:, 2] with begin/end masks and a shrunk batch and channel axis."""
    inputs = [f, _int32(b, [0, 0, 1, 2], "begin"), _int32(b, [1, 0, 0, 3], "end")]
    inputs.append(_int32(b, [1, -2, 1, 1], "strides"))
    return _op(
        b,
        "STRIDED_SLICE",
        inputs,
        [4, 6],
        "StridedSliceOptions",
        beginMask=0b0010,
        endMask=0b0110,
        shrinkAxisMask=0b1001,
    )


def strided_slice_4d(b: ModelBuilder, _x: int, f: int) -> int:
    inputs = [f, _int32(b, [0, 1, -1, 0], "begin"), _int32(b, [1, 7, 0, 6], "end")]
    inputs.append(_int32(b, [1, 2, -2, 2], "strides"))
    return _op(b, "STRIDED_SLICE", inputs, [1, 3, 4, 3], "StridedSliceOptions", endMask=0b0100)


def softmax_beta(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(b, "SOFTMAX", [f], [1, 7, 7, 6], "SoftmaxOptions", beta=0.5)


def unary(code: str) -> Build:
    return lambda b, _x, f: _op(b, code, [f], [1, 7, 7, 6])


def add(activation: int) -> Build:
    def build(b: ModelBuilder, _x: int, f: int) -> int:
        bias = b.constant(weights(6), "c")
        return _op(
            b, "ADD", [f, bias], [1, 7, 7, 6], "AddOptions", fusedActivationFunction=activation
        )

    return build


def squeeze_expand(b: ModelBuilder, _x: int, f: int) -> int:
    mean = _op(b, "MEAN", [f, _int32(b, [1, 2], "axes")], [1, 1, 1, 6], "ReducerOptions")
    b.ops[-1].fields["keepDims"] = True
    flat = _op(b, "SQUEEZE", [mean], [1, 6], "SqueezeOptions", squeezeDims=[1, 2])
    return _op(b, "EXPAND_DIMS", [flat, _int32(b, 1, "axis")], [1, 1, 6])


def mean_keep_channels(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(
        b, "MEAN", [f, _int32(b, [3], "axes")], [1, 7, 7, 1], "ReducerOptions", keepDims=True
    )


def mean_drop_spatial(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(b, "MEAN", [f, _int32(b, [1, 2], "axes")], [1, 6], "ReducerOptions", keepDims=False)


def fully_connected(keep: bool) -> Build:
    def build(b: ModelBuilder, _x: int, f: int) -> int:
        source = f
        if keep:
            source = _op(b, "RESHAPE", [f], [1, 49, 6], "ReshapeOptions", newShape=[1, 49, 6])
        w, bias = b.constant(weights(5, 6 if keep else 294), "w"), b.constant(weights(5), "b")
        out = [1, 49, 5] if keep else [1, 5]
        record = b.op("FULLY_CONNECTED", [source, w, bias], [b.tensor("fc", out)])
        record.options, record.version = "FullyConnectedOptions", 5 if keep else 1
        record.fields = {"keepNumDims": keep, "fusedActivationFunction": RELU6}
        return record.outputs[0]

    return build


def pad_v2(b: ModelBuilder, _x: int, f: int) -> int:
    pads = _int32(b, [[0, 0], [1, 2], [0, 3], [1, 0]], "pads")
    value = b.constant(np.asarray([0.75], np.float32), "value")
    return _op(b, "PADV2", [f, pads, value], [1, 10, 10, 7], "PadV2Options")


def mirror_pad(b: ModelBuilder, _x: int, f: int) -> int:
    pads = _int32(b, [[0, 0], [2, 1], [1, 2], [0, 0]], "pads")
    return _op(b, "MIRROR_PAD", [f, pads], [1, 10, 10, 6], "MirrorPadOptions", mode=0)


def average_pool(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(
        b,
        "AVERAGE_POOL_2D",
        [f],
        [1, 3, 3, 6],
        "Pool2DOptions",
        padding=SAME,
        strideH=3,
        strideW=3,
        filterHeight=3,
        filterWidth=2,
    )


def resize(code: str, align: bool, half: bool, out_hw: int) -> Build:
    options = (
        "ResizeBilinearOptions" if code == "RESIZE_BILINEAR" else ("ResizeNearestNeighborOptions")
    )
    return lambda b, _x, f: _op(
        b,
        code,
        [f, _int32(b, [out_hw, out_hw + 3], "size")],
        [1, out_hw, out_hw + 3, 6],
        options,
        alignCorners=align,
        halfPixelCenters=half,
    )


def split_channels(b: ModelBuilder, _x: int, f: int) -> int:
    parts = [b.tensor(f"part{i}", [1, 7, 7, 2]) for i in range(3)]
    b.op("SPLIT", [_int32(b, 3, "axis"), f], parts, "SplitOptions", numSplits=3)
    return _op(b, "MUL", parts[::2], [1, 7, 7, 2], "MulOptions")


def transpose_held(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(b, "TRANSPOSE", [f, _int32(b, [0, 3, 1, 2], "perm")], [1, 6, 7, 7])


def concat_with_constant(b: ModelBuilder, _x: int, f: int) -> int:
    extra = b.constant(weights(1, 7, 7, 2), "extra")
    return _op(b, "CONCATENATION", [f, extra], [1, 7, 7, 8], "ConcatenationOptions", axis=-1)


def pack_unpack(b: ModelBuilder, _x: int, f: int) -> int:
    rows = [b.tensor(f"row{i}", [1, 7, 6]) for i in range(7)]
    b.op("UNPACK", [f], rows, "UnpackOptions", num=7, axis=1)
    return _op(b, "PACK", rows[::2], [1, 7, 4, 6], "PackOptions", valuesCount=4, axis=2)


def depth_to_space(b: ModelBuilder, _x: int, f: int) -> int:
    deep = _op(b, "SPACE_TO_DEPTH", [f], [1, 3, 3, 24], "SpaceToDepthOptions", blockSize=2)
    return _op(b, "DEPTH_TO_SPACE", [deep], [1, 6, 6, 6], "DepthToSpaceOptions", blockSize=2)


def arg_max(b: ModelBuilder, _x: int, f: int) -> int:
    out = b.tensor("argmax", [1, 7, 7], np.int32)
    b.op("ARG_MAX", [f, _int32(b, [3], "axis")], [out], "ArgMaxOptions", outputType=2)
    return out


def l2_normalization(b: ModelBuilder, _x: int, f: int) -> int:
    return _op(b, "L2_NORMALIZATION", [f], [1, 7, 7, 6], "L2NormOptions")


CASES: dict[str, tuple[list[int], Build]] = {
    "transpose_conv_same_even": ([1, 7, 7, 3], transpose_conv(SAME, 14)),
    "transpose_conv_same_odd": ([1, 7, 7, 3], transpose_conv(SAME, 13)),
    "transpose_conv_valid": ([1, 7, 7, 3], transpose_conv(VALID, 15)),
    "conv_same_stride2": ([1, 7, 7, 3], conv(SAME, 2, 1, 0, 4)),
    "conv_fused_tanh_ignored_as_litert_does": ([1, 7, 7, 3], conv(VALID, 1, 1, TANH, 5)),
    "conv_same_dilated": ([1, 7, 7, 3], conv(SAME, 1, 2, 0, 7)),
    "conv_same_stride2_dilated": ([1, 7, 7, 3], conv(SAME, 2, 2, 0, 4)),
    "conv_valid_stride2": ([1, 7, 7, 3], conv(VALID, 2, 1, 0, 3)),
    "depthwise_multiplier_2": ([1, 7, 7, 3], depthwise),
    "strided_slice_shrink": ([1, 7, 7, 3], strided_slice),
    "strided_slice_4d": ([1, 7, 7, 3], strided_slice_4d),
    "softmax_beta": ([1, 7, 7, 3], softmax_beta),
    "log_softmax": ([1, 7, 7, 3], unary("LOG_SOFTMAX")),
    "hard_swish": ([1, 7, 7, 3], unary("HARD_SWISH")),
    "logistic": ([1, 7, 7, 3], unary("LOGISTIC")),
    "relu6": ([1, 7, 7, 3], unary("RELU6")),
    "add_relu_n1_to_1": ([1, 7, 7, 3], add(RELU_N1_TO_1)),
    "add_fused_tanh_ignored_as_litert_does": ([1, 7, 7, 3], add(TANH)),
    "squeeze_expand_dims": ([1, 7, 7, 3], squeeze_expand),
    "mean_keep_channels": ([1, 7, 7, 3], mean_keep_channels),
    "mean_drop_spatial": ([1, 7, 7, 3], mean_drop_spatial),
    "fully_connected_flatten": ([1, 7, 7, 3], fully_connected(False)),
    "fully_connected_keep_dims": ([1, 7, 7, 3], fully_connected(True)),
    "pad_v2": ([1, 7, 7, 3], pad_v2),
    "mirror_pad": ([1, 7, 7, 3], mirror_pad),
    "average_pool_same": ([1, 7, 7, 3], average_pool),
    "bilinear_half_pixel": ([1, 7, 7, 3], resize("RESIZE_BILINEAR", False, True, 12)),
    "bilinear_align": ([1, 7, 7, 3], resize("RESIZE_BILINEAR", True, False, 12)),
    "nearest_half_pixel": ([1, 7, 7, 3], resize("RESIZE_NEAREST_NEIGHBOR", False, True, 11)),
    "nearest_align": ([1, 7, 7, 3], resize("RESIZE_NEAREST_NEIGHBOR", True, False, 16)),
    "nearest_down": ([1, 7, 7, 3], resize("RESIZE_NEAREST_NEIGHBOR", False, False, 3)),
    "split_channels": ([1, 7, 7, 3], split_channels),
    "transpose_held": ([1, 7, 7, 3], transpose_held),
    "concat_constant": ([1, 7, 7, 3], concat_with_constant),
    "pack_unpack": ([1, 7, 7, 3], pack_unpack),
    "space_to_depth_and_back": ([1, 6, 6, 3], depth_to_space),
    "arg_max_channels": ([1, 7, 7, 3], arg_max),
    "l2_normalization": ([1, 7, 7, 3], l2_normalization),
    "square": ([1, 7, 7, 3], unary("SQUARE")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_litert(tmp_path: Path, case: str) -> None:
    shape, build = CASES[case]
    b = ModelBuilder()
    x = b.tensor("image", shape)
    features = _op(
        b,
        "CONV_2D",
        [x, b.constant(weights(6, 1, 1, shape[3]), "w0"), b.constant(weights(6), "b0")],
        [*shape[:3], 6],
        "Conv2DOptions",
        padding=VALID,
        strideH=1,
        strideW=1,
    )
    out = build(b, x, features)
    source = tmp_path / f"{case}.tflite"
    source.write_bytes(b.serialize([x], [out], case))
    report = tflite_to_onnx(source, tmp_path / f"{case}.onnx")
    image = RNG.standard_normal(shape).astype(np.float32)
    want = run_litert(source.read_bytes(), {"image": image})
    (got,) = run_onnx(tmp_path / f"{case}.onnx", {"image": image})
    (output,) = report.outputs
    assert_fp32_close(got, want[output.name])
    assert any("TANH" in w for w in report.warnings) == ("tanh" in case)


def test_an_input_read_in_both_orders_is_transposed_once(tmp_path: Path) -> None:
    """A RESHAPE reads the NHWC input itself; a CONV_2D reads the one NCHW copy of it."""
    import onnx

    b = ModelBuilder()
    x = b.tensor("image", [1, 4, 5, 3])
    flat = _op(b, "RESHAPE", [x, _int32(b, [1, 60], "shape")], [1, 60], "ReshapeOptions")
    w, bias = b.constant(weights(2, 1, 1, 3), "w"), b.constant(weights(2), "b")
    features = _op(b, "CONV_2D", [x, w, bias], [1, 4, 5, 2], "Conv2DOptions", strideH=1, strideW=1)
    source = tmp_path / "both.tflite"
    source.write_bytes(b.serialize([x], [flat, features], "both"))
    report = tflite_to_onnx(source, tmp_path / "both.onnx")
    nodes = onnx.load(tmp_path / "both.onnx").graph.node
    reading_input = sorted(n.op_type for n in nodes if "image" in n.input)
    assert reading_input == ["Reshape", "Transpose"]
    image = RNG.standard_normal([1, 4, 5, 3]).astype(np.float32)
    want = run_litert(source.read_bytes(), {"image": image})
    got = run_onnx(tmp_path / "both.onnx", {"image": image})
    for tensor, out in zip(report.outputs, got, strict=True):
        assert_fp32_close(out, want[tensor.name])
