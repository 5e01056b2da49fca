"""ViT-Tiny / DeiT-Tiny (patch 16, dim 192, depth 12, 3 heads), 224x224 ImageNet classifier."""

from __future__ import annotations

import math

import onnx

from edgebench.models.graph import GraphBuilder
from edgebench.models.layers import conv, gelu, gemm, layer_norm, linear

INPUT_SHAPE = (1, 3, 224, 224)
NUM_CLASSES = 1000
PATCH = 16
DIM = 192
DEPTH = 12
HEADS = 3
MLP_RATIO = 4
HEAD_DIM = DIM // HEADS
TOKENS = (INPUT_SHAPE[2] // PATCH) * (INPUT_SHAPE[3] // PATCH) + 1  # patches + class token
INIT_STD = 0.02  # DeiT's truncated-normal std for Linear layers and embeddings


def attention(b: GraphBuilder, x: str, name: str) -> str:
    qkv = linear(b, x, f"{name}.qkv", DIM, 3 * DIM, INIT_STD)
    qkv = b.op("Reshape", [qkv, b.const_i64([1, TOKENS, 3, HEADS, HEAD_DIM])], f"{name}.split")
    # -> [3 (q/k/v), batch, heads, tokens, head_dim]
    qkv = b.op("Transpose", [qkv], f"{name}.permute", perm=[2, 0, 3, 1, 4])
    q, k, v = (
        b.op("Gather", [qkv, b.const_i64(i)], f"{name}.{part}", axis=0)
        for i, part in enumerate("qkv")
    )
    q = b.op("Mul", [q, b.const_f32(1.0 / math.sqrt(HEAD_DIM))], f"{name}.q_scaled")
    k_t = b.op("Transpose", [k], f"{name}.k_t", perm=[0, 1, 3, 2])
    scores = b.op("MatMul", [q, k_t], f"{name}.scores")
    probs = b.op("Softmax", [scores], f"{name}.softmax", axis=-1)
    context = b.op("MatMul", [probs, v], f"{name}.context")
    context = b.op("Transpose", [context], f"{name}.merge_t", perm=[0, 2, 1, 3])
    context = b.op("Reshape", [context, b.const_i64([1, TOKENS, DIM])], f"{name}.merge")
    return linear(b, context, f"{name}.proj", DIM, DIM, INIT_STD)


def encoder_block(b: GraphBuilder, x: str, name: str) -> str:
    y = attention(b, layer_norm(b, x, f"{name}.norm1", DIM), f"{name}.attn")
    x = b.op("Add", [x, y], f"{name}.residual1")
    y = layer_norm(b, x, f"{name}.norm2", DIM)
    y = linear(b, y, f"{name}.mlp.fc1", DIM, MLP_RATIO * DIM, INIT_STD)
    y = gelu(b, y, f"{name}.mlp.gelu")
    y = linear(b, y, f"{name}.mlp.fc2", MLP_RATIO * DIM, DIM, INIT_STD)
    return b.op("Add", [x, y], f"{name}.residual2")


def build_vit_tiny(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    # The patch projection keeps PyTorch's default Conv init scale (~1/sqrt(3 * fan_in)).
    y = conv(b, "input", "patch_embed", 3, DIM, PATCH, PATCH, gain=1.0 / 3.0, bias=True, pad=0)
    y = b.op("Reshape", [y, b.const_i64([1, DIM, TOKENS - 1])], "patch_embed.flatten")
    y = b.op("Transpose", [y], "patch_embed.tokens", perm=[0, 2, 1])
    cls_token = b.initializer("cls_token", b.normal((1, 1, DIM), INIT_STD))
    y = b.op("Concat", [cls_token, y], "cat_cls", axis=1)
    pos_embed = b.initializer("pos_embed", b.normal((1, TOKENS, DIM), INIT_STD))
    y = b.op("Add", [y, pos_embed], "add_pos")
    for i in range(DEPTH):
        y = encoder_block(b, y, f"blocks.{i}")
    y = layer_norm(b, y, "norm", DIM)
    y = b.op("Gather", [y, b.const_i64(0)], "cls_select", axis=1)
    y = gemm(b, y, "head", DIM, NUM_CLASSES, INIT_STD)
    return b.build("vit-tiny", INPUT_SHAPE, y, (1, NUM_CLASSES), "DeiT-Tiny, patch 16, 224x224")
