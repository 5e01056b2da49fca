"""A llama or qwen2 decoder from a GGUF file as the ONNX graph ONNX Runtime GenAI's ``decoder``
model type runs: ``input_ids``, ``attention_mask`` and ``position_ids`` ([batch, sequence],
[batch, total sequence]), ``past_key_values.{i}.key/value`` [batch, kv heads, past, head dim]
in; ``logits`` of the last position [batch, 1, vocab] and ``present.{i}.key/value`` (the past
with this call's keys and values appended) out.

Standard ONNX ops (opset 17), plus ``MatMulNBits`` (com.microsoft) for Q8_0 and Q4_0 matrices.
It computes what runners/llm_math.py computes: RMSNorm (in the Pow/ReduceMean/Add/Sqrt/Div/Mul
form ONNX Runtime fuses), rotary embeddings on the half-split pairs (llama's q and k rows are
put back in that order, the permutation llama.cpp's converter applied undone, so one rotation
serves both), grouped-query attention (queries grouped by their key/value head, so keys and
values are never repeated), a causal and padding mask, SwiGLU, and the head on the last
position only (a prefill's head over every position would cost as much as the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgebench.runners.protocol.gguf import GgufFile
from edgebench.runners.protocol.llm_shape import DecoderShape

from .weights import BLOCK, BLOCK_TYPES, Blocks, matmul_blocks, stored_half

OPSET = 17
#: MatMulNBits' accuracy level: 4 quantizes activations to 8 bits per block, as ONNX Runtime
#: GenAI's own model builder does for the CPU (and llama.cpp for its quantized dot products).
ACCURACY_LEVEL = 4
#: What masked attention scores are set to (a finite value: a fully masked row stays finite).
MASKED = float(np.finfo(np.float32).min)


class DecoderGraph:
    """Builds the graph node by node; ``model()`` returns it."""

    def __init__(self, gguf: GgufFile, shape: DecoderShape) -> None:
        self.gguf = gguf
        self.s = shape
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._count = 0
        self._float: dict[str, str] = {}  # GGUF tensor -> the float32 value's name

    # --- plumbing -------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Sequence[str], domain: str = "", **attrs: Any) -> str:
        self._count += 1
        out = f"/{op_type.lower()}_{self._count}"
        node = helper.make_node(op_type, list(inputs), [out], name=out, domain=domain, **attrs)
        self.nodes.append(node)
        return out

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        self._names.add(name)
        return name

    def ints(self, *values: int) -> str:
        name = "/const/i64_" + "_".join(str(v).replace("-", "m") for v in values)
        if name not in self._names:
            self.const(name, np.asarray(values, dtype=np.int64))
        return name

    def int_scalar(self, value: int) -> str:
        name = f"/const/i64_scalar_{value}"
        if name not in self._names:
            self.const(name, np.asarray(value, dtype=np.int64))
        return name

    def scalar(self, value: float) -> str:
        name = f"/const/f32_{value!r}"
        if name not in self._names:
            self.const(name, np.asarray(value, dtype=np.float32))
        return name

    def float_weight(self, name: str, transpose: bool = False) -> str:
        """GGUF tensor ``name`` as a float32 value: stored as float16 where the file has it
        at F16 (a Cast ONNX Runtime folds at load), else float32 (dequantized if need be)."""
        key = f"{name}{'^T' if transpose else ''}"
        if key in self._float:
            return self._float[key]
        if self.gguf.tensors[name].ggml_type == "F16":
            half = stored_half(self.gguf, name)
            init = self.const(key, np.ascontiguousarray(half.T if transpose else half))
            value = self.op("Cast", [init], to=TensorProto.FLOAT)
        else:
            array = self.gguf.tensor(name)
            value = self.const(key, np.ascontiguousarray(array.T if transpose else array))
        self._float[key] = value
        return value

    # --- building blocks ------------------------------------------------------------------
    def linear(self, x: str, name: str, rows: np.ndarray | None = None) -> str:
        """x @ W.T for the GGUF matrix ``name`` (N x K), its rows taken in ``rows`` order."""
        if self.gguf.tensors[name].ggml_type in BLOCK_TYPES:
            blocks = matmul_blocks(self.gguf, name)
            return self.nbits(x, name, blocks.rows(rows) if rows is not None else blocks)
        weight = self.gguf.tensor(name) if rows is not None else None
        if weight is None:
            return self.op("MatMul", [x, self.float_weight(name, transpose=True)])
        kept = weight[rows]
        if self.gguf.tensors[name].ggml_type == "F16":
            init = self.const(name, np.ascontiguousarray(kept.T).astype(np.float16))
            return self.op("MatMul", [x, self.op("Cast", [init], to=TensorProto.FLOAT)])
        return self.op("MatMul", [x, self.const(name, np.ascontiguousarray(kept.T))])

    def nbits(self, x: str, name: str, blocks: Blocks) -> str:
        data = self.const(f"{name}.q{blocks.bits}", blocks.data)
        scales = self.const(f"{name}.scales", blocks.scales.reshape(-1))
        return self.op(
            "MatMulNBits",
            [x, data, scales],
            domain="com.microsoft",
            K=blocks.k,
            N=blocks.n,
            bits=blocks.bits,
            block_size=BLOCK,
            accuracy_level=ACCURACY_LEVEL,
        )

    def bias(self, x: str, name: str, rows: np.ndarray | None = None) -> str:
        if name not in self.gguf.tensors:
            return x
        value = self.gguf.tensor(name)
        return self.op("Add", [x, self.const(name, value[rows] if rows is not None else value)])

    def rms_norm(self, x: str, weight: str) -> str:
        mean = self.op("ReduceMean", [self.op("Pow", [x, self.scalar(2.0)])], axes=[-1])
        root = self.op("Sqrt", [self.op("Add", [mean, self.scalar(self.s.rms_eps)])])
        normed = self.op("Div", [x, root])
        return self.op("Mul", [normed, self.const(weight, self.gguf.tensor(weight))])

    def heads(self, x: str, count: int) -> str:
        """[B, S, count * D] -> [B, count, S, D]."""
        split = self.op("Reshape", [x, self.ints(0, 0, count, self.s.head_dim)])
        return self.op("Transpose", [split], perm=[0, 2, 1, 3])

    def rotate(self, x: str, cos: str, sin: str) -> str:
        half = self.s.head_dim // 2
        a = self.op("Slice", [x, self.ints(0), self.ints(half), self.ints(-1)])
        b = self.op("Slice", [x, self.ints(half), self.ints(self.s.head_dim), self.ints(-1)])
        first = self.op("Sub", [self.op("Mul", [a, cos]), self.op("Mul", [b, sin])])
        second = self.op("Add", [self.op("Mul", [b, cos]), self.op("Mul", [a, sin])])
        return self.op("Concat", [first, second], axis=-1)

    def half_split_rows(self, count: int) -> np.ndarray | None:
        """The row order that makes llama's neighbour pairs half-split pairs (None: qwen2)."""
        if self.s.rope_layout == "neox":
            return None
        d = self.s.head_dim
        per_head = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
        return (np.arange(count)[:, None] * d + per_head[None, :]).reshape(-1)
