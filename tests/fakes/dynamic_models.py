"""Small models for shape sweeps, with seeded weights scaled to keep unit-ish activations
(outputs compared across frameworks stay well above float noise).

``dynamic_classifier``: three convolutions (one strided, one depthwise), a global average
pool, a flatten and a Gemm, with batch, height and width symbolic: it runs at any
``N x 3 x H x W``.

``reshape_head``: a static ``1x3x64x64`` model with a detector-style head whose Reshape
targets are constants written for that size, as exporters write them
(``[1, anchors, fields, cells]``): what ``edgebench.models.dynamic.relax_inputs`` has to
generalise, and what a fixed artifact cannot take at another size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fakes.quant_models import CLASSES, INPUT, OUTPUT, he_normal, small_classifier

#: The input's dims as the model declares them: symbolic batch, height and width.
DIMS: list[int | str] = ["batch", 3, "height", "width"]
#: Sizes the tests run it at (any size works; these keep every test fast).
SMALL_SHAPE = [1, 3, 64, 64]
LARGE_SHAPE = [1, 3, 96, 96]


def dynamic_classifier(seed: int = 11) -> onnx.ModelProto:
    """The quantization tests' small classifier with symbolic batch, height and width."""
    model = small_classifier(seed, dims=DIMS, out_dims=["batch", CLASSES])
    onnx.checker.check_model(model, full_check=True)
    return model


def save_dynamic_classifier(path: Path, seed: int = 11) -> Path:
    """Write the model to ``path`` and return it."""
    onnx.save(dynamic_classifier(seed), str(path))
    return path


HEAD_SHAPE = [1, 3, 64, 64]
HEAD_STRIDE = 4
ANCHORS = 2
FIELDS = 5


def reshape_head(seed: int = 13) -> onnx.ModelProto:
    """Conv (stride 4) + ReLU + a 1x1 prediction conv, then Reshape to
    ``[1, ANCHORS, FIELDS, cells]``, Transpose and Reshape to ``[1, ANCHORS * cells, FIELDS]``."""
    rng = np.random.default_rng(seed)
    cells = (HEAD_SHAPE[2] // HEAD_STRIDE) * (HEAD_SHAPE[3] // HEAD_STRIDE)
    channels = ANCHORS * FIELDS
    weights = {
        "w1": he_normal(rng, (8, 3, HEAD_STRIDE, HEAD_STRIDE), 3 * HEAD_STRIDE * HEAD_STRIDE),
        "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "w2": he_normal(rng, (channels, 8, 1, 1), 8),
        "b2": (rng.standard_normal(channels) * 0.1).astype(np.float32),
        "split_shape": np.array([1, ANCHORS, FIELDS, cells], np.int64),
        "flat_shape": np.array([1, ANCHORS * cells, FIELDS], np.int64),
    }
    stride = [HEAD_STRIDE, HEAD_STRIDE]
    nodes = [
        helper.make_node("Conv", [INPUT, "w1", "b1"], ["c1"], strides=stride),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["pred"]),
        helper.make_node("Reshape", ["pred", "split_shape"], ["split"]),
        helper.make_node("Transpose", ["split"], ["cells"], perm=[0, 1, 3, 2]),
        helper.make_node("Reshape", ["cells", "flat_shape"], [OUTPUT]),
    ]
    graph = helper.make_graph(
        nodes,
        "reshape_head",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, HEAD_SHAPE)],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, ANCHORS * cells, FIELDS])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model
