"""The writer half of TNN's binary serialization (``objseri.h``) for ``.tnnmodel`` files.

Every value is little-endian. Strings are an int32 byte length plus the bytes. A raw buffer
(``Serializer::PutRaw``) is: magic ``0xFABC0004``, data type, byte length, then, only when
the length is positive, the dim count, the dims and the bytes.
"""

from __future__ import annotations

import struct

import numpy as np

MAGIC_V2 = 0x0FABC0004

# TNN's DataType enum (include/tnn/core/common.h).
DATA_TYPES: dict[np.dtype, int] = {
    np.dtype(np.float32): 0,
    np.dtype(np.float16): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int32): 3,
}

HALF_MAX = 65504.0


def half_truncated(values: np.ndarray) -> np.ndarray:
    """float32 -> float16 the way TNN's ``ConvertFromFloatToHalf`` does it.

    TNN clamps to +-65504 and converts with half.hpp's default rounding style, which truncates
    toward zero (not IEEE round-to-nearest as numpy's ``astype`` does).
    """
    x = np.asarray(np.clip(np.asarray(values, dtype=np.float32), -HALF_MAX, HALF_MAX))
    nearest = x.astype(np.float16)
    rounded_away = np.abs(nearest.astype(np.float32)) > np.abs(x)
    bits = nearest.view(np.uint16).copy()
    # Sign-magnitude: one less in the magnitude bits is one step toward zero.
    bits[rounded_away] -= 1
    return bits.view(np.float16)


def format_float(value: float) -> str:
    """A float as ``std::ostream << float`` prints it (``%g``, 6 significant digits)."""
    return f"{value:g}"


class BinaryWriter:
    """Accumulates the bytes of a ``.tnnmodel`` file."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int32(self, value: int) -> None:
        self._parts.append(struct.pack("<I", value & 0xFFFFFFFF))

    def string(self, value: str) -> None:
        data = value.encode("utf-8")
        self.int32(len(data))
        self._parts.append(data)

    def raw(self, array: np.ndarray) -> None:
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        data_type = DATA_TYPES.get(array.dtype)
        if data_type is None:
            raise ValueError(f"TNN raw buffers cannot hold {array.dtype}")
        data = array.tobytes()
        self.int32(MAGIC_V2)
        self.int32(data_type)
        self.int32(len(data))
        if not data:
            return
        self.int32(array.ndim)
        for dim in array.shape:
            self.int32(dim)
        self._parts.append(data)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)
