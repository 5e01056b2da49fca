"""The ``io.json`` that converters write beside an artifact.

Converted formats rename tensors (ncnn: ``in0``/``out0``) and change layouts (onnx2tf: NCHW image
inputs become NHWC). ``io.json`` records, per input and output in ONNX order, the ONNX name and
shape and the artifact's name and shape, so the runner can feed the same tensor every framework
gets and hand outputs back in ONNX names and layout for the output check.

    {"inputs":  [{"onnx_name": "input", "onnx_shape": [1,3,224,224],
                  "name": "in0", "shape": [3,224,224], "perm": null}],
     "outputs": [{"onnx_name": "output", "onnx_shape": [1,1000], "name": "out0",
                  "shape": [1000], "perm": null}]}

``perm`` (optional) is the axis order that turns the ONNX-layout tensor into the artifact layout
(``numpy.transpose(x, perm)``); outputs are transposed back with its inverse.

A dynamic artifact (one converted to run at any size on some axes) records -1 for those dims;
a tensor then takes the shape of the value it carries on them.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

#: The file name, beside the artifact.
IO_MAP_FILE = "io.json"


class TensorMap:
    def __init__(self, entry: Dict[str, Any]) -> None:
        self.onnx_name = str(entry.get("onnx_name") or entry.get("name"))
        self.onnx_shape = [int(d) for d in entry.get("onnx_shape") or entry.get("shape") or []]
        self.name = str(entry.get("name") or self.onnx_name)
        self.shape = [int(d) for d in entry.get("shape") or self.onnx_shape]
        perm = entry.get("perm")
        self.perm = [int(a) for a in perm] if perm else None

    def to_artifact(self, value: Any) -> Any:
        if self.perm:
            value = np.transpose(value, self.perm)
        shape = _fit(self.shape, value.shape)
        if shape is not None and list(value.shape) != shape:
            value = value.reshape(shape)
        return np.asarray(value, order="C")  # keeps a 0-d tensor 0-d

    def to_onnx(self, value: Any) -> Any:
        value = np.asarray(value)
        if self.perm:
            if value.ndim != len(self.perm) and value.size == _size(self.shape):
                value = value.reshape(self.shape)
            value = np.transpose(value, np.argsort(self.perm))
        shape = _fit(self.onnx_shape, value.shape)
        if shape is not None:
            value = value.reshape(shape)
        return value


def _size(shape: Sequence[int]) -> int:
    total = 1
    for d in shape:
        total *= int(d)
    return total


def _fit(shape: List[int], value_shape: Sequence[int]) -> Optional[List[int]]:
    """``shape`` made concrete for a value of ``value_shape``, or None when it does not fit.

    Fixed dims must hold the value's element count. One -1 takes what is left of it; several
    take the value's own dims, the value lacking only leading 1s of ``shape`` (ncnn's blobs
    have no batch axis).
    """
    if not shape:
        return None
    size = _size(value_shape)
    unknown = [i for i, d in enumerate(shape) if d < 0]
    if not unknown:
        return list(shape) if size == _size(shape) else None
    known = _size([d for d in shape if d >= 0])
    if len(unknown) == 1:
        if known <= 0 or size % known:
            return None
        return [size // known if d < 0 else int(d) for d in shape]
    missing = len(shape) - len(value_shape)
    if missing < 0 or any(d != 1 for d in shape[:missing]):
        return None
    padded = [1] * missing + [int(d) for d in value_shape]
    if all(d < 0 or d == p for d, p in zip(shape, padded)):
        return padded
    return None


class IoMap:
    def __init__(self, inputs: List[TensorMap], outputs: List[TensorMap]) -> None:
        self.inputs = inputs
        self.outputs = outputs

    @classmethod
    def beside(cls, model_path: str) -> Optional["IoMap"]:
        path = os.path.join(os.path.dirname(os.path.abspath(model_path)), IO_MAP_FILE)
        if not os.path.isfile(path):
            return None
        with open(path) as fh:
            data = json.load(fh)
        return cls(
            [TensorMap(e) for e in data.get("inputs", [])],
            [TensorMap(e) for e in data.get("outputs", [])],
        )
