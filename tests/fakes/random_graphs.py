"""Small random ONNX graphs for property tests of the own converters.

``random_graph(seed)`` draws a chain of 3-8 ops over an NCHW input of random odd-ish size: convs
of random kernel, stride, dilation, padding (explicit, asymmetric or auto_pad) and groups,
transposed convs, pools (ceil_mode, pads), activations, broadcasting arithmetic with constants,
a second branch merged by Add or Concat, Split, Slice with steps, Pad, Resize in every mode
TFLite can express, Softmax, Reduce, Transpose, and then a tail that leaves 4-D: Flatten,
Reshape, MatMul/Gemm, LayerNormalization, Softmax on any axis. Every graph is checked by ONNX's
checker and ONNX Runtime shape inference; the caller compares outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass
class _Builder:
    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    count: int = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value: np.ndarray, prefix: str = "c") -> str:
        name = self.name(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weights(self, *shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = 1.0 / np.sqrt(max(fan_in, 1))
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs) -> list[str]:
        names = [self.name("t") for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attrs))
        self.ops.append(op)
        return names


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]


def _conv_out(size: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    return (size + pb + pe - (d * (k - 1) + 1)) // s + 1


def _conv(b: _Builder, x: Tensor) -> Tensor:
    n, c, h, w = x.shape
    rng = b.rng
    k = int(rng.choice([1, 2, 3, 5]))
    s = int(rng.choice([1, 1, 2]))
    d = int(rng.choice([1, 1, 2])) if k > 1 else 1
    kind = rng.choice(["plain", "depthwise", "grouped"])
    groups = 1
    if kind == "depthwise":
        groups = c
        c_out = c * int(rng.choice([1, 2]))
    elif kind == "grouped" and c % 2 == 0:
        groups = 2
        c_out = 2 * int(rng.integers(1, 4))
    else:
        c_out = int(rng.integers(2, 9))
    attrs: dict = {"kernel_shape": [k, k], "strides": [s, s], "dilations": [d, d], "group": groups}
    extent = d * (k - 1) + 1
    # ONNX Runtime refuses dilation with SAME_* auto_pad.
    mode = rng.choice(["explicit", "valid"] + (["same_upper", "same_lower"] if d == 1 else []))
    if mode == "explicit":
        pads = [int(p) for p in rng.integers(0, extent, size=4)] if extent > 1 else [0] * 4
        attrs["pads"] = pads
        oh = _conv_out(h, k, s, d, pads[0], pads[2])
        ow = _conv_out(w, k, s, d, pads[1], pads[3])
    elif mode == "valid":
        attrs["auto_pad"] = "VALID"
        oh, ow = _conv_out(h, k, s, d, 0, 0), _conv_out(w, k, s, d, 0, 0)
    else:
        attrs["auto_pad"] = "SAME_UPPER" if mode == "same_upper" else "SAME_LOWER"
        oh, ow = -(-h // s), -(-w // s)
    if oh < 1 or ow < 1:
        return x
    inputs = [x.name, b.const(b.weights(c_out, c // groups, k, k), "w")]
    if rng.random() < 0.7:
        inputs.append(b.const(b.weights(c_out), "bias"))
    (y,) = b.node("Conv", inputs, **attrs)
    return Tensor(y, (n, c_out, oh, ow))


def _conv_transpose(b: _Builder, x: Tensor) -> Tensor:
    n, c, h, w = x.shape
    rng = b.rng
    k = int(rng.choice([2, 3, 4]))
    s = int(rng.choice([1, 2]))
    c_out = int(rng.integers(1, 6))
    pad = int(rng.integers(0, k // 2 + 1))
    out_pad = int(rng.integers(0, s)) if s > 1 else 0
    out_pad = min(out_pad, pad)
    attrs = {
        "kernel_shape": [k, k],
        "strides": [s, s],
        "pads": [pad, pad, pad, pad],
        "output_padding": [out_pad, out_pad],
    }
    oh = s * (h - 1) + out_pad + k - 2 * pad
    ow = s * (w - 1) + out_pad + k - 2 * pad
    if oh < 1 or ow < 1 or oh > 64 or ow > 64:
        return x
    inputs = [x.name, b.const(b.weights(c, c_out, k, k), "w"), b.const(b.weights(c_out), "bias")]
    (y,) = b.node("ConvTranspose", inputs, **attrs)
    return Tensor(y, (n, c_out, oh, ow))


def _pool(b: _Builder, x: Tensor) -> Tensor:
    n, c, h, w = x.shape
    rng = b.rng
    k = int(rng.choice([2, 3]))
    s = int(rng.choice([1, 2]))
    op = str(rng.choice(["MaxPool", "AveragePool"]))
    pad = int(rng.integers(0, k // 2 + 1))
    ceil = int(rng.random() < 0.3) if op == "MaxPool" else 0
    attrs: dict = {"kernel_shape": [k, k], "strides": [s, s], "pads": [pad] * 4, "ceil_mode": ceil}
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.random() < 0.5)
        if not attrs["count_include_pad"] and pad:
            # TFLite's SAME excludes padding; only that case is expressible.
            attrs = {"kernel_shape": [k, k], "strides": [s, s], "auto_pad": "SAME_UPPER"}
    if "auto_pad" in attrs:
        oh, ow = -(-h // s), -(-w // s)
    else:
        rounding = np.ceil if ceil else np.floor
        oh = int(rounding((h + 2 * pad - k) / s)) + 1
        ow = int(rounding((w + 2 * pad - k) / s)) + 1
        if ceil and ((oh - 1) * s >= h + pad or (ow - 1) * s >= w + pad):
            return x  # ONNX's shape inference and ONNX Runtime disagree on this size
    if oh < 1 or ow < 1 or h + 2 * pad < k or w + 2 * pad < k:
        return x
    (y,) = b.node(op, [x.name], **attrs)
    return Tensor(y, (n, c, oh, ow))


def _activation(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    op = str(
        rng.choice(
            [
                "Relu",
                "Clip6",
                "Clip",
                "HardSigmoid",
                "HardSwishMul",
                "HardSwish",
                "Sigmoid",
                "Tanh",
                "LeakyRelu",
                "Swish",
                "PRelu",
            ]
        )
    )
    if op == "Clip6":
        (y,) = b.node("Clip", [x.name, b.const(np.float32(0)), b.const(np.float32(6))])
    elif op == "Clip":
        low, high = sorted(rng.uniform(-1.5, 1.5, size=2).astype(np.float32))
        (y,) = b.node("Clip", [x.name, b.const(np.float32(low)), b.const(np.float32(high))])
    elif op == "HardSigmoid":
        (y,) = b.node("HardSigmoid", [x.name], alpha=0.2, beta=0.5)
    elif op == "HardSwishMul":
        (gate,) = b.node("HardSigmoid", [x.name], alpha=1 / 6, beta=0.5)
        (y,) = b.node("Mul", [x.name, gate])
    elif op == "LeakyRelu":
        (y,) = b.node("LeakyRelu", [x.name], alpha=float(rng.uniform(0.01, 0.3)))
    elif op == "Swish":
        (gate,) = b.node("Sigmoid", [x.name])
        (y,) = b.node("Mul", [gate, x.name])
    elif op == "PRelu":
        slope = rng.uniform(0, 0.5, size=(x.shape[1], 1, 1)).astype(np.float32)
        (y,) = b.node("PRelu", [x.name, b.const(slope)])
    else:
        (y,) = b.node(op, [x.name])
    return Tensor(y, x.shape)


def _arithmetic(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    op = str(rng.choice(["Add", "Sub", "Mul", "Div", "Max", "Min"]))
    c = x.shape[1]
    shape = [(c, 1, 1), (1,), (), (x.shape[3],), (1, c, 1, 1), x.shape[1:]][int(rng.integers(6))]
    value = rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
    inputs = [x.name, b.const(value)]
    if rng.random() < 0.3 and op in ("Add", "Sub", "Mul"):
        inputs.reverse()
    (y,) = b.node(op, inputs)
    return Tensor(y, x.shape)


def _batchnorm(b: _Builder, x: Tensor) -> Tensor:
    c = x.shape[1]
    rng = b.rng
    stats = [
        rng.uniform(0.5, 1.5, c),
        rng.standard_normal(c),
        rng.standard_normal(c) * 0.1,
        rng.uniform(0.5, 2.0, c),
    ]
    (y,) = b.node("BatchNormalization", [x.name, *(b.const(s.astype(np.float32)) for s in stats)])
    return Tensor(y, x.shape)


def _branch(b: _Builder, x: Tensor) -> Tensor:
    """A second path from x (a 1x1 conv or an activation), merged by Add or Concat."""
    rng = b.rng
    (side,) = b.node(
        "Conv", [x.name, b.const(b.weights(x.shape[1], x.shape[1], 1, 1), "w")], kernel_shape=[1, 1]
    )
    if rng.random() < 0.5:
        (y,) = b.node("Add", [x.name, side])
        return Tensor(y, x.shape)
    (y,) = b.node("Concat", [side, x.name], axis=1)
    return Tensor(y, (x.shape[0], 2 * x.shape[1], *x.shape[2:]))


def _split(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    axis = int(rng.choice([1, 2, 3]))
    size = x.shape[axis]
    if size < 2:
        return x
    first = int(rng.integers(1, size))
    parts = [first, size - first] if rng.random() < 0.5 or size % 2 else [size // 2] * 2
    a, c = b.node("Split", [x.name, b.const(np.asarray(parts, np.int64))], outputs=2, axis=axis)
    (y,) = b.node("Mul", [a, b.const(np.float32(2.0))])
    shape = list(x.shape)
    shape[axis] = parts[0]
    if parts[0] == parts[1]:
        (y,) = b.node("Add", [y, c])
    return Tensor(y, tuple(shape))


def _slice(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    axis = int(rng.choice([1, 2, 3, -1]))
    size = x.shape[axis]
    step = int(rng.choice([1, 2, -1]))
    if step > 0:
        start = int(rng.integers(0, max(size // 2, 1)))
        end = int(rng.choice([size, size + 5, -1, 2**62])) if size > 1 else size
        indices = range(size)[start:end:step] if end != 2**62 else range(size)[start::step]
    else:
        start, end = -1, -(size + 10)
        indices = range(size)[start::step]
    if len(indices) == 0:
        return x
    starts, ends = b.const(np.asarray([start], np.int64)), b.const(np.asarray([end], np.int64))
    axes, steps = b.const(np.asarray([axis], np.int64)), b.const(np.asarray([step], np.int64))
    (y,) = b.node("Slice", [x.name, starts, ends, axes, steps])
    shape = list(x.shape)
    shape[axis] = len(indices)
    return Tensor(y, tuple(shape))


def _pad(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    pads = [
        0,
        0,
        int(rng.integers(0, 3)),
        int(rng.integers(0, 3)),
        0,
        0,
        int(rng.integers(0, 3)),
        int(rng.integers(0, 3)),
    ]
    mode = str(rng.choice(["constant", "reflect"]))
    if mode == "reflect" and (
        max(pads[2], pads[6]) >= x.shape[2] or max(pads[3], pads[7]) >= x.shape[3]
    ):
        mode = "constant"
    inputs = [x.name, b.const(np.asarray(pads, np.int64))]
    if mode == "constant" and rng.random() < 0.5:
        inputs.append(b.const(np.float32(rng.uniform(-1, 1))))
    (y,) = b.node("Pad", inputs, mode=mode)
    n, c, h, w = x.shape
    return Tensor(y, (n, c, h + pads[2] + pads[6], w + pads[3] + pads[7]))


_RESIZE_MODES = [
    ("nearest", "asymmetric", "floor"),
    ("nearest", "asymmetric", "round_prefer_floor"),
    ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"),
    ("nearest", "pytorch_half_pixel", "round_prefer_floor"),
    ("linear", "half_pixel", None),
    ("linear", "pytorch_half_pixel", None),
    ("linear", "align_corners", None),
    ("linear", "asymmetric", None),
]


def _resize(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    mode, transform, nearest = _RESIZE_MODES[int(rng.integers(len(_RESIZE_MODES)))]
    n, c, h, w = x.shape
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if nearest:
        attrs["nearest_mode"] = nearest
    if rng.random() < 0.5 and transform != "align_corners":
        factor = float(rng.choice([2.0, 0.5, 3.0]))
        oh, ow = int(np.floor(h * factor)), int(np.floor(w * factor))
        if oh < 1 or ow < 1 or oh / h != factor or ow / w != factor:
            return x
        inputs = [x.name, "", b.const(np.asarray([1, 1, factor, factor], np.float32))]
    else:
        oh, ow = int(rng.integers(2, 2 * h + 2)), int(rng.integers(2, 2 * w + 2))
        inputs = [x.name, "", "", b.const(np.asarray([n, c, oh, ow], np.int64))]
    (y,) = b.node("Resize", inputs, **attrs)
    return Tensor(y, (n, c, oh, ow))


def _softmax(b: _Builder, x: Tensor) -> Tensor:
    axis = int(b.rng.choice([1, 2, 3, -1]))
    (y,) = b.node("Softmax", [x.name], axis=axis)
    return Tensor(y, x.shape)


def _reduce(b: _Builder, x: Tensor) -> Tensor:
    rng = b.rng
    axes = sorted({int(a) for a in rng.choice([1, 2, 3], size=int(rng.integers(1, 3)))})
    op = str(rng.choice(["ReduceMean", "ReduceMax", "ReduceSum"]))
    if op == "ReduceMean" or op == "ReduceMax":  # opset 17: axes are an attribute
        (y,) = b.node(op, [x.name], axes=axes, keepdims=1)
    else:
        (y,) = b.node(op, [x.name, b.const(np.asarray(axes, np.int64))], keepdims=1)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return Tensor(y, shape)


def _transpose4(b: _Builder, x: Tensor) -> Tensor:
    perm = [0, *(int(a) for a in b.rng.permutation([1, 2, 3]))]
    (y,) = b.node("Transpose", [x.name], perm=perm)
    return Tensor(y, tuple(x.shape[a] for a in perm))


BODY: list[Callable[[_Builder, Tensor], Tensor]] = [
    _conv,
    _conv,
    _conv,
    _conv_transpose,
    _pool,
    _activation,
    _activation,
    _arithmetic,
    _batchnorm,
    _branch,
    _split,
    _slice,
    _pad,
    _resize,
    _softmax,
    _reduce,
    _transpose4,
]


def _tail(b: _Builder, x: Tensor) -> Tensor:
    """Leave 4-D the way classifiers and transformers do."""
    n, c, h, w = x.shape
    kind = int(b.rng.integers(5))
    if kind == 0:
        return x
    if kind == 1:  # global pool + flatten + Gemm
        (p,) = b.node("GlobalAveragePool", [x.name])
        (f,) = b.node("Flatten", [p], axis=1)
        units = int(b.rng.integers(2, 11))
        (y,) = b.node(
            "Gemm", [f, b.const(b.weights(units, c), "w"), b.const(b.weights(units))], transB=1
        )
        return Tensor(y, (n, units))
    # tokens: [n, c, h*w] -> [n, h*w, c], LayerNorm, MatMul (+bias), Softmax on a random axis
    (r,) = b.node("Reshape", [x.name, b.const(np.asarray([n, c, -1], np.int64))])
    (t,) = b.node("Transpose", [r], perm=[0, 2, 1])
    tokens = Tensor(t, (n, h * w, c))
    if kind >= 3:
        scale, bias = b.const(b.weights(c) + 1), b.const(b.weights(c))
        (ln,) = b.node("LayerNormalization", [t, scale, bias], axis=-1, epsilon=1e-5)
        tokens = Tensor(ln, tokens.shape)
    units = int(b.rng.integers(2, 9))
    (m,) = b.node("MatMul", [tokens.name, b.const(b.weights(c, units), "w")])
    if kind == 4:
        (m,) = b.node("Add", [m, b.const(b.weights(units))])
        (m,) = b.node("Softmax", [m], axis=int(b.rng.choice([1, 2, -1])))
    return Tensor(m, (n, h * w, units))


def _inferred_shape(b: _Builder, input_shape: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    """The shape ONNX infers for ``name`` in the graph so far (the generator's own arithmetic
    only guards against empty outputs); None when inference rejects the graph."""
    graph = helper.make_graph(
        b.nodes,
        "partial",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)],
        b.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except Exception:  # an invalid combination drawn: the step is dropped
        return None
    dims = inferred.graph.output[0].type.tensor_type.shape.dim
    if not dims or not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def random_graph(seed: int, opset: int = 17) -> tuple[onnx.ModelProto, list[str]]:
    """A checked random model with input ``x`` and output ``y``, and the ops it used."""
    rng = np.random.default_rng(seed)
    b = _Builder(rng)
    shape = (1, int(rng.integers(1, 7)), int(rng.integers(3, 20)), int(rng.integers(3, 20)))
    x = Tensor("x", shape)
    for _ in range(int(rng.integers(3, 9))):
        step = BODY[int(rng.integers(len(BODY)))]
        before = (len(b.nodes), len(b.initializers), len(b.ops))
        x_new = step(b, x)
        inferred = _inferred_shape(b, shape, x_new.name) if x_new is not x else x.shape
        if inferred is None or min(inferred) < 1 or inferred[2] * inferred[3] > 4096:
            del b.nodes[before[0] :], b.initializers[before[1] :], b.ops[before[2] :]
            continue
        x = Tensor(x_new.name, inferred)
    y = _tail(b, x)
    y = Tensor(y.name, _inferred_shape(b, shape, y.name) or y.shape)
    (out,) = b.node("Identity", [y.name])
    b.nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        b.nodes,
        f"random{seed}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))],
        b.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    del out
    return model, b.ops
