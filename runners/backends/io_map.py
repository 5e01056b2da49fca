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
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

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
        if self.shape and list(value.shape) != self.shape and value.size == _size(self.shape):
            value = value.reshape(self.shape)
        return np.ascontiguousarray(value)

    def to_onnx(self, value: Any) -> Any:
        value = np.asarray(value)
        if self.perm:
            if value.ndim != len(self.perm) and value.size == _size(self.shape):
                value = value.reshape(self.shape)
            value = np.transpose(value, np.argsort(self.perm))
        if self.onnx_shape and value.size == _size(self.onnx_shape):
            value = value.reshape(self.onnx_shape)
        return value


def _size(shape: List[int]) -> int:
    total = 1
    for d in shape:
        total *= int(d)
    return total


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
