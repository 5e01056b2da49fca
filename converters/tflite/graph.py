"""The folded ONNX model as the TFLite writer reads it (``converters/graph.py``)."""

from __future__ import annotations

import onnx

from edgebench.converters.graph import OnnxGraph, read_folded

TARGET = "TFLite"


def read_graph(model: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> OnnxGraph:
    return read_folded(model, input_shapes, TARGET)
