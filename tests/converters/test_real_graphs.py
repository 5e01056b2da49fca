"""Graphs shaped like real exported mobile models (tests/fakes/ocr_models.py): dynamic H/W,
shape subgraphs, paddle's hardswish, ConvTranspose heads. Each converts with edgebench's own
TNN and TFLite writers at two fixed shapes and with MNN, OpenVINO and ncnn, and every
artifact's output is compared with ONNX Runtime's."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fakes.ocr_models import CASES, NAMES, SECOND_SHAPES, TEST_SHAPES, build
from fakes.tnn_checking.reader import TnnModel, parse_model, read_model
from fakes.tnn_checking.reference import run_model
from fakes.toolchains import converter_or_skip
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ConversionError, ConversionOptions
from edgebench.converters.tnn.writer import convert_model
from edgebench.converters.tnn_converter import TnnConverter

# Allowed max |diff| as a fraction of the reference output's peak. MNN picks Winograd for some
# 3x3 convolutions (it depends on the feature-map size); its fp32 error then reaches ~3e-4 of
# the peak, which edgebench's own fp32 output check (rtol 1e-3) accepts.
PEAK_FRACTION = {"tnn": 1e-4, "openvino": 1e-4, "ncnn": 1e-4, "tflite": 1e-4, "mnn": 1e-3}
BACKEND_MODULES = {
    "mnn": "mnn_backend",
    "openvino": "openvino_backend",
    "ncnn": "ncnn_backend",
    "tflite": "tflite_backend",
}
# Ops that only compute shapes; folding must leave none of them for TNN.
SHAPE_LAYERS = {"Shape", "Gather", "Unsqueeze", "StridedSliceV2", "Concat"}
CASE_IDS = [f"{name}-{shapes['x'][2]}x{shapes['x'][3]}" for name, shapes in CASES]


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def seeded_feeds(shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(dims, dtype=np.float32) for name, dims in shapes.items()}


def assert_close(got: np.ndarray, want: np.ndarray, framework: str) -> None:
    got = np.asarray(got, np.float32).reshape(want.shape)  # ncnn drops the batch axis
    peak = float(np.abs(want).max())
    diff = float(np.abs(got - want).max())
    assert diff <= PEAK_FRACTION[framework] * peak, (
        f"{framework}: max|diff| {diff:.3g}, peak {peak:.3g}"
    )
    if want.ndim == 2 and want.shape[1] <= 16:  # class scores
        np.testing.assert_array_equal(got.argmax(axis=1), want.argmax(axis=1))


@pytest.fixture(scope="module")
def onnx_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One .onnx file per model: each test shape converts the same file."""
    root = tmp_path_factory.mktemp("ocr-models")
    paths = {}
    for name in NAMES:
        paths[name] = root / f"{name}.onnx"
        onnx.save(build(name), str(paths[name]))
    return paths


# --- the test models themselves ---------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_models_are_valid_dynamic_and_run_in_onnxruntime(name: str) -> None:
    model = build(name)
    onnx.checker.check_model(model, full_check=True)
    (x,) = model.graph.input
    dims = x.type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["N", "", "H", "W"] and dims[1].dim_value == 3
    assert "Shape" in {n.op_type for n in model.graph.node}
    outputs = {}
    for shapes in (TEST_SHAPES[name], SECOND_SHAPES[name]):
        (outputs[tuple(shapes["x"])],) = ort_run(model, seeded_feeds(shapes))
    assert len({o.shape for o in outputs.values()}) == (1 if name == "direction_classifier" else 2)
    for (n, _, h, w), out in outputs.items():
        assert np.isfinite(out).all() and out.shape[0] == n
        if name == "text_detector":
            assert out.shape == (n, 1, h, w) and out.min() > 0 and out.max() < 1
        elif name == "direction_classifier":
            np.testing.assert_allclose(out.sum(axis=1), 1, rtol=1e-5)
    again = build(name)
    assert again.SerializeToString() == model.SerializeToString()
    assert build(name, seed=1).graph.initializer != model.graph.initializer


