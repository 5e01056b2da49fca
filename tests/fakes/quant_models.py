"""A small image classifier to quantize: conv, depthwise conv, pooling and a dense head.

Its weights are scaled so every layer keeps a unit-ish activation range, as a trained network
does; random weights without that scaling make logits that differ by less than int8 noise,
and a top-1 figure on them would measure the model, not the quantizer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: `edgebench run` options for a quick cell whose records come on stdout.
QUICK_JSONL_RUN = ("--iterations", "3", "--min-time", "0", "--format", "jsonl")
INPUT = "image"
OUTPUT = "logits"
SHAPE = [1, 3, 32, 32]
CLASSES = 10


def he_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def small_classifier(
    seed: int = 7,
    dims: list[int | str] | None = None,
    out_dims: list[int | str] | None = None,
) -> onnx.ModelProto:
    """Conv, depthwise conv, pointwise conv, pooling and a linear head; ``dims`` and
    ``out_dims`` (default: static ``SHAPE`` and ``[1, CLASSES]``) may hold symbolic names."""
    rng = np.random.default_rng(seed)
    weights = {
        "w1": he_normal(rng, (16, 3, 3, 3), 27),
        "b1": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "w2": he_normal(rng, (16, 1, 3, 3), 9),
        "b2": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "w3": he_normal(rng, (32, 16, 1, 1), 16),
        "b3": (rng.standard_normal(32) * 0.1).astype(np.float32),
        "fc": he_normal(rng, (CLASSES, 32), 32) * 4.0,
        "fcb": (rng.standard_normal(CLASSES) * 0.1).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], [OUTPUT], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_classifier",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, dims or SHAPE)],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, out_dims or [1, CLASSES])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def save_small_classifier(path: Path, seed: int = 7) -> Path:
    onnx.save(small_classifier(seed), str(path))
    return path
