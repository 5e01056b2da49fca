"""Convolutions and pooling: NHWC in, NHWC out, padding as SAME/VALID or an explicit PAD."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgebench.converters.graph import Node

from .lowering import Lowering, translates

SAME, VALID = 0, 1
LOWEST_FLOAT = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class Window:
    """A 2-D sliding window over H and W, with ONNX's explicit padding resolved."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    begin: tuple[int, int]
    end: tuple[int, int]  # the padding actually read at the end (never more than needed)
    out: tuple[int, int]

    def padding(self, size: tuple[int, int]) -> int | None:
        """SAME or VALID when TFLite's rule gives exactly this padding, else None."""
        if self.begin == (0, 0) and self.end == (0, 0):
            return VALID
        for axis in range(2):
            out = -(-size[axis] // self.strides[axis])
            extent = (self.kernel[axis] - 1) * self.dilations[axis] + 1
            total = max((out - 1) * self.strides[axis] + extent - size[axis], 0)
            if out != self.out[axis] or (self.begin[axis], self.end[axis]) != (
                total // 2,
                total - total // 2,
            ):
                return None
        return SAME


def window(
    lowering: Lowering,
    node: Node,
    size: tuple[int, int],
    kernel: tuple[int, int],
    out: tuple[int, int],
) -> Window:
    attrs = node.attrs
    strides = tuple(attrs.get("strides", [1, 1]))
    dilations = tuple(attrs.get("dilations", [1, 1]))
    if len(strides) != 2 or len(dilations) != 2:
        raise lowering.unsupported(node, "only 2-D windows")
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    begin = [pads[0], pads[1]]
    for axis in range(2):
        extent = (kernel[axis] - 1) * dilations[axis] + 1
        needed = max((out[axis] - 1) * strides[axis] + extent - size[axis], 0)
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            small = needed // 2
            begin[axis] = small if auto_pad == "SAME_UPPER" else needed - small
        elif auto_pad == "VALID":
            begin[axis] = 0
    end = []
    for axis in range(2):
        extent = (kernel[axis] - 1) * dilations[axis] + 1
        end.append(max((out[axis] - 1) * strides[axis] + extent - size[axis] - begin[axis], 0))
    return Window(kernel, strides, dilations, tuple(begin), tuple(end), out)


def padded_input(
    lowering: Lowering, node: Node, source: int, win: Window, fill: float = 0.0
) -> int:
    """``source`` (NHWC) with the window's padding added by a PAD (or PADV2 for a fill)."""
    shape = lowering.builder.tensors[source].shape
    pads = [[0, 0], [win.begin[0], win.end[0]], [win.begin[1], win.end[1]], [0, 0]]
    new_shape = tuple(d + b + e for d, (b, e) in zip(shape, pads, strict=True))
    out = lowering.scratch(node.name + "_padded", new_shape)
    if fill == 0.0:
        lowering.emit("PAD", [source, lowering.int32(pads, "pads")], [out], "PadOptions")
    else:
        value = lowering.constant(np.asarray([fill], np.float32), "pad_value")
        lowering.emit("PADV2", [source, lowering.int32(pads, "pads"), value], [out], "PadV2Options")
    return out


def _spatial(lowering: Lowering, node: Node) -> tuple[tuple[int, int], tuple[int, int]]:
    x_shape, y_shape = lowering.shape(node.inputs[0]), lowering.shape(node.outputs[0])
    if len(x_shape) != 4:
        raise lowering.unsupported(node, f"only 4-D (NCHW) inputs, got rank {len(x_shape)}")
    return (x_shape[2], x_shape[3]), (y_shape[2], y_shape[3])


@translates("Conv")
def conv(lowering: Lowering, node: Node) -> None:
    weight = lowering.require_const(node, 1, "the weight")
    size, out = _spatial(lowering, node)
    win = window(lowering, node, size, (weight.shape[2], weight.shape[3]), out)
    bias = lowering.input_const(node, 2)
    if lowering.has_input(node, 2) and bias is None:
        raise lowering.unsupported(node, "the bias must be a constant")
    c_out, c_in_group = weight.shape[0], weight.shape[1]
    bias = np.zeros(c_out, np.float32) if bias is None else bias.astype(np.float32)
    group = int(node.attrs.get("group", 1))
    source = lowering.nhwc(node.inputs[0])
    padding = win.padding(size)
    if padding is None:
        source, padding = padded_input(lowering, node, source, win), VALID
    result = lowering.define(node.outputs[0], nhwc=True)
    c_in = c_in_group * group
    if group == 1:
        _conv2d(lowering, node, source, weight, bias, win, padding, result)
    elif c_in_group == 1 and c_out % c_in == 0:
        filt = np.transpose(weight, (1, 2, 3, 0))  # [1, kh, kw, C*M]
        lowering.emit(
            "DEPTHWISE_CONV_2D",
            [
                source,
                lowering.weight(filt, node.name + "_w"),
                lowering.weight(bias, node.name + "_b"),
            ],
            [result],
            "DepthwiseConv2DOptions",
            padding=padding,
            strideH=win.strides[0],
            strideW=win.strides[1],
            depthMultiplier=c_out // c_in,
            dilationHFactor=win.dilations[0],
            dilationWFactor=win.dilations[1],
        )
    else:
        _grouped(lowering, node, source, weight, bias, win, padding, result, group)


def _conv2d(
    lowering: Lowering,
    node: Node,
    source: int,
    weight: np.ndarray,
    bias: np.ndarray,
    win: Window,
    padding: int,
    result: int,
) -> None:
    filt = np.transpose(weight, (0, 2, 3, 1))  # OHWI
    lowering.emit(
        "CONV_2D",
        [source, lowering.weight(filt, node.name + "_w"), lowering.weight(bias, node.name + "_b")],
        [result],
        "Conv2DOptions",
        padding=padding,
        strideH=win.strides[0],
        strideW=win.strides[1],
        dilationHFactor=win.dilations[0],
        dilationWFactor=win.dilations[1],
    )


def _grouped(
    lowering: Lowering,
    node: Node,
    source: int,
    weight: np.ndarray,
    bias: np.ndarray,
    win: Window,
    padding: int,
    result: int,
    group: int,
) -> None:
    """A grouped convolution as SPLIT, one CONV_2D per group and CONCATENATION."""
    shape = lowering.builder.tensors[source].shape
    part_shape = (*shape[:3], shape[3] // group)
    parts = [lowering.scratch(f"{node.name}_in{g}", part_shape) for g in range(group)]
    lowering.emit(
        "SPLIT", [lowering.int32(3, "axis"), source], parts, "SplitOptions", numSplits=group
    )
    out_shape = lowering.builder.tensors[result].shape
    per_group = weight.shape[0] // group
    outs = []
    for g, part in enumerate(parts):
        out = lowering.scratch(f"{node.name}_out{g}", (*out_shape[:3], per_group))
        rows = slice(g * per_group, (g + 1) * per_group)
        _conv2d(
            lowering,
            Node(node.op, f"{node.name}_g{g}", [], []),
            part,
            weight[rows],
            bias[rows],
            win,
            padding,
            out,
        )
        outs.append(out)
    lowering.emit("CONCATENATION", outs, [result], "ConcatenationOptions", axis=3)


@translates("ConvTranspose")
def conv_transpose(lowering: Lowering, node: Node) -> None:
    """TRANSPOSE_CONV with VALID padding yields the full-size result; ONNX's pads crop it."""
    weight = lowering.require_const(node, 1, "the weight")
    attrs = node.attrs
    if int(attrs.get("group", 1)) != 1:
        raise lowering.unsupported(node, "grouped transposed convolution")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise lowering.unsupported(node, "dilated transposed convolution")
    size, out = _spatial(lowering, node)
    kernel = (weight.shape[2], weight.shape[3])
    strides = tuple(attrs.get("strides", [1, 1]))
    full = tuple((size[a] - 1) * strides[a] + kernel[a] for a in range(2))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    begin = [pads[0], pads[1]]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        for a in range(2):
            total = full[a] + list(attrs.get("output_padding", [0, 0]))[a] - out[a]
            begin[a] = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    if any(begin[a] + out[a] > full[a] or begin[a] < 0 for a in range(2)):
        raise lowering.unsupported(node, "output_padding beyond the kernel's reach")
    c_out = weight.shape[1]
    bias = lowering.input_const(node, 2)
    if lowering.has_input(node, 2) and bias is None:
        raise lowering.unsupported(node, "the bias must be a constant")
    bias = np.zeros(c_out, np.float32) if bias is None else bias.astype(np.float32)
    source = lowering.nhwc(node.inputs[0])
    batch = lowering.shape(node.inputs[0])[0]
    cropped = (begin[0], begin[1]) != (0, 0) or tuple(out) != full
    result = lowering.define(node.outputs[0], nhwc=True)
    target = lowering.scratch(node.name + "_full", (batch, *full, c_out)) if cropped else result
    filt = np.transpose(weight, (1, 2, 3, 0))  # [C_out, kh, kw, C_in]
    lowering.builder.op(
        "TRANSPOSE_CONV",
        [
            lowering.int32([batch, *full, c_out], "output_shape"),
            lowering.weight(filt, node.name + "_w"),
            source,
            lowering.weight(bias, node.name + "_b"),
        ],
        [target],
        "TransposeConvOptions",
        version=3,
        padding=VALID,
        strideH=strides[0],
        strideW=strides[1],
    )
    if cropped:
        lowering.emit(
            "SLICE",
            [
                target,
                lowering.int32([0, begin[0], begin[1], 0], "begin"),
                lowering.int32([batch, out[0], out[1], c_out], "size"),
            ],
            [result],
            "SliceOptions",
        )


@translates("MaxPool", "AveragePool")
def pool(lowering: Lowering, node: Node) -> None:
    attrs = node.attrs
    kernel = tuple(attrs["kernel_shape"])
    if len(kernel) != 2:
        raise lowering.unsupported(node, "only 2-D pooling")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise lowering.unsupported(node, "dilated pooling")
    if len(node.outputs) > 1 and node.outputs[1]:
        raise lowering.unsupported(node, "the Indices output")
    size, out = _spatial(lowering, node)
    if attrs.get("ceil_mode", 0) and _window_starts_in_padding(attrs, size, out):
        raise lowering.unsupported(
            node,
            "ceil_mode with a last window that starts in the padding (ONNX shape "
            "inference and ONNX Runtime disagree on the output size)",
        )
    win = window(lowering, node, size, kernel, out)
    is_max = node.op == "MaxPool"
    include_pad = bool(attrs.get("count_include_pad", 0))
    source = lowering.nhwc(node.inputs[0])
    padding = win.padding(size)
    if padding == SAME and not is_max and include_pad:
        padding = None
    if padding is None:
        given = list(attrs.get("pads", [0, 0, 0, 0]))
        if not is_max and not include_pad:
            raise lowering.unsupported(
                node, "padding that excludes pads from the average and is not TFLite's SAME"
            )
        if not is_max and (win.end[0] > given[2] or win.end[1] > given[3]):
            raise lowering.unsupported(node, "ceil_mode with count_include_pad")
        source = padded_input(lowering, node, source, win, LOWEST_FLOAT if is_max else 0.0)
        padding = VALID
    result = lowering.define(node.outputs[0], nhwc=True)
    lowering.emit(
        "MAX_POOL_2D" if is_max else "AVERAGE_POOL_2D",
        [source],
        [result],
        "Pool2DOptions",
        padding=padding,
        strideH=win.strides[0],
        strideW=win.strides[1],
        filterHeight=kernel[0],
        filterWidth=kernel[1],
    )


def _window_starts_in_padding(attrs: dict, size: tuple[int, int], out: tuple[int, int]) -> bool:
    """ONNX Runtime (like PyTorch) drops a ceil_mode window that would start past the input
    and its begin padding; ONNX's shape inference keeps it."""
    strides = list(attrs.get("strides", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    return any((out[a] - 1) * strides[a] >= size[a] + pads[a] for a in range(2))


@translates("GlobalAveragePool", "GlobalMaxPool")
def global_pool(lowering: Lowering, node: Node) -> None:
    if lowering.rank(node.inputs[0]) != 4:
        raise lowering.unsupported(node, "only 4-D inputs")
    source = lowering.nhwc(node.inputs[0])
    result = lowering.define(node.outputs[0], nhwc=True)
    code = "MEAN" if node.op == "GlobalAveragePool" else "REDUCE_MAX"
    lowering.emit(
        code, [source, lowering.int32([1, 2], "axes")], [result], "ReducerOptions", keepDims=True
    )
