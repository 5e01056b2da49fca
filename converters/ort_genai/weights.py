"""A GGUF tensor as the initializers of one ONNX operand: a float32 or float16 array, or the
blocks of ONNX Runtime's ``MatMulNBits`` (com.microsoft) taken from Q8_0 and Q4_0 as stored.

Q8_0 and Q4_0 are blocks of 32 weights along a row (the input dimension), each with one float16
scale and no zero point: exactly MatMulNBits with ``block_size`` 32 at 8 and 4 bits, symmetric
(its default zero point, 2^(bits-1), is the offset GGUF stores Q4_0's nibbles with, and the one
Q8_0's signed bytes get once shifted to unsigned). Only the nibble order differs: GGUF puts
element j and j + 16 in byte j, MatMulNBits elements 2j and 2j + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgebench.runners.protocol.gguf import GgufError, GgufFile

#: GGML types read as their MatMulNBits blocks: name -> (bits, bytes per block of 32).
BLOCK_TYPES = {"Q8_0": (8, 34), "Q4_0": (4, 18)}
BLOCK = 32


@dataclass(frozen=True)
class Blocks:
    """A matrix of N rows (outputs) by K columns (inputs) as MatMulNBits takes it:
    ``data`` uint8 [N, K / 32, 32 * bits / 8], ``scales`` float32 [N, K / 32]."""

    data: np.ndarray
    scales: np.ndarray
    bits: int

    @property
    def n(self) -> int:
        return int(self.data.shape[0])

    @property
    def k(self) -> int:
        return int(self.data.shape[1]) * BLOCK

    def rows(self, order: np.ndarray) -> Blocks:
        return Blocks(self.data[order], self.scales[order], self.bits)


def raw_bytes(gguf: GgufFile, name: str) -> bytes:
    """The stored bytes of tensor ``name``, as the file holds them."""
    info = gguf.tensors[name]
    with open(gguf.path, "rb") as handle:
        handle.seek(gguf.data_offset + info.offset)
        raw = handle.read(info.nbytes)
    if len(raw) != info.nbytes:
        raise GgufError(f"{gguf.path}: truncated: tensor {name!r} ends past the end of file")
    return raw


def matmul_blocks(gguf: GgufFile, name: str) -> Blocks:
    """Matrix ``name`` (stored as Q8_0 or Q4_0) as MatMulNBits blocks, bit for bit."""
    info = gguf.tensors[name]
    bits, block_bytes = BLOCK_TYPES[info.ggml_type]
    rows, cols = info.shape
    blocks = np.frombuffer(raw_bytes(gguf, name), dtype=np.uint8).reshape(rows, -1, block_bytes)
    scales = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
    quants = blocks[..., 2:]
    if bits == 8:
        data = (quants.view(np.int8).astype(np.int16) + 128).astype(np.uint8)
    else:
        values = np.concatenate([quants & 0x0F, quants >> 4], axis=-1)  # elements 0..31 in order
        data = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
    assert data.shape[1] * BLOCK == cols, name
    return Blocks(np.ascontiguousarray(data), np.ascontiguousarray(scales), bits)


def stored_half(gguf: GgufFile, name: str) -> np.ndarray:
    """Tensor ``name`` (stored as F16) as float16, in its logical shape, without rounding."""
    info = gguf.tensors[name]
    return np.frombuffer(raw_bytes(gguf, name), dtype="<f2").reshape(info.shape).astype(np.float16)
