"""Tests for the generated built-in benchmark models and the model summary."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgebench.models import (
    BUILTIN_MODELS,
    GENERATOR_VERSION,
    TensorSpec,
    UnknownModelError,
    build_model,
    builtin_model_path,
    model_bytes,
    summarize_model,
)

NAMES = ("mobilenetv2", "resnet50", "vit-tiny", "detector")
# Published (params, MACs); the summary must land within +-15%.
PUBLISHED = {
    "mobilenetv2": (3.50e6, 300e6),
    "resnet50": (25.56e6, 4.1e9),
    "vit-tiny": (5.72e6, 1.26e9),
}
# The detector is our own design: the ranges it was sized for.
DETECTOR_PARAMS = (1.0e6, 3.0e6)
DETECTOR_MACS = (0.5e9, 1.5e9)
OUTPUT_SHAPES = {
    "mobilenetv2": (1, 1000),
    "resnet50": (1, 1000),
    "vit-tiny": (1, 1000),
    "detector": (1, 6300, 85),
}


@dataclass(frozen=True)
class Built:
    name: str
    model: onnx.ModelProto
    data: bytes


@pytest.fixture(scope="session", params=NAMES)
def built(request: pytest.FixtureRequest) -> Built:
    model = build_model(request.param)
    return Built(request.param, model, model_bytes(model))


# -- registry -------------------------------------------------------------------------------


def test_registry_order_and_entries() -> None:
    assert tuple(BUILTIN_MODELS) == NAMES
    for name, entry in BUILTIN_MODELS.items():
        assert entry.name == name
        assert entry.description and "\n" not in entry.description
        assert entry.input_shape[0] == 1


def test_unknown_name_lists_known_models(tmp_path: Path) -> None:
    with pytest.raises(UnknownModelError) as excinfo:
        build_model("alexnet")
    assert isinstance(excinfo.value, ValueError)
    for name in NAMES:
        assert name in str(excinfo.value)
    with pytest.raises(UnknownModelError):
        builtin_model_path("alexnet", tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


# -- per-model structure, size and numerics ------------------------------------------------


def test_model_passes_full_check(built: Built) -> None:
    onnx.checker.check_model(built.model, full_check=True)


def test_model_contract(built: Built) -> None:
    model = built.model
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert model.producer_name == "edgebench"
    assert model.producer_version == GENERATOR_VERSION
    assert built.name in model.doc_string and "seed 0" in model.doc_string
    floats = [i for i in model.graph.initializer if i.data_type != TensorProto.INT64]
    assert all(i.data_type == TensorProto.FLOAT for i in floats)
    node_names = [n.name for n in model.graph.node]
    assert len(set(node_names)) == len(node_names)


def test_summary_matches_published_figures(built: Built) -> None:
    summary = summarize_model(built.model)
    shape = BUILTIN_MODELS[built.name].input_shape
    assert summary.inputs == (TensorSpec("input", shape, "float32"),)
    assert summary.outputs == (TensorSpec("output", OUTPUT_SHAPES[built.name], "float32"),)
    assert summary.opset == 17
    assert summary.macs_complete
    if built.name == "detector":
        assert DETECTOR_PARAMS[0] <= summary.params <= DETECTOR_PARAMS[1]
        assert DETECTOR_MACS[0] <= summary.macs <= DETECTOR_MACS[1]
        assert {"Resize", "Concat", "Sigmoid", "Split"} <= set(summary.op_types)
    else:
        params, macs = PUBLISHED[built.name]
        assert summary.params == pytest.approx(params, rel=0.15)
        assert summary.macs == pytest.approx(macs, rel=0.15)


def test_model_runs_and_is_not_collapsed(built: Built) -> None:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(built.data, options, providers=["CPUExecutionProvider"])
    shape = BUILTIN_MODELS[built.name].input_shape
    outputs = []
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
        (y,) = session.run(None, {"input": x})
        assert y.shape == OUTPUT_SHAPES[built.name]
        assert np.isfinite(y).all()
        assert 1e-2 <= float(y.std()) <= 1e2
        outputs.append(y)
    first, second = outputs
    differs = first.argmax() != second.argmax() or np.abs(first - second).max() > 1e-3
    assert differs
    # Beyond "differs at all": the input-dependent part is a visible fraction of the output.
    assert float((first - second).std()) > 1e-2 * float(first.std())


# -- determinism ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mobilenetv2", "vit-tiny"])
def test_same_seed_gives_identical_bytes(name: str) -> None:
    first = hashlib.sha256(model_bytes(build_model(name, seed=0))).hexdigest()
    second = hashlib.sha256(model_bytes(build_model(name, seed=0))).hexdigest()
    assert first == second


def test_different_seed_gives_different_bytes() -> None:
    seed0 = build_model("vit-tiny", seed=0)
    seed1 = build_model("vit-tiny", seed=1)
    assert model_bytes(seed0) != model_bytes(seed1)
    assert "seed 1" in seed1.doc_string


# -- on-disk cache -------------------------------------------------------------------------


def test_builtin_model_path_generates_then_reuses(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = builtin_model_path("mobilenetv2", cache)
    assert path == cache / f"mobilenetv2-g{GENERATOR_VERSION}-s0.onnx"
    assert path.read_bytes() == model_bytes(build_model("mobilenetv2"))
    assert sorted(cache.iterdir()) == [path]  # no temp files left behind
    # Backdate the file so a rewrite would show even on coarse-mtime filesystems.
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert builtin_model_path("mobilenetv2", cache) == path
    assert path.stat().st_mtime_ns == 1_000_000_000


def test_builtin_model_path_seed_in_name(tmp_path: Path) -> None:
    path = builtin_model_path("vit-tiny", tmp_path, seed=3)
    assert path.name == f"vit-tiny-g{GENERATOR_VERSION}-s3.onnx"
    assert path.read_bytes() == model_bytes(build_model("vit-tiny", seed=3))


def test_builtin_model_path_regenerates_truncated_file(tmp_path: Path) -> None:
    expected = model_bytes(build_model("mobilenetv2"))
    path = tmp_path / f"mobilenetv2-g{GENERATOR_VERSION}-s0.onnx"
    path.write_bytes(expected[: len(expected) // 2])
    assert builtin_model_path("mobilenetv2", tmp_path) == path
    assert path.read_bytes() == expected


def test_builtin_model_path_regenerates_file_cut_at_field_boundary(tmp_path: Path) -> None:
    model = build_model("vit-tiny")
    expected = model_bytes(model)
    # opset_import is serialized after the graph, so dropping it yields a prefix of the file
    # that still parses: a truncation onnx.load alone would not notice.
    del model.opset_import[:]
    prefix = model_bytes(model)
    assert expected.startswith(prefix) and len(prefix) < len(expected)
    path = tmp_path / f"vit-tiny-g{GENERATOR_VERSION}-s0.onnx"
    path.write_bytes(prefix)
    builtin_model_path("vit-tiny", tmp_path)
    assert path.read_bytes() == expected


# -- summarize_model on hand-made graphs ---------------------------------------------------


def _tiny_model(nodes: list[onnx.NodeProto], inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_summary_reports_symbolic_dims_and_incomplete_macs() -> None:
    weight = numpy_helper.from_array(np.ones((4, 3), dtype=np.float32), "W")
    shape = numpy_helper.from_array(np.array([-1, 3], dtype=np.int64), "shape")
    model = _tiny_model(
        [
            helper.make_node("MatMul", ["X", "W"], ["H"]),
            helper.make_node("Reshape", ["H", "shape"], ["Y"]),
        ],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", None])],
        [weight, shape],
    )
    summary = summarize_model(model)
    assert summary.inputs == (TensorSpec("X", ("batch", 4), "float32"),)
    # the declared unknown dim is filled in by shape inference
    assert summary.outputs == (TensorSpec("Y", ("batch", 3), "float32"),)
    assert summary.params == 12  # the int64 shape tensor is not a parameter
    assert summary.macs == 0
    assert not summary.macs_complete
    assert summary.op_types == ("MatMul", "Reshape")
    assert summary.opset == 17


def test_summary_counts_conv_gemm_matmul_macs() -> None:
    inits = [
        numpy_helper.from_array(np.zeros((8, 2, 3, 3), dtype=np.float32), "conv_w"),
        numpy_helper.from_array(np.zeros((10, 8), dtype=np.float32), "gemm_w"),
        numpy_helper.from_array(np.zeros((5, 6), dtype=np.float32), "mm_w"),
        numpy_helper.from_array(np.zeros((2, 3), dtype=np.float16), "half"),
    ]
    model = _tiny_model(
        [
            # grouped conv: out 1x8x5x5, each output uses Cin/group * 3 * 3 = 18 MACs
            helper.make_node(
                "Conv", ["X", "conv_w"], ["C"], group=2, kernel_shape=[3, 3], pads=[1] * 4
            ),
            helper.make_node("GlobalAveragePool", ["C"], ["P"]),
            helper.make_node("Flatten", ["P"], ["F"]),
            # [1, 8] x [8, 10]^T
            helper.make_node("Gemm", ["F", "gemm_w"], ["G"], transB=1),
            # batched: [4, 3, 5] x [5, 6]
            helper.make_node("MatMul", ["Z", "mm_w"], ["M"]),
        ],
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4, 5, 5]),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, [4, 3, 5]),
            # an initializer also listed as a graph input (old exporters do this)
            helper.make_tensor_value_info("mm_w", TensorProto.FLOAT, [5, 6]),
        ],
        [
            helper.make_tensor_value_info("G", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("M", TensorProto.FLOAT, None),
        ],
        inits,
    )
    summary = summarize_model(model)
    assert summary.macs == 200 * 18 + 1 * 10 * 8 + 4 * 3 * 6 * 5
    assert summary.macs_complete
    assert summary.params == 8 * 2 * 9 + 10 * 8 + 5 * 6 + 2 * 3
    assert [spec.name for spec in summary.inputs] == ["X", "Z"]
    assert summary.inputs[1] == TensorSpec("Z", (4, 3, 5), "float32")
