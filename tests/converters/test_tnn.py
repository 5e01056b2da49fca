"""The ONNX -> TNN converter, checked by reading its files back and executing them with NumPy."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fakes.tnn_checking.reader import TnnModel, parse_model, read_model
from fakes.tnn_checking.reference import run_model
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters.base import ConversionError, ConversionOptions
from edgebench.converters.tnn.writer import convert_model
from edgebench.converters.tnn_converter import TnnConverter
from edgebench.models import build_model

BUILTINS = ("mobilenetv2", "resnet50", "vit-tiny", "detector")
MAGIC_V2 = 4206624772


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def seeded_input(shape) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


@dataclass
class Converted:
    onnx_model: onnx.ModelProto
    out_dir: Path
    files: list[str]
    tnn: TnnModel
    convert_seconds: float


@pytest.fixture(scope="module")
def builtin(tmp_path_factory: pytest.TempPathFactory):
    """Each built-in model converted once per module (resnet50 takes the longest)."""
    cache: dict[str, Converted] = {}

    def get(name: str) -> Converted:
        if name not in cache:
            model = build_model(name)
            root = tmp_path_factory.mktemp(name)
            onnx.save(model, str(root / "model.onnx"))
            out_dir = root / "tnn"
            out_dir.mkdir()
            start = time.perf_counter()
            files = TnnConverter().convert(root / "model.onnx", out_dir, ConversionOptions())
            seconds = time.perf_counter() - start
            tnn = read_model(out_dir / files[0], out_dir / files[1])
            cache[name] = Converted(model, out_dir, files, tnn, seconds)
        return cache[name]

    return get


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_matches_onnxruntime(builtin, name: str) -> None:
    converted = builtin(name)
    tnn = converted.tnn
    x = seeded_input(tnn.inputs[0].dims)
    start = time.perf_counter()
    got = run_model(tnn, {tnn.inputs[0].name: x})[tnn.outputs[0]]
    run_seconds = time.perf_counter() - start
    want = ort_run(converted.onnx_model, {tnn.inputs[0].name: x})[0]
    diff = float(np.abs(got - want).max())
    scale = float(np.abs(want).max())
    print(
        f"\n{name}: max|diff| {diff:.3g} (output scale {scale:.3g}), "
        f"convert {converted.convert_seconds:.2f}s, reference run {run_seconds:.2f}s"
    )
    assert got.shape == want.shape
    assert diff < 1e-3 * max(scale, 1.0)
    assert got.reshape(-1).argmax() == want.reshape(-1).argmax()


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_headers_and_counts(builtin, name: str) -> None:
    converted = builtin(name)
    assert converted.files == ["model.tnnproto", "model.tnnmodel"]
    text = (converted.out_dir / "model.tnnproto").read_text()
    lines = text.splitlines()
    header = lines[0].strip('"').split()
    assert header[0] == "1" and header[2] == "1" and int(header[3]) == MAGIC_V2
    assert lines[1] == f'"input 4 {" ".join(map(str, converted.tnn.inputs[0].dims))} 0 ,"'
    assert int(header[1]) == len(lines[2].strip('" ,').split()) == converted.tnn.blob_count
    assert int(lines[4].strip('" ,')) == len(lines) - 5 == len(converted.tnn.layers)
    assert all(line.startswith('"') and line.endswith(',"') for line in lines)
    data = (converted.out_dir / "model.tnnmodel").read_bytes()
    magic, resources = struct.unpack("<Ii", data[:8])
    assert magic == MAGIC_V2
    assert resources == len(converted.tnn.resources)


@pytest.mark.parametrize("name", ("mobilenetv2", "vit-tiny", "detector"))
def test_conversion_is_deterministic(builtin, name: str) -> None:
    converted = builtin(name)
    again = convert_model(build_model(name))
    assert again.proto == (converted.out_dir / "model.tnnproto").read_text()
    assert again.model == (converted.out_dir / "model.tnnmodel").read_bytes()


def test_fusions_on_builtins(builtin) -> None:
    vit_types = {layer.type for layer in builtin("vit-tiny").tnn.layers}
    assert "GELU" in vit_types and "Erf" not in vit_types and "Div" not in vit_types
    detector_types = [layer.type for layer in builtin("detector").tnn.layers]
    assert detector_types.count("Swish") == 23
    mobilenet_types = {layer.type for layer in builtin("mobilenetv2").tnn.layers}
    assert "BatchNormCxx" not in mobilenet_types and "ReLU6" in mobilenet_types


def test_fp16_weights_are_half_and_still_match() -> None:
    model = build_model("mobilenetv2")
    files = convert_model(model, precision="fp16")
    tnn = parse_model(files.proto, files.model)
    conv = tnn.resources["stem.conv"]
    assert conv["filter"].dtype == np.float16 and conv["bias"].dtype == np.float16
    x = seeded_input(tnn.inputs[0].dims)
    got = run_model(tnn, {"input": x})["output"]
    want = ort_run(model, {"input": x})[0]
    assert np.abs(got - want).max() < 2e-2 * np.abs(want).max()
    assert got.argmax() == want.argmax()


def test_converter_interface(tmp_path: Path) -> None:
    converter = TnnConverter()
    assert converter.format == "tnn" and converter.framework is None
    assert converter.precisions == ("fp32", "fp16")
    assert converter.version().startswith("edgebench-tnn-")
    assert converter.unavailable_reason() is None
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "m.onnx"))
    options = ConversionOptions(input_shapes={"x": [2, 3, 8, 5]})
    files = converter.convert(tmp_path / "m.onnx", tmp_path, options)
    tnn = read_model(tmp_path / files[0], tmp_path / files[1])
    assert tnn.inputs[0].dims == [2, 3, 8, 5]
    with pytest.raises(ConversionError) as error:
        converter.convert(tmp_path / "m.onnx", tmp_path, ConversionOptions())
    assert error.value.kind == "failed" and "input_shapes" in error.value.message


# --- small hand-made graphs -------------------------------------------------------------


def make_model(nodes, inputs, outputs, initializers=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in dict(initializers).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model: onnx.ModelProto, atol: float = 1e-5) -> TnnModel:
    """Convert, read back, execute and compare every output with onnxruntime."""
    files = convert_model(model)
    tnn = parse_model(files.proto, files.model)
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(dims, dtype=np.float32)
    got = run_model(tnn, feeds)
    want = ort_run(model, feeds)
    for output, expected in zip(model.graph.output, want, strict=True):
        actual = got[output.name]
        assert actual.shape == expected.shape, output.name
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=atol, err_msg=output.name)
    return tnn


def weights(*shape: int, seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.3).astype(np.float32)


def test_grouped_and_depthwise_conv() -> None:
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w1", "b1"],
            ["g"],
            name="grouped",
            group=2,
            pads=[1, 1, 1, 1],
            strides=[2, 2],
            dilations=[2, 1],
        ),
        helper.make_node("Conv", ["g", "w2"], ["y"], name="dw", group=8, pads=[1, 1, 1, 1]),
        helper.make_node(
            "Conv", ["x", "w3"], ["z"], name="same", auto_pad="SAME_UPPER", strides=[2, 2]
        ),
    ]
    init = {
        "w1": weights(8, 2, 3, 3),
        "b1": weights(8),
        "w2": weights(8, 1, 3, 3),
        "w3": weights(2, 4, 2, 2),
    }
    tnn = check(make_model(nodes, [("x", [1, 4, 11, 10])], ["y", "z"], init))
    grouped = next(layer for layer in tnn.layers if layer.name == "grouped")
    assert grouped.tokens == ["2", "2", "8", "3", "3", "2", "2", "1", "1", "1", "-1", "2", "1"]
    assert tnn.resources["grouped"]["filter"].shape == (8, 2, 3, 3)


def test_conv_line_and_batchnorm_folding_text() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], name="bn"),
    ]
    init = {
        "w": weights(4, 3, 3, 3),
        "s": weights(4) + 1,
        "b": weights(4, seed=2),
        "m": weights(4, seed=3),
        "v": np.abs(weights(4, seed=4)) + 0.5,
    }
    model = make_model(nodes, [("x", [1, 3, 6, 6])], ["y"], init)
    check(model)
    lines = convert_model(model).proto.splitlines()
    assert lines[5] == '"Convolution conv 1 1 x y 1 3 4 3 3 1 1 1 1 1 -1 1 1 ,"'


def test_standalone_batchnorm_and_activations() -> None:
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], name="bn"),
        helper.make_node("HardSwish", ["n"], ["h"], name="hswish"),
        helper.make_node("HardSigmoid", ["h"], ["hs"], name="hsig", alpha=0.3),
        helper.make_node("Clip", ["n", "lo"], ["c"], name="clip"),
        helper.make_node("Erf", ["c"], ["e"], name="erf"),
        helper.make_node("Sigmoid", ["e"], ["sg"], name="sig"),
        helper.make_node("Mul", ["e", "sg"], ["sw"], name="swish"),
        helper.make_node("Add", ["sw", "hs"], ["y"], name="add"),
    ]
    init = {
        "s": weights(3) + 1,
        "b": weights(3),
        "m": weights(3),
        "v": weights(3) ** 2 + 0.1,
        "lo": np.array(-0.5, np.float32),
    }
    tnn = check(make_model(nodes, [("x", [2, 3, 4, 5])], ["y"], init))
    types = [layer.type for layer in tnn.layers]
    assert types == ["BatchNormCxx", "HardSwish", "HardSigmoid", "Clip", "Erf", "Swish", "Add"]
    clip = next(layer for layer in tnn.layers if layer.type == "Clip")
    assert clip.tokens == ["-0.5", "1.79769e+308"]


def test_gemm_with_and_without_trans_b() -> None:
    nodes = [
        helper.make_node("Gemm", ["x", "wt", "c"], ["a"], name="gemm_t", transB=1, alpha=0.5),
        helper.make_node("Gemm", ["x", "w"], ["b"], name="gemm", beta=2.0),
        helper.make_node("Flatten", ["x4"], ["f"], name="flatten", axis=-3),
    ]
    init = {"wt": weights(6, 5), "c": weights(1, 6), "w": weights(5, 7)}
    tnn = check(make_model(nodes, [("x", [3, 5]), ("x4", [2, 3, 4, 5])], ["a", "b", "f"], init))
    assert tnn.resources["gemm"]["weight"].shape == (7, 5)
    gemm = next(layer for layer in tnn.layers if layer.name == "gemm")
    assert gemm.tokens == ["7", "1", "0", "1"]


def test_matmul_binary_ops_and_constants() -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm_const"),
        helper.make_node("MatMul", ["m", "xt"], ["mm"], name="mm_var"),
        helper.make_node("Sub", ["one", "mm"], ["s"], name="sub_first"),
        helper.make_node("Div", ["s", "two"], ["d"], name="div_const"),
        helper.make_node("Div", ["d", "d"], ["dd"], name="div_var"),
        helper.make_node("Add", ["mm", "row"], ["a"], name="add_row"),
        helper.make_node("Concat", ["a", "extra"], ["y"], name="cat", axis=-1),
    ]
    init = {
        "w": weights(4, 6),
        "one": np.array(1.0, np.float32),
        "two": np.float32([2.0]),
        "row": weights(3),
        "extra": weights(2, 3, 2),
    }
    tnn = check(make_model(nodes, [("x", [2, 3, 4]), ("xt", [2, 6, 3])], ["y", "dd"], init))
    by_name = {layer.name: layer for layer in tnn.layers}
    assert by_name["sub_first"].params["weight_input_index"] == 0
    assert by_name["div_const"].type == "Mul"
    assert by_name["mm_var"].params["weight_position"] == -1
    assert set(tnn.constants) == {"extra"} and by_name["cat"].params["axis"] == 2


def test_transpose_reshape_squeeze_unsqueeze() -> None:
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="perm", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["t"], ["r"], name="reverse"),
        helper.make_node("Reshape", ["r", "shape"], ["rs"], name="reshape"),
        helper.make_node("Unsqueeze", ["rs", "ax"], ["u"], name="unsq"),
        helper.make_node("Squeeze", ["u", "ax"], ["y"], name="sq"),
    ]
    init = {"shape": np.array([0, -1, 2], np.int64), "ax": np.array([-1], np.int64)}
    tnn = check(make_model(nodes, [("x", [2, 3, 4, 5])], ["y"], init))
    assert tnn.layers[1].params["orders"] == [3, 2, 1, 0]
    assert tnn.layers[2].tokens == ["0", "3", "3", "0", "-1", "2", "0"]


def test_slice_with_steps() -> None:
    """Steps, open and negative ends, axes given out of order (written sorted: TNN's ARM kernel
    walks them in order); a negative step is refused (TNN's ARM kernel copies nothing)."""
    nodes = [
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice"),
        helper.make_node("Slice", ["x", "st2", "en2"], ["z"], name="plain"),
    ]
    big = np.iinfo(np.int64).max
    init = {
        "st": np.array([0, 1, -7], np.int64),
        "en": np.array([5, big, -1], np.int64),
        "ax": np.array([-1, 1, 2], np.int64),
        "sp": np.array([3, 2, 2], np.int64),
        "st2": np.array([-3], np.int64),
        "en2": np.array([-1], np.int64),
    }
    tnn = check(make_model(nodes, [("x", [2, 6, 7, 5])], ["y", "z"], init))
    assert tnn.layers[0].params["axes"] == [1, 2, 3]
    assert tnn.layers[0].params["begins"] == [1, 0, 0]
    assert tnn.layers[0].params["ends"] == [6, 6, 5]
    backwards = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="backwards")
    init["sp"] = np.array([1, 1, -1], np.int64)
    assert "negative step" in refusal(make_model([backwards], [("x", [2, 6, 7, 5])], ["y"], init))


