"""MobileNetV2 (Sandler et al. 2018), width 1.0, 224x224 ImageNet classifier."""

from __future__ import annotations

import onnx

from edgebench.models.graph import GraphBuilder
from edgebench.models.layers import RESIDUAL_GAMMA, classifier_head, conv_bn_act

INPUT_SHAPE = (1, 3, 224, 224)
NUM_CLASSES = 1000
STEM_CHANNELS = 32
LAST_CHANNELS = 1280
# (expansion t, output channels c, repeats n, first stride s), Table 2 of the paper.
INVERTED_RESIDUAL_SETTINGS = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def inverted_residual(
    b: GraphBuilder, x: str, name: str, cin: int, cout: int, stride: int, expand: int
) -> str:
    hidden = cin * expand
    y = x
    if expand != 1:
        y = conv_bn_act(b, y, f"{name}.expand", cin, hidden, 1, act="relu6")
    y = conv_bn_act(b, y, f"{name}.dw", hidden, hidden, 3, stride, hidden, act="relu6")
    residual = stride == 1 and cin == cout
    gamma = RESIDUAL_GAMMA if residual else 1.0
    y = conv_bn_act(b, y, f"{name}.project", hidden, cout, 1, act=None, gamma=gamma)
    return b.op("Add", [x, y], f"{name}.add") if residual else y


def mobilenetv2_body(b: GraphBuilder, x: str) -> dict[int, tuple[str, int]]:
    """Stem and inverted-residual stages (no final 1x1 conv).

    Returns, for each output stride (2 ... 32), the last tensor at that stride and its channel
    count, so a detector can tap stride-8/16/32 features.
    """
    y = conv_bn_act(b, x, "stem", 3, STEM_CHANNELS, 3, 2, act="relu6")
    stride, channels = 2, STEM_CHANNELS
    features = {stride: (y, channels)}
    for stage, (t, c, n, s) in enumerate(INVERTED_RESIDUAL_SETTINGS):
        for i in range(n):
            block_stride = s if i == 0 else 1
            y = inverted_residual(b, y, f"stage{stage}.block{i}", channels, c, block_stride, t)
            stride, channels = stride * block_stride, c
            features[stride] = (y, channels)
    return features


def build_mobilenetv2(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    y, channels = mobilenetv2_body(b, "input")[32]
    y = conv_bn_act(b, y, "last", channels, LAST_CHANNELS, 1, act="relu6")
    y = classifier_head(b, y, "classifier", LAST_CHANNELS, NUM_CLASSES)
    return b.build("mobilenetv2", INPUT_SHAPE, y, (1, NUM_CLASSES), "MobileNetV2 1.0, 224x224")
