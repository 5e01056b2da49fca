"""A small, deterministic builder around ``onnx.helper`` for generated models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgebench.models.version import GENERATOR_VERSION

OPSET = 17
# IR 8 (rather than the newest) keeps the files loadable by older runtimes.
IR_VERSION = 8


class GraphBuilder:
    """Collects nodes and initializers; draws all random weights from one seeded generator.

    Weights are drawn in call order, so a generator that calls the builder in a fixed order
    yields byte-identical models for the same seed.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[onnx.TensorProto] = []
        # The graph's own input/output names are reserved so no node output can collide.
        self._names: set[str] = {"input", "output"}
        self._constants: dict[tuple[str, tuple[float | int, ...]], str] = {}

    def unique(self, name: str) -> str:
        """Reserve ``name`` (or ``name_1``, ``name_2``, ... if taken) and return it."""
        candidate, suffix = name, 1
        while candidate in self._names:
            candidate = f"{name}_{suffix}"
            suffix += 1
        self._names.add(candidate)
        return candidate

    # -- initializers -------------------------------------------------------------------

    def initializer(self, name: str, array: np.ndarray) -> str:
        name = self.unique(name)
        self._initializers.append(numpy_helper.from_array(array, name))
        return name

    def normal(self, shape: Sequence[int], std: float, mean: float = 0.0) -> np.ndarray:
        values = self.rng.standard_normal(tuple(shape), dtype=np.float32)
        values *= np.float32(std)
        if mean:
            values += np.float32(mean)
        return values

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, tuple(shape)).astype(np.float32)

    def const_f32(self, values: float | Sequence[float]) -> str:
        """A shared float32 constant (scalar or 1-D), created once per distinct value."""
        return self._const("f32", values, np.float32)

    def const_i64(self, values: int | Sequence[int]) -> str:
        """A shared int64 constant (scalar or 1-D), created once per distinct value."""
        return self._const("i64", values, np.int64)

    def _const(self, kind: str, values: float | Sequence[float], dtype: type) -> str:
        array: np.ndarray = np.asarray(values, dtype=dtype)
        # Rank is part of the key: the scalar 0 and the 1-D [0] are different constants.
        key = (f"{kind}.rank{array.ndim}", tuple(array.ravel().tolist()))
        if key not in self._constants:
            self._constants[key] = self.initializer(f"const.{kind}", array)
        return self._constants[key]

    # -- nodes ----------------------------------------------------------------------------

    def op(self, op_type: str, inputs: Sequence[str], name: str, **attrs: Any) -> str:
        """Add a single-output node named ``name``; its output tensor gets the same name."""
        return self.op_multi(op_type, inputs, name, 1, **attrs)[0]

    def op_multi(
        self, op_type: str, inputs: Sequence[str], name: str, n_outputs: int, **attrs: Any
    ) -> list[str]:
        node_name = self.unique(name)
        if n_outputs == 1:
            outputs = [node_name]
        else:
            outputs = [self.unique(f"{node_name}.{i}") for i in range(n_outputs)]
        self._nodes.append(helper.make_node(op_type, list(inputs), outputs, node_name, **attrs))
        return outputs

    # -- model ----------------------------------------------------------------------------

    def build(
        self,
        graph_name: str,
        input_shape: tuple[int, ...],
        output: str,
        output_shape: tuple[int, ...],
        title: str,
    ) -> onnx.ModelProto:
        """Wrap everything added so far into the built-in model ``graph_name``, mapping
        ``input`` to ``output``; ``title`` and the seed make up its doc string.

        The tensor named by ``output`` is renamed to the graph output ``output``.
        """
        doc = f"edgebench built-in model {graph_name} ({title}), seed {self.seed}"
        self._rename_output(output, "output")
        graph = helper.make_graph(
            self._nodes,
            graph_name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_shape))],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(output_shape))],
            initializer=self._initializers,
        )
        return helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="edgebench",
            producer_version=GENERATOR_VERSION,
            doc_string=doc,
        )

    def _rename_output(self, old: str, new: str) -> None:
        for node in self._nodes:
            for i, name in enumerate(node.output):
                if name == old:
                    node.output[i] = new
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new