def test_split() -> None:
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], name="split", axis=-1),
        helper.make_node("Split", ["x"], ["d", "e"], name="even", axis=1),
    ]
    init = {"sizes": np.array([1, 4, 2], np.int64)}
    tnn = check(make_model(nodes, [("x", [2, 4, 7])], ["a", "b", "c", "d", "e"], init))
    assert tnn.layers[0].params == {"axis": 2, "slices": [1, 4, 2]}
    assert tnn.layers[1].params == {"axis": 1, "slices": [2, 2]}


def test_gather() -> None:
    nodes = [
        helper.make_node("Gather", ["x", "idx"], ["a"], name="vector", axis=1),
        helper.make_node("Gather", ["x", "scalar"], ["b"], name="scalar", axis=-1),
        helper.make_node("Gather", ["table", "ids"], ["c"], name="embed"),
    ]
    init = {
        "idx": np.array([[2, -1], [0, 0]], np.int64),
        "scalar": np.array(3, np.int64),
        "table": weights(10, 4),
    }
    model = make_model(nodes, [("x", [2, 5, 6])], ["a", "b", "c"], init)
    model.graph.input.append(helper.make_tensor_value_info("ids", TensorProto.INT64, [3]))
    files = convert_model(model)
    tnn = parse_model(files.proto, files.model)
    x = seeded_input([2, 5, 6])
    ids = np.array([9, 0, 4], np.int64)
    got = run_model(tnn, {"x": x, "ids": ids})
    for name, want in zip(("a", "b", "c"), ort_run(model, {"x": x, "ids": ids}), strict=True):
        np.testing.assert_array_equal(got[name], want)
    assert tnn.inputs[1].data_type == 3 and tnn.resources["embed"]["data"].shape == (10, 4)
    assert tnn.resources["vector"]["indices"].tolist() == [[2, 4], [0, 0]]