def test_models_carry_the_real_export_patterns() -> None:
    detector = build("text_detector")
    ops = [n.op_type for n in detector.graph.node]
    assert ops.count("ConvTranspose") == 2 and ops.count("Resize") >= 3
    producers = {o: n for n in detector.graph.node for o in n.output}
    resizes = [n for n in detector.graph.node if n.op_type == "Resize"]
    assert any(len(r.input) > 3 and producers[r.input[3]].op_type == "Concat" for r in resizes)
    gates = [n for n in detector.graph.node if n.op_type == "HardSigmoid"]
    assert gates and all(
        any(
            m.op_type == "Mul" and set(m.input) == {g.input[0], g.output[0]}
            for m in detector.graph.node
        )
        for g in gates
    )

    classifier = build("direction_classifier")
    ops = [n.op_type for n in classifier.graph.node]
    for op in ("Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Gemm", "MatMul", "Softmax"):
        assert op in ops, op
    weights = {t.name: t for t in classifier.graph.initializer}
    depthwise = [
        n
        for n in classifier.graph.node
        if n.op_type == "Conv"
        and weights[n.input[1]].dims[1] == 1
        and weights[n.input[1]].dims[0] > 1
    ]
    assert depthwise

    attention = build("spatial_attention")
    axes = [
        helper.get_attribute_value(n.attribute[0])
        for n in attention.graph.node
        if n.op_type == "Softmax"
    ]
    assert {1, 2} <= set(axes)
    assert "Flatten" in [n.op_type for n in attention.graph.node]


# --- TNN ----------------------------------------------------------------------------------


def convert_tnn(path: Path, shapes: dict[str, list[int]], out_dir: Path) -> TnnModel:
    files = TnnConverter().convert(path, out_dir, ConversionOptions(input_shapes=shapes))
    return read_model(out_dir / files[0], out_dir / files[1])


@pytest.mark.parametrize(("name", "shapes"), CASES, ids=CASE_IDS)
def test_tnn_converts_each_shape_and_matches_onnxruntime(
    onnx_files: dict[str, Path], tmp_path: Path, name: str, shapes: dict[str, list[int]]
) -> None:
    tnn = convert_tnn(onnx_files[name], shapes, tmp_path)
    assert [(i.name, i.dims) for i in tnn.inputs] == list(shapes.items())
    feeds = seeded_feeds(shapes)
    (want,) = ort_run(onnx.load(str(onnx_files[name])), feeds)
    got = run_model(tnn, feeds)[tnn.outputs[0]]
    assert got.shape == want.shape
    assert_close(got, want, "tnn")


@pytest.mark.parametrize("name", NAMES)
def test_folded_shape_subgraphs_leave_no_shape_layers(
    onnx_files: dict[str, Path], tmp_path: Path, name: str
) -> None:
    tnn = convert_tnn(onnx_files[name], TEST_SHAPES[name], tmp_path)
    types = [layer.type for layer in tnn.layers]
    proto = (tmp_path / "model.tnnproto").read_text()
    assert "Shape" not in proto
    # The detector's FPN Concat joins feature maps; every other Concat/Gather/... was shapes.
    assert [t for t in types if t in SHAPE_LAYERS] == (
        ["Concat"] if name == "text_detector" else []
    )
    assert not tnn.constants  # no folded shape vector is left as a blob for a layer to read
    reshapes = [layer.params["shape"] for layer in tnn.layers if layer.type == "Reshape"]
    if name == "text_detector":
        # Two ConvTranspose heads, and four x2 nearest Resizes written as all-ones depthwise
        # Deconvolutions (TNN's X86 Upsample misplaces pixels at whole factors).
        assert types.count("Deconvolution") == 6 and "Upsample" not in types
        # paddle's Mul(x, HardSigmoid(x)) became one HardSwish layer each.
        assert "HardSigmoid" not in types and types.count("HardSwish") == 4
    if name == "direction_classifier":
        # The squeeze-excite gate multiplies another tensor: it stays HardSigmoid + Mul.
        assert types.count("HardSigmoid") == 1 and "Mul" in types
        assert reshapes == [[1, -1]]  # torch's flatten, with the batch folded to 1
    if name == "spatial_attention":
        _, _, h, w = TEST_SHAPES[name]["x"]
        assert reshapes == [[1, 8, -1], [1, 8, (h + 1) // 2, (w + 1) // 2]]


def test_tnn_fp16_detector_stores_half_deconv_weights(onnx_files: dict[str, Path]) -> None:
    model = onnx.load(str(onnx_files["text_detector"]))
    files = convert_model(model, TEST_SHAPES["text_detector"], precision="fp16")
    tnn = parse_model(files.proto, files.model)
    deconvs = [layer.name for layer in tnn.layers if layer.type == "Deconvolution"]
    assert deconvs and all(tnn.resources[n]["filter"].dtype == np.float16 for n in deconvs)
    feeds = seeded_feeds(TEST_SHAPES["text_detector"])
    got = run_model(tnn, feeds)[tnn.outputs[0]]
    (want,) = ort_run(model, feeds)
    assert np.abs(got - want).max() < 2e-2


def test_missing_dynamic_dims_are_asked_for(onnx_files: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as error:
        TnnConverter().convert(onnx_files["text_detector"], tmp_path, ConversionOptions())
    assert error.value.kind == "failed"
    assert "'x'" in error.value.message and "input_shapes" in error.value.message


# --- focused TNN op checks ----------------------------------------------------------------


def single_node_model(
    node: onnx.NodeProto, shape: list[int], initializers: dict[str, np.ndarray], opset: int = 17
) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check_tnn(model: onnx.ModelProto) -> TnnModel:
    """Convert, read back, run with the NumPy TNN executor and compare with ONNX Runtime."""
    files = convert_model(model)
    tnn = parse_model(files.proto, files.model)
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = seeded_feeds({model.graph.input[0].name: dims})
    (want,) = ort_run(model, feeds)
    got = run_model(tnn, feeds)[model.graph.output[0].name]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return tnn


def deconv_weights(c_in: int, c_out_per_group: int, k: int) -> np.ndarray:
    return (np.random.default_rng(3).standard_normal((c_in, c_out_per_group, k, k)) * 0.3).astype(
        np.float32
    )


# (attributes, kernel, TNN pad type): the pad type is onnx2tnn's choice where that gives ONNX's
# output window.
DECONV_CASES = {
    "k2s2": ({"strides": [2, 2]}, 2, -1),
    "k3s2-pad1-outpad1": (
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
        3,
        3,
    ),
    "k3s2-pad1": ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, 3, -1),
    "k4s2-depthwise": ({"strides": [2, 2], "pads": [1, 1, 1, 1], "group": 8}, 4, -1),
    "k3-dilated-grouped": (
        {"strides": [1, 2], "pads": [2, 1, 2, 1], "dilations": [2, 1], "group": 2},
        3,
        -1,
    ),
    "k3s2-pads-end-only": ({"strides": [2, 2], "pads": [0, 0, 1, 1]}, 3, 0),
    # onnx2tnn would write 3 (output_padding), which gives one row too many here.
    "k3s2-pads-1-2-outpad1": (
        {"strides": [2, 2], "pads": [1, 1, 2, 2], "output_padding": [1, 1]},
        3,
        -1,
    ),
    "k1s2-outpad1": ({"strides": [2, 2], "output_padding": [1, 1]}, 1, 3),
    "k4s2-same-upper": ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, 4, 0),
    "k3s2-same-upper-odd": ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, 3, 0),
    "k3s2-same-lower-odd": ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, 3, 3),
    "k3s1-valid": ({"auto_pad": "VALID"}, 3, 1),
}


