"""The whole decoder graph (graph.py's blocks put together) and its inputs and outputs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from edgebench.runners.protocol.gguf import GgufFile
from edgebench.runners.protocol.llm_shape import DecoderShape, rotary_tables

from .graph import MASKED, OPSET, DecoderGraph
from .weights import BLOCK_TYPES, matmul_blocks

PAST_KEY, PAST_VALUE = "past_key_values.%d.key", "past_key_values.%d.value"
PRESENT_KEY, PRESENT_VALUE = "present.%d.key", "present.%d.value"


def decoder_model(gguf: GgufFile, shape: DecoderShape) -> onnx.ModelProto:
    g = DecoderGraph(gguf, shape)
    s = shape
    embedding = g.float_weight("token_embd.weight")
    hidden = g.op("Gather", [embedding, "input_ids"], axis=0)
    bias = attention_bias(g)
    cos, sin = rotary_inputs(g)
    for n in range(s.layers):
        hidden = g.op("Add", [hidden, attention(g, n, hidden, bias, cos, sin)])
        normed = g.rms_norm(hidden, f"blk.{n}.ffn_norm.weight")
        gate = g.linear(normed, f"blk.{n}.ffn_gate.weight")
        up = g.linear(normed, f"blk.{n}.ffn_up.weight")
        swish = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        down = g.linear(g.op("Mul", [swish, up]), f"blk.{n}.ffn_down.weight")
        hidden = g.op("Add", [hidden, down])
    last = g.op("Gather", [hidden, g.ints(-1)], axis=1)  # [B, 1, hidden]
    logits = head(g, g.rms_norm(last, "output_norm.weight"), embedding)
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits"))
    return assemble(g)


def attention(g: DecoderGraph, n: int, x: str, bias: str, cos: str, sin: str) -> str:
    s = g.s
    h = g.rms_norm(x, f"blk.{n}.attn_norm.weight")
    q_rows, k_rows = g.half_split_rows(s.heads), g.half_split_rows(s.kv_heads)
    q = g.bias(g.linear(h, f"blk.{n}.attn_q.weight", q_rows), f"blk.{n}.attn_q.bias", q_rows)
    k = g.bias(g.linear(h, f"blk.{n}.attn_k.weight", k_rows), f"blk.{n}.attn_k.bias", k_rows)
    v = g.bias(g.linear(h, f"blk.{n}.attn_v.weight"), f"blk.{n}.attn_v.bias")
    q = g.rotate(g.heads(q, s.heads), cos, sin)
    k = g.rotate(g.heads(k, s.kv_heads), cos, sin)
    g.nodes.append(
        helper.make_node("Concat", [PAST_KEY % n, k], [PRESENT_KEY % n], axis=2, name=f"/pk{n}")
    )
    g.nodes.append(
        helper.make_node(
            "Concat", [PAST_VALUE % n, g.heads(v, s.kv_heads)], [PRESENT_VALUE % n], axis=2,
            name=f"/pv{n}",
        )
    )  # fmt: skip
    # Query head h = group * kv_head + r reads kv_head: [B, H, S, D] -> [B, KV, G * S, D].
    scaled = g.op("Mul", [q, g.scalar(float(1.0 / np.sqrt(s.head_dim)))])
    grouped = g.op("Reshape", [scaled, g.ints(0, s.kv_heads, -1, s.head_dim)])
    keys_t = g.op("Transpose", [PRESENT_KEY % n], perm=[0, 1, 3, 2])
    scores = g.op("Reshape", [g.op("MatMul", [grouped, keys_t]), g.ints(0, s.heads, -1, 0)])
    weights = g.op("Softmax", [g.op("Add", [scores, bias])], axis=-1)
    regrouped = g.op("Reshape", [weights, g.ints(0, s.kv_heads, -1, 0)])
    mixed = g.op("MatMul", [regrouped, PRESENT_VALUE % n])  # [B, KV, G * S, D]
    per_head = g.op("Reshape", [mixed, g.ints(0, s.heads, -1, s.head_dim)])
    tokens = g.op("Transpose", [per_head], perm=[0, 2, 1, 3])
    flat = g.op("Reshape", [tokens, g.ints(0, 0, s.heads * s.head_dim)])
    return g.linear(flat, f"blk.{n}.attn_output.weight")


def attention_bias(g: DecoderGraph) -> str:
    """[B, 1, S, T]: 0 where query i (at position past + i) may read key j (j <= past + i and
    the attention mask set), else a large negative score."""
    one = g.int_scalar(1)
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), one], axis=0)
    total = g.op("Gather", [g.op("Shape", ["attention_mask"]), one], axis=0)
    key_pos = g.op("Range", [g.int_scalar(0), total, one])
    query_pos = g.op("Range", [g.op("Sub", [total, seq]), total, one])
    causal = g.op("LessOrEqual", [key_pos, g.op("Unsqueeze", [query_pos, g.ints(1)])])
    padding = g.op("Cast", ["attention_mask"], to=TensorProto.BOOL)
    allowed = g.op("And", [causal, g.op("Unsqueeze", [padding, g.ints(1, 2)])])
    return g.op("Where", [allowed, g.scalar(0.0), g.scalar(MASKED)])


def rotary_inputs(
    g: DecoderGraph, positions: str = "position_ids", head_axis: int = 1
) -> tuple[str, str]:
    """cos and sin [B, 1, S, D / 2] of each token's position in ``positions`` [B, S] (with
    ``head_axis`` 2: [B, S, 1, D / 2], for heads laid out [B, S, heads, D])."""
    factors = g.gguf.tensor("rope_freqs.weight") if "rope_freqs.weight" in g.gguf.tensors else None
    cos_table, sin_table = rotary_tables(g.s, g.s.context_length, factors)
    picked = []
    for name, table in (("rope.cos", cos_table), ("rope.sin", sin_table)):
        rows = g.op("Gather", [g.const(name, table), positions], axis=0)
        picked.append(g.op("Unsqueeze", [rows, g.ints(head_axis)]))
    return picked[0], picked[1]


def head(g: DecoderGraph, normed: str, embedding: str) -> str:
    """[B, 1, vocab]: the output matrix, or the token embedding where the file ties them."""
    if "output.weight" in g.gguf.tensors:
        return g.linear(normed, "output.weight")
    if g.gguf.tensors["token_embd.weight"].ggml_type in BLOCK_TYPES:
        return g.nbits(normed, "token_embd.weight", matmul_blocks(g.gguf, "token_embd.weight"))
    flat = g.op("Squeeze", [normed, g.ints(1)])
    return g.op("Unsqueeze", [g.op("Gemm", [flat, embedding], transB=1), g.ints(1)])


def assemble(g: DecoderGraph) -> onnx.ModelProto:
    s = g.s
    kv: list[str | int] = ["batch_size", s.kv_heads, "past_sequence_length", s.head_dim]
    present: list[str | int] = ["batch_size", s.kv_heads, "total_sequence_length", s.head_dim]
    vocab = g.gguf.tensors["token_embd.weight"].shape[0]
    tokens, total = ["batch_size", "sequence_length"], ["batch_size", "total_sequence_length"]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, tokens),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, total),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, tokens),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", 1, vocab])]
    for n in range(s.layers):
        for name in (PAST_KEY % n, PAST_VALUE % n):
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, kv))
        for name in (PRESENT_KEY % n, PRESENT_VALUE % n):
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, present))
    graph = helper.make_graph(g.nodes, "decoder", inputs, outputs, g.initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="edgebench")
    model.ir_version = 8
    return model