@pytest.mark.parametrize(
    ("mode", "attrs", "scales", "sizes", "layer"),
    [
        (
            "nearest",
            {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            [1, 1, 2, 3],
            None,
            "Deconvolution",
        ),
        ("nearest", {}, [1, 1, 2, 2], None, "Deconvolution"),
        (
            "nearest",
            {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            None,
            [1, 2, 7, 11],
            "Upsample",
        ),
        ("linear", {}, [1, 1, 2, 2], None, "Upsample"),
        (
            "linear",
            {"coordinate_transformation_mode": "align_corners"},
            None,
            [1, 2, 9, 13],
            "Upsample",
        ),
        (
            "linear",
            {"coordinate_transformation_mode": "pytorch_half_pixel"},
            [1, 1, 1.5, 0.5],
            None,
            "Upsample",
        ),
    ],
)
def test_resize(mode: str, attrs: dict, scales, sizes, layer: str) -> None:
    """Nearest by whole factors becomes a depthwise all-ones Deconvolution (TNN's X86 Upsample
    picks the wrong pixel wherever dst * in / out is whole); the rest stay Upsample."""
    inputs = ["x", "", "scales" if scales else "", "sizes" if sizes else ""]
    init = {"scales": np.array(scales, np.float32)} if scales else {}
    if sizes:
        init["sizes"] = np.array(sizes, np.int64)
    node = helper.make_node("Resize", inputs, ["y"], name="resize", mode=mode, **attrs)
    tnn = check(make_model([node], [("x", [1, 2, 4, 6])], ["y"], init))
    assert [line.type for line in tnn.layers] == [layer]
    if layer == "Upsample":
        assert tnn.layers[0].params["mode"] == (1 if mode == "nearest" else 2)
    else:
        assert tnn.layers[0].params["group"] == 2
        assert np.all(tnn.resources["resize"]["filter"] == 1)


@pytest.mark.parametrize("sizes", [[1, 2, 7, 4], [1, 2, 6, 9]])
def test_nearest_resize_onto_a_whole_multiple_is_rejected(sizes: list[int]) -> None:
    """4x6 -> 7x4 and 4x6 -> 6x9 each have an output pixel where dst * in / out is a whole
    number: TNN's X86 kernel takes the pixel before it there."""
    node = helper.make_node(
        "Resize",
        ["x", "", "", "sizes"],
        ["y"],
        name="down",
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    init = {"sizes": np.array(sizes, np.int64)}
    with pytest.raises(ConversionError) as error:
        convert_model(make_model([node], [("x", [1, 2, 4, 6])], ["y"], init))
    assert error.value.kind == "unsupported_op" and "X86" in error.value.message


def test_resize_tnn_cannot_reproduce_is_rejected() -> None:
    node = helper.make_node(
        "Resize",
        ["x", "", "scales"],
        ["y"],
        name="up_ceil",
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="ceil",
    )
    model = make_model([node], [("x", [1, 2, 4, 6])], ["y"], {"scales": np.float32([1, 1, 2, 2])})
    with pytest.raises(ConversionError) as error:
        convert_model(model)
    assert error.value.kind == "unsupported_op"
    assert "Resize" in error.value.message and "'up_ceil'" in error.value.message


def test_softmax_axis_and_pooling() -> None:
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], name="softmax", axis=1),
        helper.make_node(
            "MaxPool",
            ["s"],
            ["m"],
            name="maxpool",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
        ),
        helper.make_node(
            "AveragePool",
            ["x"],
            ["a"],
            name="avgpool",
            kernel_shape=[3, 2],
            strides=[2, 1],
            pads=[1, 0, 1, 0],
        ),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
        helper.make_node("GlobalMaxPool", ["x"], ["gm"], name="gmp"),
    ]
    tnn = check(make_model(nodes, [("x", [2, 3, 7, 8])], ["m", "g", "gm"]))
    assert tnn.layers[0].type == "SoftmaxCaffe" and tnn.layers[0].params["axis"] == 1