@pytest.mark.parametrize("case", DECONV_CASES)
def test_conv_transpose_variants(case: str) -> None:
    attrs, kernel, pad_type = DECONV_CASES[case]
    group = attrs.get("group", 1)
    weight = deconv_weights(8, 8 // group, kernel)
    bias = np.linspace(-0.5, 0.5, 8, dtype=np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="deconv", **attrs)
    tnn = check_tnn(single_node_model(node, [1, 8, 5, 7], {"w": weight, "b": bias}))
    (layer,) = tnn.layers
    assert layer.type == "Deconvolution"
    p = layer.params
    assert (p["group"], p["input_channel"], p["output_channel"]) == (group, 8 // group, 8)
    assert (p["kernel_h"], p["kernel_w"]) == (kernel, kernel) and p["pad_type"] == pad_type
    # The ONNX [C_in, C_out/group, kh, kw] weight is stored as is.
    np.testing.assert_array_equal(tnn.resources["deconv"]["filter"], weight)
    np.testing.assert_array_equal(tnn.resources["deconv"]["bias"], bias)


def test_conv_transpose_line_matches_onnx2tnn_layout() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2])
    model = single_node_model(node, [1, 8, 5, 7], {"w": deconv_weights(8, 4, 2)})
    check_tnn(model)
    line = convert_model(model).proto.splitlines()[5]
    # group, input channels per group, output channels, kernel, stride, pads, bias, pad type,
    # dilation: Convolution's layout.
    assert line == '"Deconvolution up 1 1 x y 1 8 4 2 2 2 2 0 0 0 -1 1 1 ,"'


@pytest.mark.parametrize(
    ("attrs", "kernel", "detail"),
    [
        # ONNX crops 1 at the start; TNN's output-padding type crops 0 when kernel == stride.
        ({"strides": [3, 3], "pads": [1, 1, 1, 1], "output_padding": [2, 2]}, 3, "output_padding"),
        # The output runs one pixel past the full transposed convolution.
        ({"strides": [2, 2], "output_padding": [1, 1]}, 3, "output_padding"),
        ({"strides": [2, 2], "output_shape": [10, 14]}, 2, "output_shape"),
    ],
)
def test_conv_transpose_tnn_cannot_express_is_rejected(
    attrs: dict, kernel: int, detail: str
) -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="odd_deconv", **attrs)
    model = single_node_model(node, [1, 8, 5, 7], {"w": deconv_weights(8, 8, kernel)})
    ort_run(model, seeded_feeds({"x": [1, 8, 5, 7]}))  # a valid model, just not for TNN
    with pytest.raises(ConversionError) as error:
        convert_model(model)
    message = error.value.message
    assert error.value.kind == "unsupported_op" and "\n" not in message
    assert "ConvTranspose" in message and "'odd_deconv'" in message and detail in message


