"""The fp16 ONNX artifact passes onnx.checker with full_check=True where an operator input takes
float32 only: Resize's scales (fed by a Cast or computed in the half graph) and
NonMaxSuppression's boxes, scores and thresholds; and the converter refuses in one line a
graph that does not check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ConversionError, ConversionOptions, get_converter
from edgebench.converters.fp16 import float32_inputs, to_fp16


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def float_input(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def upsampling_model() -> onnx.ModelProto:
    """Two Resizes: the first's scales are a Cast of an int64 constant, the second's are
    computed from shapes (Cast, Cast, Div), as exported upsampling models do."""
    factors = numpy_helper.from_array(np.array([1, 1, 2, 2], np.int64))
    nodes = [
        helper.make_node("Constant", [], ["k"], value_float=0.5),
        helper.make_node("Mul", ["x", "k"], ["y"]),
        helper.make_node("Constant", [], ["factors"], value=factors),
        helper.make_node("Cast", ["factors"], ["s1"], to=TensorProto.FLOAT),
        helper.make_node("Resize", ["y", "", "s1"], ["z"], mode="nearest"),
        helper.make_node("Shape", ["guide"], ["guide_shape"]),
        helper.make_node("Shape", ["z"], ["z_shape"]),
        helper.make_node("Cast", ["guide_shape"], ["guide_size"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["z_shape"], ["z_size"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["guide_size", "z_size"], ["s2"]),
        helper.make_node("Resize", ["z", "", "s2"], ["w"], mode="nearest"),
        helper.make_node("Add", ["w", "guide"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "upsampling",
        [float_input("x", [1, 1, 2, 2]), float_input("guide", [1, 1, 8, 8])],
        [float_input("out", [1, 1, 8, 8])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def detection_model() -> onnx.ModelProto:
    """Boxes and scores computed in the graph, then NonMaxSuppression with its thresholds as
    initializers."""
    initializers = [
        numpy_helper.from_array(np.array([2, 2, 2, 2], np.float32), "box_scale"),
        numpy_helper.from_array(np.array([3], np.int64), "max_boxes"),
        numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
        numpy_helper.from_array(np.array([0.3], np.float32), "min_score"),
    ]
    nodes = [
        helper.make_node("Mul", ["raw_boxes", "box_scale"], ["boxes"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node(
            "NonMaxSuppression",
            ["boxes", "scores", "max_boxes", "iou", "min_score"],
            ["selected"],
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "detection",
        [float_input("raw_boxes", [1, 6, 4]), float_input("logits", [1, 1, 6])],
        [
            helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3]),
            float_input("scores", [1, 1, 6]),
        ],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_float32_only_inputs_come_from_the_operator_schemas():
    assert float32_inputs("NonMaxSuppression", 13)[0] == {0, 1, 3, 4}
    assert float32_inputs("Resize", 10)[0] == {1}
    assert float32_inputs("Resize", 13)[0] == {2}
    assert float32_inputs("Conv", 13)[0] == set()
    assert float32_inputs("NoSuchOp", 13) == (frozenset(), None)


def test_an_upsampling_model_in_fp16_passes_the_full_check_and_agrees():
    model = upsampling_model()
    half, counts = to_fp16(model)
    onnx.checker.check_model(half, full_check=True)
    assert counts == {
        "initializers": 0,
        "constants": 1,
        "casts": 2,
        "io_casts": 3,
        "float32_casts": 1,
    }
    (scales_cast,) = [n for n in half.graph.node if n.output[0] == "s1"]
    assert scales_cast.attribute[0].i == TensorProto.FLOAT  # feeds only Resize's scales
    rng = np.random.default_rng(0)
    feeds = {
        "x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2),
        "guide": rng.standard_normal((1, 1, 8, 8), np.float32),
    }
    (want,) = run(model, feeds)
    (got,) = run(half, feeds)
    assert got.dtype == np.float32 and got.shape == (1, 1, 8, 8)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_a_detection_model_with_non_max_suppression_in_fp16_passes_the_full_check():
    model = detection_model()
    half, counts = to_fp16(model)
    onnx.checker.check_model(half, full_check=True)
    # The thresholds feed only NonMaxSuppression and stay float32; the box scale turns half.
    kept = {i.name: i.data_type for i in half.graph.initializer}
    assert kept["iou"] == kept["min_score"] == TensorProto.FLOAT
    assert kept["box_scale"] == TensorProto.FLOAT16
    # Boxes and scores are computed in half precision and cast back for NonMaxSuppression.
    assert counts["float32_casts"] == 2
    corners = np.array(
        [[0, 0, 1, 1], [0, 0, 1, 1.05], [2, 2, 3, 3], [4, 4, 5, 5], [6, 6, 7, 7], [0, 4, 1, 5]],
        np.float32,
    )
    logits = np.array([[[3.0, 2.0, 1.5, -3.0, 0.5, 1.0]]], np.float32)
    feeds = {"raw_boxes": corners[None], "logits": logits}
    want_selected, want_scores = run(model, feeds)
    got_selected, got_scores = run(half, feeds)
    np.testing.assert_array_equal(got_selected, want_selected)
    assert got_selected[:, 2].tolist() == [0, 2, 5]  # box 1 overlaps box 0; box 3 scores low
    np.testing.assert_allclose(got_scores, want_scores, rtol=1e-3)


def test_the_converter_writes_fp16_graphs_that_pass_the_full_check(tmp_path: Path):
    source = tmp_path / "detection.onnx"
    onnx.save(detection_model(), str(source))
    files = get_converter("onnx-fp16").convert(
        source, tmp_path, ConversionOptions(precision="fp16")
    )
    onnx.checker.check_model(onnx.load(str(tmp_path / files[0])), full_check=True)


def test_an_fp16_graph_that_does_not_check_is_refused_in_one_line(tmp_path: Path):
    # Celu computes in float32 only: its output meets the half bias in Add, which ONNX refuses.
    bias = numpy_helper.from_array(np.ones((1, 4), np.float32), "bias")
    graph = helper.make_graph(
        [helper.make_node("Celu", ["x"], ["c"]), helper.make_node("Add", ["c", "bias"], ["y"])],
        "celu",
        [float_input("x", [1, 4])],
        [float_input("y", [1, 4])],
        [bias],
    )
    source = tmp_path / "celu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(source))
    with pytest.raises(ConversionError) as caught:
        get_converter("onnx-fp16").convert(source, tmp_path, ConversionOptions(precision="fp16"))
    assert caught.value.kind == "failed"
    message = caught.value.message
    assert message.startswith("the fp16 model did not check: ") and "\n" not in message
    assert "Add" in message and message.endswith("(measure this model at fp32)")
    assert not (tmp_path / "model.fp16.onnx").exists()