@pytest.mark.parametrize("axis", [-1, -2])
def test_layer_normalization(axis: int) -> None:
    shape = [2, 5, 6]
    normalized = shape[axis:]
    node = helper.make_node(
        "LayerNormalization",
        ["x", "scale"] + (["bias"] if axis == -1 else []),
        ["y"],
        name="ln",
        axis=axis,
        epsilon=1e-3,
    )
    init = {"scale": weights(*normalized) + 1, "bias": weights(*normalized, seed=5)}
    if axis != -1:
        del init["bias"]
    tnn = check(make_model([node], [("x", shape)], ["y"], init))
    layer = tnn.layers[0]
    assert layer.type == "LayerNorm" and layer.tokens == [str(len(normalized)), "0.001"]
    assert len(layer.inputs) == 3 and set(layer.inputs[1:]) <= set(tnn.constants)


def test_gelu_pattern_is_fused() -> None:
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["g"], name="gelu"),
        helper.make_node("Identity", ["g"], ["y"], name="out"),
    ]
    init = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
    tnn = check(make_model(nodes, [("x", [2, 7])], ["y"], init))
    assert [(layer.type, layer.outputs) for layer in tnn.layers] == [("GELU", ["y"])]


def test_add_with_constant_writes_expected_bytes() -> None:
    """The .tnnmodel of one Add layer, spelled out from objseri.h field by field."""
    node = helper.make_node("Add", ["x", "k"], ["y"], name="add")
    k = np.array([[1.5], [-2.0]], np.float32)
    files = convert_model(make_model([node], [("x", [1, 2, 3])], ["y"], {"k": k}))

    def string(text: str) -> bytes:
        return struct.pack("<i", len(text)) + text.encode()

    raw = struct.pack("<Iiii", MAGIC_V2, 0, 8, 2) + struct.pack("<ii", 2, 1) + k.tobytes()
    expected = (
        struct.pack("<Ii", MAGIC_V2, 1)
        + struct.pack("<i", 0)
        + string("Add")
        + string("add")
        + raw
        + struct.pack("<Ii", MAGIC_V2, 0)
    )
    assert files.model == expected
    assert files.proto.splitlines() == [
        f'"1 2 1 {MAGIC_V2} ,"',
        '"x 3 1 2 3 0 ,"',
        '" x y ,"',
        '"y ,"',
        '" 1 ,"',
        '"Add add 1 1 x y 1 ,"',
    ]


