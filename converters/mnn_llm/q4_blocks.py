"""A Q4_0 file's blocks written into MNN's own 4-bit weight form, bit for bit.

Why not MNN's converter's quantization (``--weightQuantBits 4``): it quantizes the float values
again and chooses its own grid per block (tools/converter/source/common/WeightQuantAndCoding.cpp).
Symmetric, its scale is max|w| / 7 and its levels -7..7, while a Q4_0 block is d * (q - 8),
q in 0..15: 16 levels from -8d to 7d whose largest magnitude is 8|d|, so no value of the block
lands on the new grid. Asymmetric, its scale is (max - min) / 15 from the block's own extremes:
exact only where the block holds both -8d and 7d (half of llm-tiny's blocks; in the others the
values move by 0.12 d on average). Either way the model computed is another one.

MNN's weight format holds Q4_0 exactly (MNN's own ``gguf2mnn.py`` writes it so): a symmetric
4-bit matrix is a header (2 dimensions, [oc, ic] as int16 or int32, then the level map: its size
16 and the levels -8..7), the 4-bit codes two to a byte (first element in the high nibble), and
one float32 scale per block of 32 along the input; each weight is ``level[code] * scale``. So the
Q4_0 nibble is the code and d the scale.

How: mnnconvert writes the model with symmetric 4-bit block-32 weights (the Convolution ops and
their layout in ``llm.mnn.weight``), dumps it as JSON, and edgebench writes a new weight file:
every matrix from the GGUF's blocks, every other external blob copied, the offsets in the JSON
updated; mnnconvert turns the JSON back into ``llm.mnn``. Each Convolution is matched to its GGUF
tensor by the graph's order (per layer q, k, v, output, gate, up, down; then the head) and
checked against the converter's own scales (max|w| / 7 = 8|d| / 7 for every block), so a
different layout is a clear failure, never a wrong model. The head is the token embedding where
the file ties them: the engine's embedding lookup then reads the same blocks (``tie_embeddings``
with quant_bit 4, transformers/llm/engine/src/diskembedding.cpp).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from edgebench.converters.base import ConversionError
from edgebench.runners.protocol.gguf import GgufFile
from edgebench.runners.protocol.llm_shape import DecoderShape

from ..ort_genai.graph import DecoderGraph
from ..ort_genai.weights import BLOCK, Blocks, matmul_blocks
from .folder import MODEL_FILE, WEIGHT_FILE
from .tool import mnnconvert

#: mnnconvert's flags for the first pass: the Convolutions in MNN's symmetric 4-bit form.
FIRST_PASS_FLAGS = [
    "--weightQuantBits",
    "4",
    "--weightQuantBlock",
    "32",
    "--weightQuantAsymmetric=0",
]
#: The per-layer matrices in the order the converted graph holds its Convolutions.
LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
#: The level map of a 4-bit matrix: its size, then the levels code 0..15 stands for.
LEVEL_MAP = np.array([16, *range(-8, 8)], dtype=np.int8)
INT16_MAX = 65535
_LAYOUT_CHANGED = "mnnconvert laid out the matrices in an order edgebench does not know"


def q4_matrices(gguf: GgufFile, shape: DecoderShape) -> list[tuple[str, Blocks]]:
    """(GGUF name, its blocks in the graph's row order) per Convolution, in graph order."""
    graph = DecoderGraph(gguf, shape)
    q_rows, k_rows = graph.half_split_rows(shape.heads), graph.half_split_rows(shape.kv_heads)
    rows = {"attn_q": q_rows, "attn_k": k_rows}
    names = [f"blk.{n}.{part}.weight" for n in range(shape.layers) for part in LAYER_MATRICES]
    names.append("output.weight" if "output.weight" in gguf.tensors else "token_embd.weight")
    found = []
    for name in names:
        if gguf.tensors[name].ggml_type != "Q4_0":
            raise ConversionError(
                "unsupported_precision",
                f"{name} is {gguf.tensors[name].ggml_type}, not Q4_0 (a mixed file): "
                "run it on another runtime",
            )
        blocks = matmul_blocks(gguf, name)
        order = rows.get(name.split(".")[-2])
        found.append((name, blocks.rows(order) if order is not None else blocks))
    return found


def header(oc: int, ic: int) -> tuple[bytes, bool]:
    """A 4-bit matrix's header, and whether its dimensions are int32."""
    wide = oc > INT16_MAX or ic > INT16_MAX
    dims = np.array([oc, ic], dtype="<i4" if wide else "<i2")
    return bytes([2]) + dims.tobytes() + LEVEL_MAP.tobytes(), wide


def mnn_codes(blocks: Blocks) -> bytes:
    """MatMulNBits' packing (element 2j in the low nibble) as MNN's (2j in the high one)."""
    data = blocks.data.reshape(blocks.n, -1)
    return (((data & 0x0F) << 4) | (data >> 4)).astype(np.uint8).tobytes()


def external_ops(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ops whose data lie in the weight file, in the JSON's order."""
    for op in model.get("oplists", []):
        main = op.get("main")
        if isinstance(main, dict) and "external" in main:
            yield op


def _read(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    data = handle.read(size)
    if len(data) != size:
        raise ConversionError("failed", f"{WEIGHT_FILE} ends before offset {offset + size}")
    return data


def _check_layout(name: str, conv: dict[str, Any], blocks: Blocks, scales: bytes) -> None:
    common = conv.get("common", {})
    if (common.get("outputCount"), common.get("inputCount")) != (blocks.n, blocks.k):
        raise ConversionError("failed", f"{_LAYOUT_CHANGED} ({name} is {blocks.n}x{blocks.k})")
    theirs = np.frombuffer(scales, dtype="<f4")
    ours = 8.0 * np.abs(blocks.scales.reshape(-1)) / 7.0
    if theirs.shape != ours.shape or not np.allclose(theirs, ours, rtol=1e-4, atol=1e-12):
        raise ConversionError("failed", f"{_LAYOUT_CHANGED} ({name}: its scales differ)")


def rewrite_weights(
    model: dict[str, Any], matrices: list[tuple[str, Blocks]], old: Path, new: Path
) -> dict[str, Any]:
    """Write ``new`` from ``old`` with every Convolution's matrix from ``matrices``, updating
    the JSON ``model`` in place; returns the head's ``tie_embeddings`` entry."""
    convs = [op for op in external_ops(model) if op.get("type") == "Convolution"]
    if len(convs) != len(matrices):
        raise ConversionError(
            "failed", f"{_LAYOUT_CHANGED} ({len(convs)} matrices, the file has {len(matrices)})"
        )
    by_op = {id(op): pair for op, pair in zip(convs, matrices, strict=True)}
    tie: dict[str, Any] = {}
    offset = 0
    with old.open("rb") as src, new.open("wb") as dst:
        for op in external_ops(model):
            main = op["main"]
            ext = [int(v) for v in main["external"]]
            if id(op) not in by_op:
                offset += dst.write(_read(src, ext[0], sum(ext[1:])))
                main["external"] = [offset - sum(ext[1:]), *ext[1:]]
                continue
            name, blocks = by_op[id(op)]
            if len(ext) < 4 or any(ext[4:]):
                raise ConversionError("failed", f"{_LAYOUT_CHANGED} ({name}: sparse weights)")
            _check_layout(name, main, blocks, _read(src, ext[0] + ext[1], ext[2]))
            bias = _read(src, ext[0] + ext[1] + ext[2], ext[3])
            head, wide = header(blocks.n, blocks.k)
            codes, scales = mnn_codes(blocks), blocks.scales.astype("<f4").tobytes()
            start = offset
            for part in (head, codes, scales, bias):
                offset += dst.write(part)
            main["external"] = [start, len(head) + len(codes), len(scales), len(bias), *ext[4:]]
            main["quanParameter"] = {
                **main.get("quanParameter", {}),
                "type": 1,
                "aMaxOrBits": 4,
                "aMin": 0,
                "readType": 0,
                "shapeInt32": wide,
                "scaleStorage": "FP32",
            }
            tie = {
                "weight_offset": start + len(head),
                "alpha_offset": start + len(head) + len(codes),
                "alpha_size": len(scales),
                "quant_bit": 4,
                "quant_block": BLOCK,
                "alpha_dtype": "fp32",
            }
    return tie


def write_q4_blocks(
    gguf: GgufFile, shape: DecoderShape, out_dir: Path, work: Path, timeout: float
) -> tuple[dict[str, Any] | None, str]:
    """Replace the 4-bit matrices mnnconvert wrote in ``out_dir`` by the file's own blocks.
    Returns the ``tie_embeddings`` entry (None where the head is not the token embedding) and
    the tools' log."""
    matrices = q4_matrices(gguf, shape)
    dumped, edited = work / "llm.mnn.json", work / "llm.edited.json"
    model_path, weight_path = out_dir / MODEL_FILE, out_dir / WEIGHT_FILE
    logs = [
        mnnconvert(
            ["-f", "MNN", "--modelFile", str(model_path), "--JsonFile", str(dumped)],
            work,
            dumped,
            timeout,
        )
    ]
    model = json.loads(dumped.read_text())
    fresh = work / WEIGHT_FILE
    tie = rewrite_weights(model, matrices, weight_path, fresh)
    edited.write_text(json.dumps(model))
    model_path.unlink()
    logs.append(
        mnnconvert(
            [
                "-f",
                "JSON",
                "--modelFile",
                str(edited),
                "--MNNModel",
                str(model_path),
                "--bizCode",
                "edgebench",
            ],
            work,
            model_path,
            timeout,
        )
    )
    fresh.replace(weight_path)
    tied = matrices[-1][0] == "token_embd.weight"
    return (tie if tied else None), "\n".join(logs)
