"""Layer param text -> named values, one parser per TNN layer type.

Each parser reads tokens in the order of that type's ``InterpretProto`` in
``source/tnn/interpreter/tnn/layer_interpreter/`` and uses the same defaults for missing
trailing tokens. Names with ``_h``/``_w`` spell out the height/width order TNN prints.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable
from typing import Any

_LEADING_INT = re.compile(r"\s*[+-]?\d+")
_INT_MIN = -(2**31)


def _atoi(token: str) -> int:
    match = _LEADING_INT.match(token)
    return int(match.group()) if match else 0


class _Tokens:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.index = 0

    def int(self, default: int = 0) -> int:
        if self.index >= len(self.tokens):
            return default
        self.index += 1
        return _atoi(self.tokens[self.index - 1])

    def float(self, default: float = 0.0) -> float:
        if self.index >= len(self.tokens):
            return default
        self.index += 1
        return float(self.tokens[self.index - 1])

    # Below, ``int`` in this class body names the method above, so annotations say builtins.int.
    def named(self, names: str, **defaults: builtins.int) -> dict[str, builtins.int]:
        """One int per space-separated name, in order; a missing trailing token reads as the
        name's entry in ``defaults``, else 0."""
        return {name: self.int(defaults.get(name, 0)) for name in names.split()}

    def ints(self, count: builtins.int) -> list[builtins.int]:
        return [self.int() for _ in range(count)]

    def counted(self) -> list[builtins.int]:
        return self.ints(self.int())

    def left(self) -> builtins.int:
        return len(self.tokens) - self.index


def _conv(t: _Tokens) -> dict[str, Any]:
    return t.named(
        "group input_channel output_channel kernel_h kernel_w stride_h stride_w pad_h pad_w bias "
        "pad_type dilation_h dilation_w activation_type",
        dilation_h=1,
        dilation_w=1,
    )


def _pooling(t: _Tokens) -> dict[str, Any]:
    params = t.named(
        "pool_type kernel_h kernel_w stride_h stride_w pad_h pad_w kernel_index_h kernel_index_w "
        "pad_type ceil_mode is_adaptive_pool output_h output_w",
        kernel_index_h=-1,
        kernel_index_w=-1,
    )
    if params["kernel_index_w"] == -1:
        params["kernel_index_w"] = params["kernel_index_h"]
    return params


def _upsample(t: _Tokens) -> dict[str, Any]:
    params = {"mode": t.int(), "scale_h": t.float(), "scale_w": t.float(), "align_corners": t.int()}
    if t.left() >= 2:
        params["height"] = t.int()
        params["width"] = t.int()
    return params


def _reshape(t: _Tokens) -> dict[str, Any]:
    params: dict[str, Any] = {"axis": t.int(), "num_axes": t.int()}
    size = t.int(-1)
    if size < 0:
        raise ValueError("Reshape layer without a shape")  # TNN rejects it the same way
    params["shape"] = t.ints(size)
    params["reshape_type"] = t.int()
    return params


def _strided_slice_v2(t: _Tokens) -> dict[str, Any]:
    return {"begins": t.counted(), "ends": t.counted(), "axes": t.counted(), "strides": t.counted()}


def _pad(t: _Tokens) -> dict[str, Any]:
    """``Pad``: two unused ints, then top bottom left right c_begin c_end; TNN keeps them as
    [left, right, top, bottom, c_begin, c_end]. A missing pad reads as INT_MIN, like TNN."""
    t.ints(2)
    top, bottom, left, right, c_begin, c_end = (t.int(_INT_MIN) for _ in range(6))
    pads = [left, right, top, bottom, c_begin, c_end]
    return {"pads": pads, "type": t.int(), "value": t.float()}


def _pad_v2(t: _Tokens) -> dict[str, Any]:
    """``PadV2``: the rank, then ONNX-ordered pads (every begin, then every end)."""
    pads = t.ints(2 * t.int())
    return {"pads": pads, "type": t.int(), "value": t.float()}


def _reduce(t: _Tokens) -> dict[str, Any]:
    keep_dims = t.int()
    return {"keep_dims": keep_dims, "axis": t.ints(t.left())}


def _split_v(t: _Tokens) -> dict[str, Any]:
    axis = t.int()
    return {"axis": axis, "slices": t.counted()}


_PARSERS: dict[str, Callable[[_Tokens], dict[str, Any]]] = {
    "Convolution": _conv,
    "Deconvolution": _conv,
    "Pooling": _pooling,
    "Upsample": _upsample,
    "Reshape": _reshape,
    "StridedSliceV2": _strided_slice_v2,
    "SplitV": _split_v,
    "Pad": _pad,
    "PadV2": _pad_v2,
    "PReLU": lambda t: {"channel_shared": int(t.int() == 1), "has_filler": int(t.int() == 1)},
    "Elu": lambda t: {"alpha": t.float(1.0)},
    "Scale": lambda t: {"axis": t.int(), "num_axes": t.int(), "bias_term": t.int()},
    "Clip": lambda t: {"min": t.float(), "max": t.float()},
    "HardSwish": lambda t: {"alpha": t.float(1.0), "beta": t.float(0.0)},
    "HardSigmoid": lambda t: {"alpha": t.float(1.0), "beta": t.float(0.0)},
    "InnerProduct": lambda t: t.named("num_output has_bias transpose axis"),
    "MatMul": lambda t: {"weight_position": t.int(-1)},
    "Flatten": lambda t: {"axis": t.int()},
    "Permute": lambda t: {"orders": t.counted()},
    "Concat": lambda t: {"axis": t.int(1)},
    "Gather": lambda t: {
        "axis": t.int(0),
        "data_in_resource": t.int(0),
        "indices_in_resource": t.int(1),
    },
    "Softmax": lambda t: {"axis": t.int(1)},
    "SoftmaxCaffe": lambda t: {"axis": t.int(1)},
    "LayerNorm": lambda t: {"reduce_dims_size": t.int(0), "eps": t.float(1e-5)},
    "Squeeze": lambda t: {"axes": t.counted()},
    "Unsqueeze": lambda t: {"axes": t.counted()},
    "Const": lambda t: {"dims": t.counted()},
}
for _binary in ("Add", "Sub", "Mul", "Div", "Maximum", "Minimum"):
    _PARSERS[_binary] = lambda t: {"weight_input_index": t.int(1)}
for _reduce_type in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"):
    _PARSERS[_reduce_type] = _reduce


def parse_params(layer_type: str, tokens: list[str]) -> dict[str, Any]:
    """Named params for known types; types without params (ReLU, Sigmoid, ...) give {}."""
    parser = _PARSERS.get(layer_type)
    return parser(_Tokens(tokens)) if parser else {}