@pytest.mark.parametrize("op", ["NonMaxSuppression", "Einsum"])
def test_unsupported_op_names_type_and_node(op: str) -> None:
    node = helper.make_node(op, ["x", "x"], ["y"], name=f"my_{op.lower()}")
    model = make_model([node], [("x", [1, 4, 4])], ["y"])
    with pytest.raises(ConversionError) as error:
        convert_model(model)
    assert error.value.kind == "unsupported_op"
    assert op in error.value.message and f"my_{op.lower()}" in error.value.message
    assert "\n" not in error.value.message


# --- Pad, Reduce*, activations and unary math, Max/Min ------------------------------------


def refusal(model: onnx.ModelProto) -> str:
    with pytest.raises(ConversionError) as error:
        convert_model(model)
    assert error.value.kind == "unsupported_op" and "\n" not in error.value.message
    return error.value.message


def test_pad_line_matches_onnx2tnn() -> None:
    """4-D Pad: ``0 0 top bottom left right c_begin c_end type value`` (onnx2tnn's order)."""
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"], name="pad")
    init = {"pads": np.array([0, 1, 2, 0, 0, 2, 1, 3], np.int64), "value": np.float32(0.5)}
    model = make_model([node], [("x", [1, 3, 4, 5])], ["y"], init)
    tnn = check(model)
    assert convert_model(model).proto.splitlines()[5] == '"Pad pad 1 1 x y 0 0 2 1 0 3 1 2 0 0.5 ,"'
    assert tnn.layers[0].params == {"pads": [0, 3, 2, 1, 1, 2], "type": 0, "value": 0.5}
    assert not tnn.resources and not tnn.constants


