"""ncnn int8: pnnx's fp32 model rewritten by edgebench's writer into ncnn's int8 format,
calibrated on a calibration set, then run by the ncnn wheel against ONNX Runtime fp32.

Needs the ncnn toolchain (pnnx) where edgebench looks for it: `edgebench toolchains install ncnn`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.toolchains import converter_or_skip
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters.base import ConversionError, ConversionOptions
from edgebench.converters.ncnn_converter import NcnnConverter
from edgebench.converters.ncnn_model_file import FP32_TAG, INT8_TAG, read_model
from edgebench.models import build_model
from edgebench.runners.backends.ncnn_backend import NcnnBackend
from edgebench.runners.protocol.errors import BackendError
from edgebench.runners.protocol.ncnn_param import int8_layers

ncnn = pytest.importorskip("ncnn")
ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.toolchains

QUANTIZED = ("Convolution", "ConvolutionDepthWise", "InnerProduct")
#: SQNR floors against ONNX Runtime fp32 on the held-out inputs below. Measured here (AVX2):
#: 36.2 dB (small model), 32.0 dB (mobilenetv2). Writer bugs measured on the same inputs:
#: input scales 4x too large (clipping) 2.7 / 2.6 dB; 6-bit weights in every layer 29.8 /
#: 22.2 dB. The floors sit 4-5 dB under the measured figures, for other CPUs' int8 kernels,
#: and above the 6-bit bug.
SMALL_SQNR_DB = 31.0
MOBILENET_SQNR_DB = 28.0
# Top-1 must agree on every sample: on these inputs the gap between the two best reference
# scores is at least 2.5x the largest int8 output error (0.09 vs 0.008; 0.14 vs 0.058).


@pytest.fixture(scope="module")
def converter() -> NcnnConverter:
    converter = converter_or_skip("ncnn")
    assert isinstance(converter, NcnnConverter)
    return converter


def _small_model() -> onnx.ModelProto:
    """conv 3x3 + relu (ncnn's int8 Winograd path), depthwise 3x3 s2 + relu, max pool,
    conv 1x1 + relu, global average pool, gemm: batch 1, 3x32x32."""
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int, std: float = 0.2) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.normal(0, std, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node(
            "Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16, strides=[2, 2]
        ),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p2", "w3", "b3"], ["c3"]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    weights = [
        weight("w1", 16, 3, 3, 3),
        weight("b1", 16, std=0.1),
        weight("w2", 16, 1, 3, 3, std=0.3),
        weight("b2", 16, std=0.1),
        weight("w3", 32, 16, 1, 1, std=0.1),
        weight("b3", 32, std=0.1),
        weight("wf", 10, 32, std=0.3),
        weight("bf", 10, std=0.1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _samples(shape: list[int], count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, (count, *shape)).astype(np.float32)


def _convert(converter, model_path, out, **options) -> Path:
    out.mkdir()
    converter.convert(model_path, out, ConversionOptions(**options))
    return out


@pytest.fixture(scope="module")
def small(converter, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("small")
    model_path = root / "small.onnx"
    onnx.save(_small_model(), str(model_path))
    calibration = root / "calibration.npz"
    np.savez(calibration, x=_samples([1, 3, 32, 32], 16, seed=1))
    fp32 = _convert(converter, model_path, root / "fp32")
    assert converter.last_quant is None
    int8 = _convert(converter, model_path, root / "int8", precision="int8", calibration=calibration)
    return {"model": model_path, "fp32": fp32, "int8": int8, "quant": converter.last_quant}


def _weight_bytes(folder: Path) -> int:
    model = read_model(folder / "model.param", folder / "model.bin")
    layers = zip(model.layers, model.blobs, strict=True)
    return sum(blobs[0].size for layer, blobs in layers if layer.type in QUANTIZED)


def test_int8_artifact_has_ncnn_int8_layers(small):
    assert small["quant"] == {
        "method": small["quant"]["method"],
        "granularity": "per-channel weights, per-tensor activations",
        "fp32_fallback_ops": ["Pooling"],  # max pool and global average pool
    }
    assert "least squared error" in small["quant"]["method"]
    fp32 = read_model(small["fp32"] / "model.param", small["fp32"] / "model.bin")
    int8 = read_model(small["int8"] / "model.param", small["int8"] / "model.bin")
    assert [layer.type for layer in int8.layers] == [layer.type for layer in fp32.layers]
    readers = {}  # blob -> the layers that read it
    for layer in int8.layers:
        for blob in layer.bottoms:
            readers.setdefault(blob, []).append(layer)
    input_scales = {}  # layer name -> its int8 input scale
    for layer, blobs in zip(int8.layers, int8.blobs, strict=True):
        if layer.type in QUANTIZED:
            input_scales[layer.name] = int8.floats(blobs[3])[0]
    requantized = 0
    layers = zip(fp32.layers, int8.layers, fp32.blobs, int8.blobs, strict=True)
    for layer32, layer8, blobs32, blobs8 in layers:
        if layer8.type not in QUANTIZED:
            assert layer8.line == layer32.line and blobs8 == blobs32
            continue
        # A convolution whose output only another convolution reads writes int8 for it.
        after = readers.get(layer8.tops[0], [])
        requantize = layer8.type != "InnerProduct" and [r.type for r in after] in (
            ["Convolution"],
            ["ConvolutionDepthWise"],
        )
        depthwise = layer8.type == "ConvolutionDepthWise"
        assert layer8.int_param(8, 0) == (1 if depthwise else 2) + 100 * requantize, layer8.line
        assert 8 not in layer32.params
        # What ncnn itself loaded: int8 weights, the fp32 bias, weight scales, one input scale,
        # and for requantize the output scale: the next layer's input scale.
        weights, bias, weight_scales, input_scale, *output_scale = blobs8
        assert (blobs32[0].tag, weights.tag) == (FP32_TAG, INT8_TAG)
        size_param = 2 if layer8.type == "InnerProduct" else 6  # weight_data_size, elements
        assert weights.count == blobs32[0].count == layer8.int_param(size_param, 0)
        assert bias.tag is None and int8.floats(bias).tolist() == fp32.floats(blobs32[1]).tolist()
        rows = layer8.int_param(7, 1) if depthwise else layer8.int_param(0, 0)
        assert weight_scales.count == rows
        assert input_scale.count == 1 and int8.floats(input_scale)[0] > 0
        if requantize:
            assert int8.floats(output_scale[0])[0] == input_scales[after[0].name]
            requantized += 1
        else:
            assert not output_scale
        _check_weight_scales(layer8, fp32.floats(blobs32[0]), int8, weights, weight_scales)
    assert requantized == 1  # the 3x3 conv into the depthwise one
    ratio = _weight_bytes(small["fp32"]) / _weight_bytes(small["int8"])
    assert 3.5 < ratio <= 4.0, ratio


def _check_weight_scales(layer, original, int8, weights, weight_scales) -> None:
    """ncnn's convention: q = round(w * scale), scale = levels / absmax per output row; levels
    are 31 for a 3x3 stride-1 Convolution (int8 Winograd needs 6-bit weights), else 127."""
    scales = int8.floats(weight_scales)
    rows = original.reshape(len(scales), -1)
    stored = np.frombuffer(int8.weights, np.int8, weights.count, weights.data_offset)
    stored = stored.reshape(rows.shape)
    kernel_stride = (layer.int_param(1, 0), layer.int_param(3, 1))
    levels = 31 if layer.type == "Convolution" and kernel_stride == (3, 1) else 127
    assert np.allclose(scales, levels / np.abs(rows).max(axis=1), rtol=1e-6)
    assert np.abs(stored).max(axis=1).tolist() == [levels] * len(scales)
    assert np.abs(stored / scales[:, None] - rows).max() <= 0.5 / scales.min() + 1e-7


def _sqnr_db(outputs: list[np.ndarray], references: list[np.ndarray]) -> float:
    signal = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in references)
    pairs = zip(outputs, references, strict=True)
    noise = sum(float(np.sum((o - r).astype(np.float64) ** 2)) for o, r in pairs)
    return 10 * math.log10(signal / noise)


def _compare(model_path: Path, folder: Path, samples: np.ndarray) -> tuple[float, float]:
    """SQNR (dB) and top-1 agreement of the int8 artifact run by edgebench's ncnn backend
    against ONNX Runtime fp32, over ``samples``."""
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    backend = NcnnBackend()
    backend.load(str(folder / "model.param"), 1, "int8", {})
    try:
        outputs = [backend.make_stream({name: x})()[0] for x in samples]
    finally:
        backend.close()
    references = [session.run(None, {name: x})[0] for x in samples]
    agree = np.mean([o.argmax() == r.argmax() for o, r in zip(outputs, references, strict=True)])
    return _sqnr_db(outputs, references), float(agree)


def test_int8_small_model_matches_onnxruntime(small):
    sqnr, top1 = _compare(small["model"], small["int8"], _samples([1, 3, 32, 32], 8, seed=2))
    print(f"small int8 vs ORT fp32: SQNR {sqnr:.1f} dB, top-1 {top1:.2f}")
    assert sqnr > SMALL_SQNR_DB
    assert top1 == 1.0


def test_the_writers_int8_layers_are_found_and_not_run_in_float(small):
    assert int8_layers(str(small["fp32"] / "model.param")) == []
    found = int8_layers(str(small["int8"] / "model.param"))
    types = ["Convolution", "ConvolutionDepthWise", "Convolution", "InnerProduct"]
    assert [entry.split()[0] for entry in found] == types  # every conv and the gemm
    # At fp32 ncnn would read the int8 weights as floats (a crash in load_model on arm64).
    backend = NcnnBackend()
    with pytest.raises(BackendError) as refused:
        backend.load(str(small["int8"] / "model.param"), 1, "fp32", {})
    assert refused.value.kind == "model_load"
    assert refused.value.message.startswith("model.param is an int8 ncnn model (Convolution ")
    assert refused.value.message.endswith("it runs only at int8")


def test_int8_mobilenetv2_matches_onnxruntime(converter, tmp_path):
    model_path = tmp_path / "mobilenetv2.onnx"
    onnx.save(build_model("mobilenetv2"), str(model_path))
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, input=_samples([1, 3, 224, 224], 8, seed=1))
    out = _convert(
        converter, model_path, tmp_path / "int8", precision="int8", calibration=calibration
    )
    assert converter.last_quant["fp32_fallback_ops"] == ["BinaryOp", "Pooling"]
    param = (out / "model.param").read_text()
    # 35 convolutions, 17 depthwise, the classifier. Requantizing: every depthwise into its
    # projection, 19 convolutions into the next (the rest feed a Split or the pooling).
    assert len(re.findall(r" 8=(1|2|101|102)\b", param)) == 53
    assert (param.count(" 8=101"), param.count(" 8=102")) == (17, 19)
    sqnr, top1 = _compare(model_path, out, _samples([1, 3, 224, 224], 4, seed=2))
    print(f"mobilenetv2 int8 vs ORT fp32: SQNR {sqnr:.1f} dB, top-1 {top1:.2f}")
    assert sqnr > MOBILENET_SQNR_DB
    assert top1 == 1.0


def test_fp32_artifact_is_untouched(small):
    param = (small["fp32"] / "model.param").read_text()
    assert " 8=" not in param
    io = json.loads((small["fp32"] / "io.json").read_text())
    assert io == json.loads((small["int8"] / "io.json").read_text())


@pytest.mark.parametrize(
    ("arrays", "expected"),
    [
        ({"image": np.zeros((2, 1, 3, 32, 32), np.float32)}, "has no array for input 'x'"),
        ({"x": np.zeros((2, 3, 32, 32), np.float32)}, "samples have shape [3, 32, 32]"),
    ],
    ids=["missing-input", "wrong-shape"],
)
def test_bad_calibration_set_fails_in_one_line(converter, small, tmp_path, arrays, expected):
    calibration = tmp_path / "bad.npz"
    np.savez(calibration, **arrays)
    out = tmp_path / "out"
    with pytest.raises(ConversionError) as info:
        _convert(converter, small["model"], out, precision="int8", calibration=calibration)
    assert info.value.kind == "failed"
    assert expected in info.value.message and "\n" not in info.value.message
    assert str(calibration) in info.value.message


def test_int8_without_calibration_set_fails(converter, small, tmp_path):
    with pytest.raises(ConversionError) as info:
        _convert(converter, small["model"], tmp_path / "out", precision="int8")
    assert info.value.kind == "failed" and "--calibration" in info.value.message
