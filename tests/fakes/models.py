"""Small hand-made ONNX models: a one-conv model (static or symbolic dims), a sqrt that turns
half its inputs into NaN, a sparse detector and a corrupt file, as helpers and as fixtures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def save_conv_model(path: Path, dims: Sequence[int | str], channels: int = 8) -> Path:
    """A one-conv model; string dims become symbolic (dynamic) dimensions."""
    rng = np.random.default_rng(1)
    weight = numpy_helper.from_array(
        (rng.standard_normal((channels, 3, 3, 3)) * 0.2).astype(np.float32), "w"
    )
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def save_sqrt_model(path: Path) -> Path:
    """y = sqrt(x) on a 1x3x8x8 input: seeded inputs are half negative, so about half the
    outputs are NaN, from finite inputs."""
    graph = helper.make_graph(
        [helper.make_node("Sqrt", ["x"], ["y"])],
        "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def conv_model(tmp_path: Path) -> Path:
    return save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])


def save_sparse_detector(path: Path, perturb: float = 0.0) -> Path:
    """A small detector whose head is a sigmoid over mostly negative logits (bias -12): its
    score map is ~0 almost everywhere (99% of it below 1e-3) with a few responses near 0.03.
    ``perturb`` adds that many standard deviations of noise to the middle conv's weights: a
    corrupted copy whose outputs a correct framework cannot reproduce."""
    rng = np.random.default_rng(3)
    weights = {
        "stem.w": rng.standard_normal((16, 3, 3, 3)) * 0.3,
        "mid.w": rng.standard_normal((16, 16, 3, 3)) * 0.12,
        "head.w": rng.standard_normal((4, 16, 1, 1)) * 0.4,
        "head.b": np.full(4, -12.0),
    }
    if perturb:
        mid = weights["mid.w"]
        weights["mid.w"] = mid + perturb * mid.std() * np.random.default_rng(9).standard_normal(
            mid.shape
        )
    nodes = [
        helper.make_node("Conv", ["x", "stem.w"], ["s"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["s"], ["s_act"]),
        helper.make_node("Conv", ["s_act", "mid.w"], ["m"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["m"], ["m_act"]),
        helper.make_node("Conv", ["m_act", "head.w", "head.b"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sparse_detector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def sparse_detector(tmp_path: Path) -> tuple[Path, Path]:
    """(the sparse detector, a copy with perturbed weights)."""
    return (
        save_sparse_detector(tmp_path / "sparse.onnx"),
        save_sparse_detector(tmp_path / "sparse-corrupted.onnx", perturb=0.05),
    )


@pytest.fixture
def corrupt_model(tmp_path: Path) -> Path:
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07this is not a protobuf model \xff\xfe" * 8)
    return path


def save_double_model(path: Path) -> Path:
    """The ONNX model the dummy framework "runs": y = 2 * x, x of shape [1, 16]."""
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])],
        "double",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path
