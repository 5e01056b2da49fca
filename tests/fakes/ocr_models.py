"""Small ONNX models with the graph patterns of real exported mobile OCR models, for converter
tests.

The real models (a PaddleOCR-style DB text detector and a text direction classifier, exported
with dynamic H/W) compute reshape targets and resize sizes at run time from ``Shape`` ops and
write hardswish the way paddle2onnx does, ``Mul(x, HardSigmoid(x))``. These builders reproduce
those patterns with a few channels and seeded weights, so that converting and running one takes
well under a second:

* ``text_detector``: Conv+BN+Relu/HardSwish stages down to /16, an FPN whose coarser maps are
  upsampled with ``Resize`` (scales, and one whose sizes come from ``Shape -> Slice -> Concat``),
  added and concatenated, a head with two ``ConvTranspose`` (kernel 2, stride 2) and a
  ``Sigmoid`` map [N, 1, H, W].
* ``direction_classifier``: depthwise-separable blocks with a squeeze-and-excite gate,
  ``GlobalAveragePool``, torch's flatten (``Shape -> Gather -> Unsqueeze -> Concat ->
  Reshape``), ``Gemm``, ``MatMul + Add`` and ``Softmax``: [N, 2].
* ``spatial_attention``: ``Softmax`` over axes 1 and 2 of a 4-D map, a reshape to [N, C, -1]
  built from ``Shape``, a spatial softmax, a reshape back by ``Shape`` and ``Flatten``.

Every input is [N, 3, H, W] with symbolic N, H and W. ``TEST_SHAPES`` and ``SECOND_SHAPES`` give
two concrete shapes per model; ``CASES`` pairs each name with each of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17

TEST_SHAPES: dict[str, dict[str, list[int]]] = {
    "text_detector": {"x": [1, 3, 80, 112]},
    "direction_classifier": {"x": [1, 3, 48, 192]},
    "spatial_attention": {"x": [1, 3, 36, 52]},
}
# The detector needs H and W divisible by 16 (its FPN adds /16 maps upsampled x2 to /8 maps).
SECOND_SHAPES: dict[str, dict[str, list[int]]] = {
    "text_detector": {"x": [1, 3, 48, 144]},
    "direction_classifier": {"x": [1, 3, 36, 100]},
    "spatial_attention": {"x": [1, 3, 30, 46]},
}


class _Builder:
    """Accumulates nodes and seeded initializers, naming them the way paddle2onnx does."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def _name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, value: np.ndarray, stem: str = "const") -> str:
        name = self._name(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(np.array(values, np.int64), "shape")

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        index = self._name(op.lower())
        output = f"{index}.tmp_0"
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"p2o.{index}", **attrs))
        return output

    def conv(
        self,
        x: str,
        c_in: int,
        c_out: int,
        k: int,
        stride: int = 1,
        group: int = 1,
        bias: bool = False,
    ) -> str:
        fan_in = c_in // group * k * k
        weight = self.rng.standard_normal((c_out, c_in // group, k, k)) * np.sqrt(2.0 / fan_in)
        inputs = [x, self.const(weight.astype(np.float32), "conv.w")]
        if bias:
            inputs.append(self.const(self.vector(c_out, 0.1), "conv.b"))
        pad = k // 2
        return self.node(
            "Conv",
            inputs,
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=group,
            dilations=[1, 1],
        )

    def vector(self, size: int, scale: float, offset: float = 0.0) -> np.ndarray:
        return (self.rng.standard_normal(size) * scale + offset).astype(np.float32)

    def batch_norm(self, x: str, channels: int) -> str:
        params = [
            self.vector(channels, 0.1, 1.0),  # scale
            self.vector(channels, 0.1),  # bias
            self.vector(channels, 0.1),  # mean
            (np.abs(self.vector(channels, 0.2)) + 0.8).astype(np.float32),  # var
        ]
        names = [self.const(p, "bn") for p in params]
        return self.node("BatchNormalization", [x, *names], epsilon=1e-5, momentum=0.9)

    def hard_swish(self, x: str) -> str:
        """hardswish as paddle2onnx writes it."""
        gate = self.node("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)
        return self.node("Mul", [x, gate])

    def conv_bn(
        self,
        x: str,
        c_in: int,
        c_out: int,
        k: int,
        stride: int = 1,
        group: int = 1,
        act: str | None = "relu",
    ) -> str:
        y = self.batch_norm(self.conv(x, c_in, c_out, k, stride, group), c_out)
        if act == "relu":
            return self.node("Relu", [y])
        return self.hard_swish(y) if act == "hardswish" else y

    def separable(self, x: str, c_in: int, c_out: int, stride: int) -> str:
        """MobileNetV3's depthwise 3x3 (ReLU) then pointwise 1x1 (hardswish)."""
        y = self.conv_bn(x, c_in, c_in, 3, stride, group=c_in, act="relu")
        return self.conv_bn(y, c_in, c_out, 1, act="hardswish")

    def model(self, name: str, output: str, output_dims: list[int | str]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_dims)],
            self.initializers,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="edgebench-tests"
        )
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


def build_text_detector(seed: int = 0) -> onnx.ModelProto:
    """DBNet-like detector: probability map [N, 1, H, W]."""
    b = _Builder(seed)
    stem = b.conv_bn("x", 3, 8, 3, stride=2, act="hardswish")  # /2
    c2 = b.separable(stem, 8, 16, stride=2)  # /4
    c3 = b.separable(c2, 16, 24, stride=2)  # /8
    c4 = b.separable(c3, 24, 32, stride=2)  # /16

    # FPN: 1x1 lateral convs, top-down upsampling and adding.
    in2, in3, in4 = (b.conv(c, ch, 16, 1) for c, ch in ((c2, 16), (c3, 24), (c4, 32)))
    empty_roi = b.const(np.zeros(0, np.float32), "roi")

    def upsample(x: str, factor: float) -> str:
        """paddle's F.upsample(scale_factor=...) as paddle2onnx writes it."""
        scales = b.const(np.array([1, 1, factor, factor], np.float32), "scales")
        return b.node(
            "Resize",
            [x, empty_roi, scales],
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )

    out3 = b.node("Add", [in3, upsample(in4, 2.0)])
    # torch's F.interpolate(out3, size=in2.shape[2:]): sizes computed from two Shape ops.
    batch_channels = b.node("Slice", [b.node("Shape", [out3]), b.ints(0), b.ints(2)])
    spatial = b.node("Slice", [b.node("Shape", [in2]), b.ints(2), b.ints(4)])
    sizes = b.node("Concat", [batch_channels, spatial], axis=0)
    up3 = b.node(
        "Resize",
        [out3, "", "", sizes],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    out2 = b.node("Add", [in2, up3])
    p4, p3, p2 = (b.conv(c, 16, 4, 3) for c in (in4, out3, out2))
    fuse = b.node("Concat", [upsample(p4, 4.0), upsample(p3, 2.0), p2], axis=1)

    # DB head: conv, then two stride-2 transposed convs back to full size.
    head = b.conv_bn(fuse, 12, 8, 3, act="relu")

    def deconv(x: str, c_in: int, c_out: int) -> str:
        weight = b.rng.standard_normal((c_in, c_out, 2, 2)) * np.sqrt(1.0 / c_in)
        names = [b.const(weight.astype(np.float32), "deconv.w"), b.const(b.vector(c_out, 0.1))]
        return b.node("ConvTranspose", [x, *names], kernel_shape=[2, 2], strides=[2, 2])

    up = b.node("Relu", [b.batch_norm(deconv(head, 8, 8), 8)])
    prob = b.node("Sigmoid", [deconv(up, 8, 1)])
    return b.model("text_detector", prob, ["N", 1, "H", "W"])


def build_direction_classifier(seed: int = 0) -> onnx.ModelProto:
    """MobileNetV3-like 0/180 degree classifier: class probabilities [N, 2]."""
    b = _Builder(seed)
    stem = b.conv_bn("x", 3, 8, 3, stride=2, act="hardswish")
    dw = b.conv_bn(stem, 8, 8, 3, group=8, act="relu")
    # Squeeze-and-excite: pooled, two 1x1 convs, a hard-sigmoid gate multiplied in.
    pooled = b.node("GlobalAveragePool", [dw])
    squeeze = b.node("Relu", [b.conv(pooled, 8, 4, 1, bias=True)])
    gate = b.node("HardSigmoid", [b.conv(squeeze, 4, 8, 1, bias=True)], alpha=0.2, beta=0.5)
    excited = b.node("Mul", [dw, gate])
    y = b.conv_bn(excited, 8, 16, 1, act="hardswish")
    y = b.separable(y, 16, 24, stride=2)
    y = b.separable(y, 24, 32, stride=2)
    pooled = b.node("GlobalAveragePool", [y])

    # torch.flatten(x, 1) as torch.onnx exports it with a dynamic batch.
    batch = b.node("Gather", [b.node("Shape", [pooled]), b.const(np.array(0, np.int64))], axis=0)
    target = b.node("Concat", [b.node("Unsqueeze", [batch, b.ints(0)]), b.ints(-1)], axis=0)
    flat = b.node("Reshape", [pooled, target])

    w1 = (b.rng.standard_normal((16, 32)) * np.sqrt(2.0 / 32)).astype(np.float32)
    hidden = b.node(
        "Gemm", [flat, b.const(w1, "fc.w"), b.const(b.vector(16, 0.1), "fc.b")], transB=1
    )
    hidden = b.hard_swish(hidden)
    w2 = b.rng.standard_normal((16, 2)).astype(np.float32)
    logits = b.node(
        "Add", [b.node("MatMul", [hidden, b.const(w2, "cls.w")]), b.const(b.vector(2, 0.1))]
    )
    probs = b.node("Softmax", [logits], axis=-1)
    return b.model("direction_classifier", probs, ["N", 2])


def build_spatial_attention(seed: int = 0) -> onnx.ModelProto:
    """Channel and row softmax gates, a spatial softmax over a Shape-built [N, C, -1] view, and
    a flattened map [N, C * H/2 * W/2]."""
    b = _Builder(seed)
    features = b.conv_bn("x", 3, 8, 3, stride=2, act="relu")
    logits = b.conv(features, 8, 8, 1, bias=True)
    over_channels = b.node("Softmax", [logits], axis=1)
    over_rows = b.node("Softmax", [logits], axis=2)
    gated = b.node("Add", [b.node("Mul", [features, over_channels]), over_rows])

    shape = b.node("Shape", [gated])
    target = b.node("Concat", [b.node("Slice", [shape, b.ints(0), b.ints(2)]), b.ints(-1)], axis=0)
    spatial = b.node("Softmax", [b.node("Reshape", [gated, target])], axis=-1)
    restored = b.node("Reshape", [spatial, shape])
    flat = b.node("Flatten", [restored], axis=1)
    return b.model("spatial_attention", flat, ["N", "F"])


BUILDERS: dict[str, Callable[[int], onnx.ModelProto]] = {
    "text_detector": build_text_detector,
    "direction_classifier": build_direction_classifier,
    "spatial_attention": build_spatial_attention,
}
NAMES: tuple[str, ...] = tuple(BUILDERS)
CASES: list[tuple[str, dict[str, list[int]]]] = [
    (name, shapes[name]) for name in NAMES for shapes in (TEST_SHAPES, SECOND_SHAPES)
]


def build(name: str, seed: int = 0) -> onnx.ModelProto:
    if name not in BUILDERS:
        raise KeyError(f"unknown OCR-style test model {name!r}; choose from {', '.join(NAMES)}")
    return BUILDERS[name](seed)