def test_pad_modes_ranks_and_opsets() -> None:
    nodes = [
        helper.make_node("Pad", ["x", "hw"], ["r"], name="reflect", mode="reflect"),
        helper.make_node("Pad", ["x3", "p3", "v3"], ["c3"], name="padv2"),
        helper.make_node("Pad", ["x2", "p2"], ["c2"], name="padv2_2d"),
    ]
    init = {
        "hw": np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64),
        "p3": np.array([0, 1, 2, 0, 2, 0], np.int64),
        "v3": np.float32(-1.25),
        "p2": np.array([0, 2, 0, 1], np.int64),
    }
    inputs = [("x", [2, 3, 5, 6]), ("x3", [1, 4, 5]), ("x2", [3, 4])]
    tnn = check(make_model(nodes, inputs, ["r", "c3", "c2"], init))
    by_name = {layer.name: layer for layer in tnn.layers}
    assert by_name["reflect"].type == "Pad" and by_name["reflect"].tokens[-2:] == ["1", "0"]
    assert by_name["padv2"].type == "PadV2"
    assert by_name["padv2"].tokens == ["3", "0", "1", "2", "0", "2", "0", "0", "-1.25"]
    # opset 10 takes pads and value as attributes; opset 18 may name the padded axes.
    old = helper.make_node(
        "Pad", ["x"], ["y"], name="old", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=2.0
    )
    check(make_model([old], [("x", [1, 2, 3, 3])], ["y"], opset=10))
    axes = helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], name="axes", mode="reflect")
    init18 = {"p": np.array([1, 2, 0, 1], np.int64), "ax": np.array([-1, 2], np.int64)}
    tnn = check(make_model([axes], [("x", [1, 2, 4, 5])], ["y"], init18, opset=18))
    assert tnn.layers[0].tokens == ["0", "0", "2", "1", "1", "0", "0", "0", "1", "0"]


