"""ResNet-50 v1.5 (stride on the bottleneck's 3x3 conv), 224x224 ImageNet classifier."""

from __future__ import annotations

import onnx

from edgebench.models.graph import GraphBuilder
from edgebench.models.layers import RELU_GAIN, RESIDUAL_GAMMA, classifier_head, conv_bn_act

INPUT_SHAPE = (1, 3, 224, 224)
NUM_CLASSES = 1000
EXPANSION = 4
# (bottleneck width, number of blocks, stride of the first block)
STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


def bottleneck(b: GraphBuilder, x: str, name: str, cin: int, width: int, stride: int) -> str:
    cout = width * EXPANSION
    y = conv_bn_act(b, x, f"{name}.conv1", cin, width, 1)
    y = conv_bn_act(b, y, f"{name}.conv2", width, width, 3, stride)
    # conv3 and the projection feed Add + Relu, hence the ReLU gain; the residual branch is
    # shrunk through its BN gamma instead.
    y = conv_bn_act(
        b, y, f"{name}.conv3", width, cout, 1, act=None, gamma=RESIDUAL_GAMMA, gain=RELU_GAIN
    )
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = conv_bn_act(
            b, x, f"{name}.downsample", cin, cout, 1, stride, act=None, gain=RELU_GAIN
        )
    y = b.op("Add", [shortcut, y], f"{name}.add")
    return b.op("Relu", [y], f"{name}.relu")


def build_resnet50(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    y = conv_bn_act(b, "input", "stem", 3, 64, 7, 2)
    y = b.op("MaxPool", [y], "stem.pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage, (width, blocks, stride) in enumerate(STAGES):
        for i in range(blocks):
            y = bottleneck(b, y, f"layer{stage + 1}.{i}", channels, width, stride if i == 0 else 1)
            channels = width * EXPANSION
    y = classifier_head(b, y, "fc", channels, NUM_CLASSES)
    return b.build("resnet50", INPUT_SHAPE, y, (1, NUM_CLASSES), "ResNet-50 v1.5, 224x224")
