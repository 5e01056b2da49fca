"""One small ONNX graph per TNN layer type that edgebench's TNN writer emits (converters/tnn/
ops*.py), for the test that runs each in the writer's NumPy executor, in real TNN and in ONNX
Runtime. A type whose params switch between different kernels (pooling kinds, nearest and
bilinear Upsample, a constant or a computed operand) has a case per kernel.

``LAYER_CASES`` maps a case id to ``LayerCase``: the TNN layer type the case is for, the model,
and the range its seeded inputs are drawn from (Log, Sqrt and Reciprocal need positive ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


@dataclass(frozen=True)
class LayerCase:
    layer: str  # the TNN layer type this case makes the writer emit
    build: Callable[[], onnx.ModelProto]
    low: float = -2.0
    high: float = 2.0
    #: Whether TNN's ARM device has a kernel for it (TNN runs Erf on CPU, X86 and CUDA only).
    on_arm: bool = True

    def inputs(self, model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        feeds = {}
        for value in model.graph.input:
            dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
            feeds[value.name] = rng.uniform(self.low, self.high, dims).astype(np.float32)
        return feeds


def weights(*shape: int, seed: int = 1, scale: float = 0.3) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list[int]],
    outputs: tuple[str, ...] = ("y",),
    constants: dict[str, np.ndarray] | None = None,
    opset: int = OPSET,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "layer",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (constants or {}).items()],
    )
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    made.ir_version = 8
    return made


X4 = {"x": [1, 4, 6, 8]}


def one(
    op: str, inputs: dict | None = None, opset: int = OPSET, **attrs
) -> Callable[[], onnx.ModelProto]:
    """A graph of one ``op`` node on x."""
    shapes = inputs or X4
    return lambda: model(
        [helper.make_node(op, list(shapes), ["y"], name="op", **attrs)], shapes, opset=opset
    )


def with_constant(op: str, value: np.ndarray, first: bool = False) -> Callable[[], onnx.ModelProto]:
    """``op`` on x and a constant (the constant first when ``first``)."""
    operands = ["c", "x"] if first else ["x", "c"]
    return lambda: model(
        [helper.make_node(op, operands, ["y"], name="op")], X4, constants={"c": value}
    )


def two_inputs(op: str) -> Callable[[], onnx.ModelProto]:
    """``op`` on two computed inputs, the second broadcast over H and W."""
    shapes = {"x": [1, 4, 6, 8], "z": [1, 4, 1, 1]}
    return lambda: model([helper.make_node(op, ["x", "z"], ["y"], name="op")], shapes)


def chain(*nodes: onnx.NodeProto, inputs: dict | None = None, opset: int = OPSET, **constants):
    return lambda: model(list(nodes), inputs or X4, constants=constants, opset=opset)


def node(op: str, inputs: list[str], outputs: list[str], name: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=name, **attrs)


def swish() -> onnx.ModelProto:
    return chain(node("Sigmoid", ["x"], ["s"], "sig"), node("Mul", ["x", "s"], ["y"], "mul"))()


def conv(group: int = 1, stride: int = 1, kernel: int = 3) -> Callable[[], onnx.ModelProto]:
    attrs = {"group": group, "strides": [stride, stride], "pads": [kernel // 2] * 4}
    w = weights(6 if group == 1 else 4, 4 // group, kernel, kernel)
    b = weights(w.shape[0], seed=2)
    return chain(node("Conv", ["x", "w", "b"], ["y"], "conv", **attrs), w=w, b=b)


def deconv(
    stride: int, kernel: int, pads: int, output_padding: int
) -> Callable[[], onnx.ModelProto]:
    attrs = {
        "strides": [stride, stride],
        "pads": [pads] * 4,
        "output_padding": [output_padding] * 2,
    }
    return chain(
        node("ConvTranspose", ["x", "w", "b"], ["y"], "deconv", **attrs),
        w=weights(4, 3, kernel, kernel),
        b=weights(3, seed=2),
    )


def batch_norm() -> onnx.ModelProto:
    scale, bias = weights(4, seed=3) + 1, weights(4, seed=4)
    mean, var = weights(4, seed=5), np.abs(weights(4, seed=6)) + 0.5
    bn = node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn")
    return chain(bn, s=scale, b=bias, m=mean, v=var)()


def gemm() -> onnx.ModelProto:
    return chain(
        node("Gemm", ["x", "w", "b"], ["y"], "fc", transB=1),
        inputs={"x": [1, 16]},
        w=weights(10, 16),
        b=weights(10, seed=2),
    )()


def layer_norm() -> onnx.ModelProto:
    ln = node("LayerNormalization", ["x", "g", "b"], ["y"], "ln", axis=-1, epsilon=1e-5)
    return chain(ln, inputs={"x": [1, 6, 16]}, g=weights(16, seed=2) + 1, b=weights(16, seed=3))()


def resize(mode: str, transform: str, sizes: list[int] | None = None):
    """x2, or to ``sizes`` (H, W) when given."""
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    if sizes is not None:
        inputs, value = ["x", "", "", "sizes"], np.array([1, 4, *sizes], np.int64)
    else:
        inputs, value = ["x", "", "scales"], np.array([1, 1, 2, 2], np.float32)
    return chain(node("Resize", inputs, ["y"], "resize", **attrs), **{inputs[-1]: value})


def reshape_to(shape: list[int], inputs: dict | None = None) -> Callable[[], onnx.ModelProto]:
    return chain(
        node("Reshape", ["x", "shape"], ["y"], "reshape"),
        inputs=inputs,
        shape=np.array(shape, np.int64),
    )


def detector_head() -> onnx.ModelProto:
    """The built-in detector's head: Reshape to anchors, Permute, Reshape, Split, Sigmoid and
    Concat."""
    nodes = [
        node("Reshape", ["x", "s1"], ["a"], "split_anchors"),
        node("Transpose", ["a"], ["t"], "to_cells", perm=[0, 1, 3, 2]),
        node("Reshape", ["t", "s2"], ["f"], "flatten"),
        node("Split", ["f", "sizes"], ["box", "cls"], "split", axis=2),
        node("Sigmoid", ["cls"], ["scores"], "scores"),
        node("Concat", ["box", "scores"], ["y"], "detections", axis=2),
    ]
    consts = {
        "s1": np.array([1, 3, 7, 20], np.int64),
        "s2": np.array([1, 60, 7], np.int64),
        "sizes": np.array([3, 4], np.int64),
    }
    return chain(*nodes, inputs={"x": [1, 21, 4, 5]}, **consts)()


def split() -> onnx.ModelProto:
    nodes = [
        node("Split", ["x", "sizes"], ["a", "b"], "split", axis=2),
        node("Add", ["a", "a"], ["y"], "double_a"),
    ]
    return chain(*nodes, inputs={"x": [1, 5, 9]}, sizes=np.array([2, 7], np.int64))()


def split_two_outputs() -> onnx.ModelProto:
    made = model(
        [node("Split", ["x", "sizes"], ["a", "b"], "split", axis=1)],
        X4,
        outputs=("a", "b"),
        constants={"sizes": np.array([1, 3], np.int64)},
    )
    return made


def slice_(starts: list[int], ends: list[int], axes: list[int], steps: list[int]):
    big = np.iinfo(np.int64).max
    consts = {
        "starts": np.array(starts, np.int64),
        "ends": np.array([big if e is None else e for e in ends], np.int64),
        "axes": np.array(axes, np.int64),
        "steps": np.array(steps, np.int64),
    }
    inputs = ["x", "starts", "ends", "axes", "steps"]
    return chain(node("Slice", inputs, ["y"], "slice"), **consts)


def pad(mode: str, pads: list[int], inputs: dict | None = None) -> Callable[[], onnx.ModelProto]:
    return chain(
        node("Pad", ["x", "pads"], ["y"], "pad", mode=mode),
        inputs=inputs,
        pads=np.array(pads, np.int64),
    )


def reduce(op: str, axes: list[int], keepdims: int) -> Callable[[], onnx.ModelProto]:
    return chain(
        node(op, ["x", "axes"], ["y"], "reduce", keepdims=keepdims),
        axes=np.array(axes, np.int64),
        opset=18,
    )


def prelu_per_channel() -> onnx.ModelProto:
    return chain(node("PRelu", ["x", "slope"], ["y"], "prelu"), slope=weights(4, 1, 1, seed=7))()


def concat_with_constant() -> onnx.ModelProto:
    return chain(
        node("Concat", ["x", "c"], ["y"], "concat", axis=1), c=weights(1, 2, 6, 8, seed=8)
    )()


def gather() -> onnx.ModelProto:
    return chain(
        node("Gather", ["x", "i"], ["y"], "gather", axis=1), i=np.array([3, 0, 2], np.int64)
    )()


def matmul_const() -> onnx.ModelProto:
    return chain(
        node("MatMul", ["x", "w"], ["y"], "matmul"), inputs={"x": [1, 4, 8]}, w=weights(8, 5)
    )()


def matmul_two() -> onnx.ModelProto:
    shapes = {"x": [1, 4, 8], "z": [1, 8, 5]}
    return model([node("MatMul", ["x", "z"], ["y"], "matmul")], shapes)


def gelu() -> onnx.ModelProto:
    return one("Gelu", opset=20)()


def channel(value: float = 0.0) -> np.ndarray:
    return weights(1, 4, 1, 1, seed=9) + np.float32(value)


LAYER_CASES: dict[str, LayerCase] = {
    "ReLU": LayerCase("ReLU", one("Relu")),
    "Sigmoid": LayerCase("Sigmoid", one("Sigmoid")),
    "Erf": LayerCase("Erf", one("Erf"), on_arm=False),
    "Swish": LayerCase("Swish", swish),
    "Tanh": LayerCase("Tanh", one("Tanh")),
    "Exp": LayerCase("Exp", one("Exp")),
    "Log": LayerCase("Log", one("Log"), 0.1, 3.0),
    "Sqrt": LayerCase("Sqrt", one("Sqrt"), 0.1, 3.0),
    "Abs": LayerCase("Abs", one("Abs")),
    "Neg": LayerCase("Neg", one("Neg")),
    "Reciprocal": LayerCase("Reciprocal", one("Reciprocal"), 0.2, 3.0),
    "GELU": LayerCase("GELU", gelu),
    "HardSwish": LayerCase("HardSwish", one("HardSwish"), -5.0, 5.0),
    "HardSigmoid": LayerCase("HardSigmoid", one("HardSigmoid", alpha=0.2, beta=0.5), -4.0, 4.0),
    "ReLU6": LayerCase(
        "ReLU6",
        chain(node("Clip", ["x", "lo", "hi"], ["y"], "clip"), lo=np.float32(0), hi=np.float32(6)),
        -3.0,
        9.0,
    ),
    "Clip": LayerCase(
        "Clip",
        chain(
            node("Clip", ["x", "lo", "hi"], ["y"], "clip"), lo=np.float32(-0.5), hi=np.float32(0.7)
        ),
    ),
    "Elu": LayerCase("Elu", one("Elu", alpha=0.7)),
    "PReLU-shared": LayerCase("PReLU", one("LeakyRelu", alpha=0.1)),
    "PReLU-channel": LayerCase("PReLU", prelu_per_channel),
    "Add-constant": LayerCase("Add", with_constant("Add", channel())),
    "Add-two-inputs": LayerCase("Add", two_inputs("Add")),
    "Sub-constant-first": LayerCase("Sub", with_constant("Sub", channel(), first=True)),
    "Sub-two-inputs": LayerCase("Sub", two_inputs("Sub")),
    "Mul-constant": LayerCase("Mul", with_constant("Mul", channel())),
    "Mul-two-inputs": LayerCase("Mul", two_inputs("Mul")),
    "Div-constant-first": LayerCase(
        "Div", with_constant("Div", channel(3.0), first=True), 0.5, 2.0
    ),
    "Div-two-inputs": LayerCase("Div", two_inputs("Div"), 0.5, 2.0),
    "Maximum-constant": LayerCase("Maximum", with_constant("Max", channel())),
    "Minimum-two-inputs": LayerCase("Minimum", two_inputs("Min")),
    "Convolution": LayerCase("Convolution", conv(stride=2)),
    "Convolution-depthwise": LayerCase("Convolution", conv(group=4)),
    "Deconvolution-k2s2": LayerCase("Deconvolution", deconv(2, 2, 0, 0)),
    "Deconvolution-k3s2-output-padding": LayerCase("Deconvolution", deconv(2, 3, 1, 1)),
    "BatchNormCxx": LayerCase("BatchNormCxx", batch_norm),
    "Pooling-max": LayerCase(
        "Pooling", one("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    ),
    "Pooling-average": LayerCase(
        "Pooling", one("AveragePool", kernel_shape=[2, 2], strides=[2, 2])
    ),
    "Pooling-global-average": LayerCase("Pooling", one("GlobalAveragePool")),
    "Pooling-global-max": LayerCase("Pooling", one("GlobalMaxPool")),
    "InnerProduct": LayerCase("InnerProduct", gemm),
    "MatMul-constant": LayerCase("MatMul", matmul_const),
    "MatMul-two-inputs": LayerCase("MatMul", matmul_two),
    "LayerNorm": LayerCase("LayerNorm", layer_norm),
    "SoftmaxCaffe-axis1": LayerCase("SoftmaxCaffe", one("Softmax", axis=1)),
    "SoftmaxCaffe-last-axis": LayerCase("SoftmaxCaffe", one("Softmax", {"x": [1, 6, 10]}, axis=-1)),
    "ReduceMean": LayerCase("ReduceMean", reduce("ReduceMean", [1], 1)),
    "ReduceSum": LayerCase("ReduceSum", reduce("ReduceSum", [2, 3], 0)),
    "ReduceMax": LayerCase("ReduceMax", reduce("ReduceMax", [3], 1)),
    "ReduceMin": LayerCase("ReduceMin", reduce("ReduceMin", [1], 0)),
    "Deconvolution-nearest-x2": LayerCase("Deconvolution", resize("nearest", "asymmetric")),
    "Upsample-nearest-coprime": LayerCase("Upsample", resize("nearest", "asymmetric", [7, 11])),
    "Upsample-bilinear-half-pixel": LayerCase("Upsample", resize("linear", "half_pixel")),
    "Upsample-bilinear-align-corners": LayerCase("Upsample", resize("linear", "align_corners")),
    "Reshape": LayerCase("Reshape", reshape_to([1, 24, 8])),
    "Reshape-detector-head": LayerCase("Reshape", detector_head),
    "Flatten": LayerCase("Flatten", one("Flatten", axis=1)),
    "Permute": LayerCase("Permute", one("Transpose", perm=[0, 2, 3, 1])),
    "Concat": LayerCase(
        "Concat",
        chain(
            node("Relu", ["x"], ["r"], "relu"), node("Concat", ["x", "r"], ["y"], "concat", axis=3)
        ),
    ),
    "Concat-constant": LayerCase("Concat", concat_with_constant),
    "SplitV": LayerCase("SplitV", split),
    "SplitV-two-outputs": LayerCase("SplitV", split_two_outputs),
    "StridedSliceV2": LayerCase("StridedSliceV2", slice_([1, 1], [None, -1], [3, 1], [2, 2])),
    "StridedSliceV2-one-axis": LayerCase("StridedSliceV2", slice_([2], [-1], [3], [1])),
    "Gather": LayerCase("Gather", gather),
    "Squeeze": LayerCase(
        "Squeeze",
        chain(
            node("Squeeze", ["x", "axes"], ["y"], "squeeze"),
            inputs={"x": [1, 4, 1, 8]},
            axes=np.array([2], np.int64),
        ),
    ),
    "Unsqueeze": LayerCase(
        "Unsqueeze",
        chain(
            node("Unsqueeze", ["x", "axes"], ["y"], "unsqueeze"),
            inputs={"x": [1, 4, 8]},
            axes=np.array([2], np.int64),
        ),
    ),
    "Pad-constant": LayerCase("Pad", pad("constant", [0, 1, 2, 0, 0, 0, 1, 3])),
    "Pad-reflect": LayerCase("Pad", pad("reflect", [0, 0, 1, 2, 0, 0, 2, 1])),
    "PadV2": LayerCase("PadV2", pad("constant", [0, 1, 2, 0, 2, 1], {"x": [1, 4, 8]})),
}