@pytest.mark.parametrize("axis", [1, 2, 3, -1])
def test_softmax_on_each_axis_of_a_4d_tensor(axis: int) -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=axis)
    tnn = check_tnn(single_node_model(node, [2, 3, 4, 5], {}))
    assert [(layer.type, layer.params["axis"]) for layer in tnn.layers] == [
        ("SoftmaxCaffe", axis % 4)
    ]


def test_opset11_softmax_converts_only_when_its_2d_flattening_is_one_axis() -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)
    tnn = check_tnn(single_node_model(node, [2, 5, 1, 1], {}, opset=11))
    assert tnn.layers[0].params["axis"] == 1
    with pytest.raises(ConversionError) as error:
        convert_model(single_node_model(node, [2, 3, 4, 5], {}, opset=11))
    assert error.value.kind == "unsupported_op" and "'softmax'" in error.value.message
    assert "opset<13" in error.value.message


def test_paddle_hardswish_is_fused_with_its_own_alpha_and_beta() -> None:
    nodes = [
        helper.make_node("HardSigmoid", ["x"], ["g"], name="gate", alpha=0.2, beta=0.5),
        helper.make_node("Mul", ["g", "x"], ["y"], name="hswish"),
        helper.make_node("HardSigmoid", ["y"], ["g2"], name="other_gate"),
        helper.make_node("Mul", ["x", "g2"], ["z"], name="gated"),  # not x * g(x): stays
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 5])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    tnn = check_tnn(model)
    assert [(layer.type, layer.name) for layer in tnn.layers] == [
        ("HardSwish", "hswish"),
        ("HardSigmoid", "other_gate"),
        ("Mul", "gated"),
    ]
    assert tnn.layers[0].params == {"alpha": pytest.approx(0.2), "beta": pytest.approx(0.5)}


def test_unsupported_op_after_folding_still_names_op_and_node() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
        helper.make_node("Einsum", ["r"], ["y"], name="my_einsum", equation="abcd->abdc"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as error:
        convert_model(model)
    assert error.value.kind == "unsupported_op"
    assert (
        error.value.message == "TNN converter does not support operator Einsum (node 'my_einsum')"
    )


# --- TFLite (edgebench's own writer), MNN, OpenVINO and ncnn -------------------------------


@pytest.mark.parametrize("framework", ["tflite", "mnn", "openvino", "ncnn"])
@pytest.mark.parametrize(("name", "shapes"), CASES, ids=CASE_IDS)
def test_other_converters_run_and_match_onnxruntime(
    onnx_files: dict[str, Path],
    tmp_path: Path,
    framework: str,
    name: str,
    shapes: dict[str, list[int]],
) -> None:
    converter = converter_or_skip(framework)
    module = importlib.import_module(f"edgebench.runners.backends.{BACKEND_MODULES[framework]}")
    pytest.importorskip(module.REQUIRES[0])
    files = converter.convert(onnx_files[name], tmp_path, ConversionOptions(input_shapes=shapes))
    feeds = seeded_feeds(shapes)
    backend = module.BACKEND()
    backend.load(str(tmp_path / files[0]), 1, "fp32", {})
    try:
        (got,) = backend.make_stream(feeds)()
    finally:
        backend.close()
    (want,) = ort_run(onnx.load(str(onnx_files[name])), feeds)
    assert_close(got, want, framework)


def test_tflite_writer_lowers_the_detector_head_natively(onnx_files: dict[str, Path]) -> None:
    """ConvTranspose becomes TRANSPOSE_CONV, the Shape-driven Resize a fixed-size resize, and
    nothing of the shape subgraph is left."""
    from edgebench.converters.tflite.convert import convert_model as convert_tflite

    model = onnx.load(str(onnx_files["text_detector"]))
    counts = convert_tflite(model, TEST_SHAPES["text_detector"]).op_counts
    assert counts["TRANSPOSE_CONV"] == 2
    assert counts.get("RESIZE_NEAREST_NEIGHBOR", 0) + counts.get("GATHER", 0) >= 2
    assert not {"SHAPE", "STRIDED_SLICE", "CAST"} & set(counts)