@pytest.mark.parametrize(
    ("pads", "mode", "reason"),
    [
        ([0, 0, 1, 1, 0, 0, 1, 1], "edge", "mode edge"),
        ([0, 1, 0, 0, 0, 1, 0, 0], "reflect", "reflect padding of the channel axis"),
        ([1, 0, 0, 0, 0, 0, 0, 0], "constant", "padding the batch axis"),
        ([0, 0, -1, 0, 0, 0, 0, 0], "constant", "negative pads"),
        ([0, 0, 4, 0, 0, 0, 0, 0], "reflect", "as large as its axis"),
    ],
)
def test_pad_variants_tnn_cannot_run_are_refused(pads: list[int], mode: str, reason: str) -> None:
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_it", mode=mode)
    init = {"pads": np.array(pads, np.int64)}
    message = refusal(make_model([node], [("x", [1, 2, 4, 5])], ["y"], init))
    assert message.startswith("TNN converter does not support operator Pad (node 'pad_it'): ")
    assert reason in message


def test_reduce_line_matches_onnx2tnn() -> None:
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1, -1], keepdims=1)
    model = make_model([node], [("x", [2, 3, 4, 5])], ["y"])
    check(model)
    assert convert_model(model).proto.splitlines()[5] == '"ReduceMean mean 1 1 x y 1 1 3 ,"'


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_ops(op: str, opset: int) -> None:
    """Axes as an attribute (before opset 18; ReduceSum before 13) or as a constant input,
    keepdims 0 and 1, negative axes, and no axes at all (TNN reduces everything)."""
    axes_input = opset >= 18 or op == "ReduceSum"
    nodes, init = [], {}
    for name, axes, keepdims in (("a", [2, -1], 1), ("b", [1], 0), ("c", None, 1)):
        if axes is None:
            nodes.append(helper.make_node(op, ["x"], [name], name=f"r_{name}", keepdims=keepdims))
        elif axes_input:
            init[f"ax_{name}"] = np.array(axes, np.int64)
            inputs = ["x", f"ax_{name}"]
            nodes.append(helper.make_node(op, inputs, [name], name=f"r_{name}", keepdims=keepdims))
        else:
            node = helper.make_node(
                op, ["x"], [name], name=f"r_{name}", axes=axes, keepdims=keepdims
            )
            nodes.append(node)
    tnn = check(make_model(nodes, [("x", [2, 3, 4, 5])], ["a", "b", "c"], init, opset=opset))
    assert [layer.type for layer in tnn.layers] == [op] * 3
    assert [layer.tokens for layer in tnn.layers] == [["1", "2", "3"], ["0", "1"], ["1"]]


def test_reduce_variants_tnn_cannot_run_are_refused() -> None:
    noop = helper.make_node("ReduceMax", ["x"], ["y"], name="noop", noop_with_empty_axes=1)
    assert "noop_with_empty_axes" in refusal(make_model([noop], [("x", [2, 3])], ["y"], opset=18))
    scalar = helper.make_node("ReduceSum", ["x"], ["y"], name="to_0d", keepdims=0)
    assert "0-d" in refusal(make_model([scalar], [("x", [2, 3])], ["y"], opset=13))
    # Real TNN's X86 kernel starts the product at 0.
    prod = helper.make_node("ReduceProd", ["x"], ["y"], name="prod", axes=[1])
    assert "X86" in refusal(make_model([prod], [("x", [2, 3])], ["y"], opset=13))


