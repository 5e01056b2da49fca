"""Single-stage anchor-based detector: MobileNetV2 backbone, PAN-lite neck, YOLO-style heads.

Input 1x3x320x320; output [1, N, 85] with per-anchor (x, y, w, h) raw box regressions followed
by sigmoid objectness and 80 sigmoid class scores, N = 3 anchors x (40^2 + 20^2 + 10^2).
"""

from __future__ import annotations

import numpy as np
import onnx

from edgebench.models.graph import GraphBuilder
from edgebench.models.layers import conv, conv_bn_act
from edgebench.models.mobilenetv2 import mobilenetv2_body

INPUT_SHAPE = (1, 3, 320, 320)
NUM_CLASSES = 80
ANCHORS = 3
BOX = 4
OUTPUTS_PER_ANCHOR = BOX + 1 + NUM_CLASSES
NECK = 96
STRIDES = (8, 16, 32)
NUM_PREDICTIONS = ANCHORS * sum((INPUT_SHAPE[2] // s) * (INPUT_SHAPE[3] // s) for s in STRIDES)
ACT = "silu"


def upsample2x(b: GraphBuilder, x: str, name: str) -> str:
    # Opset-17 Resize: roi is left empty (''), the scale factors come from an initializer.
    scales = b.initializer(f"{name}.scales", np.array([1, 1, 2, 2], dtype=np.float32))
    return b.op(
        "Resize",
        [x, "", scales],
        name,
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )


def fuse(b: GraphBuilder, parts: list[str], name: str, cin: int) -> str:
    """Concat + 1x1 squeeze + depthwise 3x3 + 1x1 (a light CSP-free fusion block)."""
    y = b.op("Concat", parts, f"{name}.concat", axis=1)
    y = conv_bn_act(b, y, f"{name}.reduce", cin, NECK, 1, act=ACT)
    y = conv_bn_act(b, y, f"{name}.dw", NECK, NECK, 3, 1, NECK, act=ACT)
    return conv_bn_act(b, y, f"{name}.pw", NECK, NECK, 1, act=ACT)


def downsample(b: GraphBuilder, x: str, name: str) -> str:
    y = conv_bn_act(b, x, f"{name}.dw", NECK, NECK, 3, 2, NECK, act=ACT)
    return conv_bn_act(b, y, f"{name}.pw", NECK, NECK, 1, act=ACT)


def neck(b: GraphBuilder, features: dict[int, tuple[str, int]]) -> list[str]:
    """Top-down (FPN) then bottom-up (PAN) path; returns stride-8/16/32 maps of NECK channels."""
    (c3, ch3), (c4, ch4), (c5, ch5) = (features[s] for s in STRIDES)
    p5 = conv_bn_act(b, c5, "neck.lateral5", ch5, NECK, 1, act=ACT)
    p4 = fuse(b, [upsample2x(b, p5, "neck.up5"), c4], "neck.top4", NECK + ch4)
    p3 = fuse(b, [upsample2x(b, p4, "neck.up4"), c3], "neck.top3", NECK + ch3)
    n4 = fuse(b, [downsample(b, p3, "neck.down3"), p4], "neck.bottom4", 2 * NECK)
    n5 = fuse(b, [downsample(b, n4, "neck.down4"), p5], "neck.bottom5", 2 * NECK)
    return [p3, n4, n5]


def head(b: GraphBuilder, x: str, name: str, stride: int) -> str:
    """Predictions of one scale as [1, anchors * H * W, 85]."""
    cells = (INPUT_SHAPE[2] // stride) * (INPUT_SHAPE[3] // stride)
    y = conv_bn_act(b, x, f"{name}.dw", NECK, NECK, 3, 1, NECK, act=ACT)
    y = conv_bn_act(b, y, f"{name}.pw", NECK, NECK, 1, act=ACT)
    y = conv(b, y, f"{name}.pred", NECK, ANCHORS * OUTPUTS_PER_ANCHOR, 1, gain=1.0, bias=True)
    shape = b.const_i64([1, ANCHORS, OUTPUTS_PER_ANCHOR, cells])
    y = b.op("Reshape", [y, shape], f"{name}.split_anchors")
    y = b.op("Transpose", [y], f"{name}.to_cells", perm=[0, 1, 3, 2])
    flat = b.const_i64([1, ANCHORS * cells, OUTPUTS_PER_ANCHOR])
    return b.op("Reshape", [y, flat], f"{name}.flatten")


def build_detector(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    features = mobilenetv2_body(b, "input")
    maps = neck(b, features)
    preds = [head(b, m, f"head{s}", s) for m, s in zip(maps, STRIDES, strict=True)]
    y = b.op("Concat", preds, "predictions", axis=1)
    box, scores = b.op_multi(
        "Split", [y, b.const_i64([BOX, OUTPUTS_PER_ANCHOR - BOX])], "split_box", 2, axis=2
    )
    scores = b.op("Sigmoid", [scores], "scores")
    y = b.op("Concat", [box, scores], "detections", axis=2)
    output_shape = (1, NUM_PREDICTIONS, OUTPUTS_PER_ANCHOR)
    return b.build("detector", INPUT_SHAPE, y, output_shape, "MobileNetV2 + PAN-lite, 320x320")
