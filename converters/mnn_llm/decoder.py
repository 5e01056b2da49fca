"""A llama or qwen2 decoder from a GGUF file as the ONNX graph MNN's converter turns into the
model MNN-LLM runs (``llm.mnn``).

MNN-LLM's engine (transformers/llm/engine/src/llm.cpp, ``Llm::load``) loads the model with the
inputs ``input_ids``, ``attention_mask``, ``position_ids``, ``logits_index`` and the output
``logits``, and feeds:

- ``input_ids``: the prompt's embeddings, float [S, 1, hidden] (the engine looks the ids up in
  its embeddings file itself, ``Llm::embedding``);
- ``attention_mask``: float; on the CPU a scalar 0 (the attention op masks causally itself);
- ``position_ids``: int32 [1, S], each token's position in the whole context;
- ``logits_index``: int32 [1], -1 for the last position's logits only, 0 for every position's.

There is no key/value input or output: the converter (``--transformerFuse``, its
FuseAttention pass, tools/converter/source/optimizer/merge/FuseAttention.cpp) replaces each
attention written in the form below by MNN's ``Attention`` op with its own key/value cache. The
form it matches: Reshape(Transpose(MatMul(Softmax(Add(Div(MatMul(Transpose(q),
Transpose(Concat(past_k, k)))), mask)), Transpose(Concat(past_v, v))))), with the grouped-query
repeat as Reshape(Expand(Unsqueeze(...))) after the Transpose of keys and values; q, k and v
laid out [B, S, heads, D]. The past keys and values come from a ``past_key_values`` input that
the fused graph no longer reads (the engine never feeds it).

The rest is what converters/ort_genai computes (its DecoderGraph blocks, reused): RMSNorm,
rotary embeddings on half-split pairs, SwiGLU, the head.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from edgebench.runners.protocol.gguf import GgufFile
from edgebench.runners.protocol.llm_shape import DecoderShape

from ..ort_genai.decoder import rotary_inputs
from ..ort_genai.graph import OPSET, DecoderGraph
from ..ort_genai.weights import BLOCK_TYPES

PAST = "past_key_values"
#: int32 max: a Slice end past any sequence.
TO_END = 2**31 - 1


def decoder_model(gguf: GgufFile, shape: DecoderShape) -> onnx.ModelProto:
    g = DecoderGraph(gguf, shape)
    s = shape
    hidden = g.op("Transpose", ["input_ids"], perm=[1, 0, 2])  # [S, 1, H] -> [1, S, H]
    cos, sin = rotary_inputs(g, "position_ids", head_axis=2)  # [1, S, 1, D / 2]
    for n in range(s.layers):
        hidden = g.op("Add", [hidden, attention(g, n, hidden, cos, sin)])
        normed = g.rms_norm(hidden, f"blk.{n}.ffn_norm.weight")
        gate = matrix(g, normed, f"blk.{n}.ffn_gate.weight")
        up = matrix(g, normed, f"blk.{n}.ffn_up.weight")
        swish = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        down = matrix(g, g.op("Mul", [swish, up]), f"blk.{n}.ffn_down.weight")
        hidden = g.op("Add", [hidden, down])
    start = g.op("Cast", ["logits_index"], to=TensorProto.INT64)
    kept = g.op("Slice", [hidden, start, g.ints(TO_END), g.ints(1)])  # [1, n, H]
    normed = g.rms_norm(kept, "output_norm.weight")
    head = "output.weight" if "output.weight" in gguf.tensors else "token_embd.weight"
    logits = matrix(g, normed, head)
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits"))
    return assemble(g)


def matrix(g: DecoderGraph, x: str, name: str, rows: np.ndarray | None = None) -> str:
    """x @ W.T in float: a Q8_0 or Q4_0 matrix as the values it stores (MNN's converter
    quantizes it again, in its own blocks), anything else as DecoderGraph.linear writes it."""
    if g.gguf.tensors[name].ggml_type not in BLOCK_TYPES:
        return g.linear(x, name, rows)
    weight = g.gguf.tensor(name)
    kept = weight[rows] if rows is not None else weight
    return g.op("MatMul", [x, g.const(name, np.ascontiguousarray(kept.T, dtype=np.float32))])


def attention(g: DecoderGraph, n: int, x: str, cos: str, sin: str) -> str:
    s = g.s
    h = g.rms_norm(x, f"blk.{n}.attn_norm.weight")
    q_rows, k_rows = g.half_split_rows(s.heads), g.half_split_rows(s.kv_heads)
    q = g.bias(matrix(g, h, f"blk.{n}.attn_q.weight", q_rows), f"blk.{n}.attn_q.bias", q_rows)
    k = g.bias(matrix(g, h, f"blk.{n}.attn_k.weight", k_rows), f"blk.{n}.attn_k.bias", k_rows)
    v = g.bias(matrix(g, h, f"blk.{n}.attn_v.weight"), f"blk.{n}.attn_v.bias")
    q = g.rotate(split_heads(g, q, s.heads), cos, sin)  # [1, S, H, D]
    k = g.rotate(split_heads(g, k, s.kv_heads), cos, sin)
    v = split_heads(g, v, s.kv_heads)
    layer = g.op("Gather", [PAST, g.int_scalar(n)], axis=0)
    past_k = g.op("Gather", [layer, g.int_scalar(0)], axis=0)
    past_v = g.op("Gather", [layer, g.int_scalar(1)], axis=0)
    keys = g.op("Transpose", [g.op("Concat", [past_k, k], axis=1)], perm=[0, 2, 3, 1])
    values = g.op("Transpose", [g.op("Concat", [past_v, v], axis=1)], perm=[0, 2, 1, 3])
    keys = repeat_kv(g, keys, (s.head_dim, -1))  # [1, H, D, T]
    values = repeat_kv(g, values, (-1, s.head_dim))  # [1, H, T, D]
    queries = g.op("Transpose", [q], perm=[0, 2, 1, 3])
    scores = g.op("MatMul", [queries, keys])
    scaled = g.op("Div", [scores, g.scalar(float(np.sqrt(s.head_dim)))])
    weights = g.op("Softmax", [g.op("Add", [scaled, "attention_mask"])], axis=-1)
    mixed = g.op("Transpose", [g.op("MatMul", [weights, values])], perm=[0, 2, 1, 3])
    flat = g.op("Reshape", [mixed, g.ints(1, -1, s.heads * s.head_dim)])
    return matrix(g, flat, f"blk.{n}.attn_output.weight")


def split_heads(g: DecoderGraph, x: str, count: int) -> str:
    """[B, S, count * D] -> [B, S, count, D]."""
    return g.op("Reshape", [x, g.ints(0, 0, count, g.s.head_dim)])


def repeat_kv(g: DecoderGraph, x: str, tail: tuple[int, int]) -> str:
    """[B, KV, a, b] -> [B, H, a, b], each key/value head repeated for its group of queries."""
    group = g.s.heads // g.s.kv_heads
    if group == 1:
        return x
    wide = g.op("Expand", [g.op("Unsqueeze", [x, g.ints(2)]), g.ints(1, 1, group, 1, 1)])
    return g.op("Reshape", [wide, g.ints(0, g.s.heads, *tail)])


def assemble(g: DecoderGraph) -> onnx.ModelProto:
    s = g.s
    vocab = g.gguf.tensors["token_embd.weight"].shape[0]
    kv: list[str | int] = [s.layers, 2, 1, "past", s.kv_heads, s.head_dim]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.FLOAT, ["seq", 1, s.hidden]),
        helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, 1, "seq", "all"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT32, [1, "seq"]),
        helper.make_tensor_value_info("logits_index", TensorProto.INT32, [1]),
        helper.make_tensor_value_info(PAST, TensorProto.FLOAT, kv),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "kept", vocab])]
    graph = helper.make_graph(g.nodes, "llm", inputs, outputs, g.initializers)
    opsets = [helper.make_opsetid("", OPSET)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="edgebench")
    model.ir_version = 8
    return model