def test_activations_and_unary_math() -> None:
    nodes = [
        helper.make_node("Tanh", ["x"], ["t"], name="tanh"),
        helper.make_node("LeakyRelu", ["t"], ["l"], name="leaky", alpha=0.2),
        helper.make_node("PRelu", ["x", "slope_c"], ["pc"], name="prelu_c"),
        helper.make_node("PRelu", ["pc", "slope_1"], ["ps"], name="prelu_1"),
        helper.make_node("Elu", ["ps"], ["e"], name="elu", alpha=0.7),
        helper.make_node("Abs", ["e"], ["a"], name="abs"),
        helper.make_node("Sqrt", ["a"], ["s"], name="sqrt"),
        helper.make_node("Log", ["a"], ["lg"], name="log"),
        helper.make_node("Exp", ["l"], ["ex"], name="exp"),
        helper.make_node("Neg", ["ex"], ["n"], name="neg"),
        helper.make_node("Reciprocal", ["n"], ["rc"], name="reciprocal"),
    ]
    init = {"slope_c": weights(3, 1, 1), "slope_1": np.float32([0.3])}
    model = make_model(nodes, [("x", [2, 3, 4, 5])], ["s", "lg", "rc"], init)
    tnn = check(model)
    types = " ".join(layer.type for layer in tnn.layers)
    assert types == "Tanh PReLU PReLU PReLU Elu Abs Sqrt Log Exp Neg Reciprocal"
    by_name = {layer.name: layer for layer in tnn.layers}
    assert by_name["leaky"].tokens == ["1", "0"] and by_name["prelu_c"].tokens == ["0", "0"]
    assert by_name["prelu_1"].tokens == ["1", "0"] and by_name["elu"].tokens == ["0.7"]
    leaky = tnn.resources["leaky"]
    assert leaky["name"] == "leaky" and leaky["slope"].dtype == np.float32
    assert leaky["slope"].shape == (1,) and leaky["slope"][0] == np.float32(0.2)
    # onnx2tnn writes PReLU slopes as float32 in their ONNX dims, fp16 or not.
    files = convert_model(model, precision="fp16")
    half = parse_model(files.proto, files.model)
    assert half.resources["prelu_c"]["slope"].dtype == np.float32
    assert half.resources["prelu_c"]["slope"].shape == (3, 1, 1)


def test_prelu_slope_along_another_axis_is_refused() -> None:
    node = helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu_w")
    model = make_model([node], [("x", [1, 3, 4, 5])], ["y"], {"slope": weights(5)})
    assert "slope of shape [5]" in refusal(model)


def test_max_min_with_constant_and_computed_operands() -> None:
    nodes = [
        helper.make_node("Max", ["x", "k"], ["m"], name="max_const"),
        helper.make_node("Min", ["row", "m"], ["n"], name="min_first"),
        helper.make_node("Max", ["n", "x"], ["mm"], name="max_var"),
        helper.make_node("Min", ["mm", "half"], ["y"], name="min_scalar"),
    ]
    init = {"k": weights(3, 1, 1), "row": weights(5), "half": np.float32(0.5)}
    tnn = check(make_model(nodes, [("x", [2, 3, 4, 5])], ["y"], init))
    by_name = {layer.name: layer for layer in tnn.layers}
    assert [layer.type for layer in tnn.layers] == ["Maximum", "Minimum", "Maximum", "Minimum"]
    assert by_name["max_const"].tokens == ["1"] and by_name["min_first"].tokens == ["0"]
    assert by_name["max_var"].tokens == ["-1"] and by_name["max_var"].inputs == ["n", "x"]
    assert tnn.resources["max_const"]["element"].shape == (3, 1, 1)
    three = helper.make_node("Max", ["x", "x", "x"], ["y"], name="max3")
    assert "3 inputs" in refusal(make_model([three], [("x", [2, 3])], ["y"]))
