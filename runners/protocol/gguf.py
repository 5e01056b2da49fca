"""A safe reader of GGUF files (versions 2 and 3): metadata, tensor infos and tensors as float32.

Every count, length, offset and size is checked against the file before anything is allocated
or read, so a truncated or hostile file raises :class:`GgufError` with one line naming the file
and the fault. The header is parsed from a read-only memory map; a tensor's bytes are read on
demand with one bounded read. Python 3.8+, numpy only (this module runs on devices).
"""

import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
#: Metadata nesting (arrays of arrays) deeper than this is refused: no real file nests at all.
MAX_ARRAY_DEPTH = 4

# Metadata value types: id -> (name, struct format or None for string/array)
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL = range(8)
_STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = 8, 9, 10, 11, 12
_SCALARS = {
    _UINT8: "<B",
    _INT8: "<b",
    _UINT16: "<H",
    _INT16: "<h",
    _UINT32: "<I",
    _INT32: "<i",
    _FLOAT32: "<f",
    _BOOL: "<?",
    _UINT64: "<Q",
    _INT64: "<q",
    _FLOAT64: "<d",
}
_NUMPY = {
    _UINT8: "<u1",
    _INT8: "<i1",
    _UINT16: "<u2",
    _INT16: "<i2",
    _UINT32: "<u4",
    _INT32: "<i4",
    _FLOAT32: "<f4",
    _UINT64: "<u8",
    _INT64: "<i8",
    _FLOAT64: "<f8",
}


_U64 = struct.Struct("<Q")


class GgmlType(NamedTuple):
    name: str
    block: int  # elements per block
    size: int  # bytes per block


#: Every GGML tensor type a GGUF file may hold (ggml.h of the llama.cpp that llama-cpp-python
#: 0.3.36 vendors), so that any file's extents can be checked; :meth:`GgufFile.tensor`
#: dequantizes those in ``DEQUANTIZED``.
GGML_TYPES = {
    0: GgmlType("F32", 1, 4),
    1: GgmlType("F16", 1, 2),
    2: GgmlType("Q4_0", 32, 18),
    3: GgmlType("Q4_1", 32, 20),
    6: GgmlType("Q5_0", 32, 22),
    7: GgmlType("Q5_1", 32, 24),
    8: GgmlType("Q8_0", 32, 34),
    9: GgmlType("Q8_1", 32, 36),
    10: GgmlType("Q2_K", 256, 84),
    11: GgmlType("Q3_K", 256, 110),
    12: GgmlType("Q4_K", 256, 144),
    13: GgmlType("Q5_K", 256, 176),
    14: GgmlType("Q6_K", 256, 210),
    15: GgmlType("Q8_K", 256, 292),
    16: GgmlType("IQ2_XXS", 256, 66),
    17: GgmlType("IQ2_XS", 256, 74),
    18: GgmlType("IQ3_XXS", 256, 98),
    19: GgmlType("IQ1_S", 256, 50),
    20: GgmlType("IQ4_NL", 32, 18),
    21: GgmlType("IQ3_S", 256, 110),
    22: GgmlType("IQ2_S", 256, 82),
    23: GgmlType("IQ4_XS", 256, 136),
    24: GgmlType("I8", 1, 1),
    25: GgmlType("I16", 1, 2),
    26: GgmlType("I32", 1, 4),
    27: GgmlType("I64", 1, 8),
    28: GgmlType("F64", 1, 8),
    29: GgmlType("IQ1_M", 256, 56),
    30: GgmlType("BF16", 1, 2),
    34: GgmlType("TQ1_0", 256, 54),
    35: GgmlType("TQ2_0", 256, 66),
    39: GgmlType("MXFP4", 32, 17),
    40: GgmlType("NVFP4", 64, 36),
    41: GgmlType("Q1_0", 128, 18),
    42: GgmlType("Q2_0", 64, 18),
}
DEQUANTIZED = ("F32", "F16", "BF16", "Q8_0", "Q4_0")


class GgufError(ValueError):
    """A file that is not a well-formed GGUF file; the message is one line naming it."""


class TensorInfo(NamedTuple):
    name: str
    shape: Tuple[int, ...]  # logical (numpy) order: the file's dimensions reversed
    ggml_type: str  # GGML_TYPES name
    offset: int  # from the start of the data section
    nbytes: int

    @property
    def n_elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class GgufFile:
    """What :func:`read_gguf` found: metadata, tensor infos, where the data section starts."""

    path: str
    version: int
    metadata: Dict[str, Any]
    tensors: Dict[str, TensorInfo]
    data_offset: int
    file_size: int

    @property
    def alignment(self) -> int:
        return int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))

    def tensor(self, name: str) -> np.ndarray:
        """Tensor ``name`` as float32 in its logical shape, dequantized."""
        info = self.tensors.get(name)
        if info is None:
            raise GgufError(f"{self.path}: no tensor {name!r} in the file")
        if info.ggml_type not in DEQUANTIZED:
            raise GgufError(
                f"{self.path}: tensor {name!r} is {info.ggml_type}, which this reader does not "
                f"dequantize (it reads {', '.join(DEQUANTIZED)})"
            )
        start = self.data_offset + info.offset
        try:
            with open(self.path, "rb") as handle:
                handle.seek(start)
                raw = handle.read(info.nbytes)
        except OSError as exc:
            raise GgufError(f"{self.path}: cannot read tensor {name!r} ({exc})") from None
        if len(raw) != info.nbytes:
            raise GgufError(f"{self.path}: truncated: tensor {name!r} ends past the end of file")
        return _dequantize(raw, info.ggml_type).reshape(info.shape)


def _dequantize(raw: bytes, ggml_type: str) -> np.ndarray:
    if ggml_type == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if ggml_type == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    if ggml_type == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    if ggml_type == "Q8_0":
        blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        out = blocks[:, 2:].view(np.int8).astype(np.float32)
    else:
        # Q4_0: a float16 scale, then 16 bytes: element j in the low nibble of byte j, element
        # j + 16 in its high nibble, each stored as q + 8.
        blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
        packed = blocks[:, 2:]
        out = np.empty((len(blocks), 32), dtype=np.float32)
        np.bitwise_and(packed, 0x0F, out=out[:, :16], casting="unsafe")
        np.right_shift(packed, 4, out=out[:, 16:], casting="unsafe")
        out -= np.float32(8)
    # In place, block by block: the 0.5B embedding is 136M values.
    out *= blocks[:, :2].copy().view("<f2").astype(np.float32)
    return out.reshape(-1)


class _Cursor:
    """Reads little-endian values from a buffer, refusing anything past its end."""

    def __init__(self, buf: Any, path: str) -> None:
        self.buf = buf
        self.end = len(buf)
        self.pos = 0
        self.path = path

    def fail(self, what: str) -> GgufError:
        return GgufError(f"{self.path}: {what}")

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"truncated: {what} at byte {self.pos} ends past the end of file")

    def scalar(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> str:
        length = self.scalar("<Q", what)
        if length > self.end - self.pos:
            raise self.fail(
                f"{what} at byte {self.pos - 8} claims {length} bytes, more than the file holds"
            )
        text = bytes(self.buf[self.pos : self.pos + length]).decode("utf-8", "surrogateescape")
        self.pos += length
        return text

    def strings(self, n: int, what: str) -> List[str]:
        """``n`` strings: :meth:`string` unrolled, since vocabularies hold 150,000 of them."""
        buf, pos, end, unpack = self.buf, self.pos, self.end, _U64.unpack_from
        out: List[str] = []
        append = out.append
        for i in range(n):
            if end - pos < 8:
                self.pos = pos
                self.need(8, f"{what}[{i}]")
            (length,) = unpack(buf, pos)
            pos += 8
            if length > end - pos:
                raise self.fail(
                    f"{what}[{i}] at byte {pos - 8} claims {length} bytes, more than the file holds"
                )
            append(buf[pos : pos + length].decode("utf-8", "surrogateescape"))
            pos += length
        self.pos = pos
        return out

    def count(self, what: str, min_item_bytes: int) -> int:
        """A uint64 count of items, each at least ``min_item_bytes`` long: refused when the
        rest of the file cannot hold that many."""
        at = self.pos
        value = self.scalar("<Q", what)
        if value * min_item_bytes > self.end - self.pos:
            raise self.fail(
                f"{what} at byte {at} is {value}, more than the rest of the file can hold"
            )
        return value

    def value(self, vtype: int, what: str, depth: int = 0) -> Any:
        fmt = _SCALARS.get(vtype)
        if fmt is not None:
            return self.scalar(fmt, what)
        if vtype == _STRING:
            return self.string(what)
        if vtype == _ARRAY:
            return self.array(what, depth)
        raise self.fail(f"{what} has unknown value type {vtype} (known: 0 to 12)")

    def array(self, what: str, depth: int) -> Any:
        if depth >= MAX_ARRAY_DEPTH:
            raise self.fail(f"{what} nests arrays deeper than {MAX_ARRAY_DEPTH}")
        item_type = self.scalar("<I", f"{what}'s item type")
        if item_type in _NUMPY or item_type == _BOOL:
            size = struct.calcsize(_SCALARS[item_type])
            n = self.count(f"{what}'s length", size)
            dtype = _NUMPY.get(item_type, "<u1")
            # A copy: a view would pin the memory map open.
            chunk = bytes(self.buf[self.pos : self.pos + n * size])
            self.pos += n * size
            listed = np.frombuffer(chunk, dtype=dtype).tolist()
            return [bool(x) for x in listed] if item_type == _BOOL else listed
        if item_type == _STRING:
            n = self.count(f"{what}'s length", 8)
            return self.strings(n, what)
        if item_type == _ARRAY:
            n = self.count(f"{what}'s length", 12)
            return [self.array(f"{what}[{i}]", depth + 1) for i in range(n)]
        raise self.fail(f"{what} is an array of unknown value type {item_type} (known: 0 to 12)")


def read_gguf(path: "os.PathLike[str] | str") -> GgufFile:
    """Parse the GGUF file at ``path``: metadata and tensor infos, all checked. GgufError (one
    line) for anything malformed."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 24:
                raise GgufError(f"{name}: not a GGUF file ({size} bytes, shorter than a header)")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse(buf, name, size)
    except OSError as exc:
        raise GgufError(f"{name}: cannot read ({exc.strerror or exc})") from None


def _parse(buf: Any, path: str, size: int) -> GgufFile:
    cur = _Cursor(buf, path)
    if bytes(buf[:4]) != MAGIC:
        raise cur.fail(f"not a GGUF file (starts with {bytes(buf[:4])!r}, not b'GGUF')")
    cur.pos = 4
    version = cur.scalar("<I", "version")
    if version not in VERSIONS:
        if version & 0xFFFF == 0 and version >> 16:
            raise cur.fail("big-endian GGUF: only little-endian files are read")
        raise cur.fail(f"GGUF version {version}: only versions 2 and 3 are read")
    n_tensors = cur.count("tensor count", 24)  # name length, dims, type, offset
    n_kv = cur.count("metadata count", 12)  # key length, value type
    metadata: Dict[str, Any] = {}
    for i in range(n_kv):
        key = cur.string(f"metadata key {i}")
        vtype = cur.scalar("<I", f"metadata {key!r}'s type")
        if key in metadata:
            raise cur.fail(f"metadata key {key!r} appears twice")
        metadata[key] = cur.value(vtype, f"metadata {key!r}")
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment, int)
        or isinstance(alignment, bool)
        or alignment <= 0
        or alignment & (alignment - 1)
    ):
        raise cur.fail(f"general.alignment is {alignment!r}, not a power of two")
    infos = [_tensor_info(cur) for _ in range(n_tensors)]
    data_offset = -(-cur.pos // alignment) * alignment
    tensors = _check_extents(cur, infos, data_offset, size, alignment)
    return GgufFile(path, version, metadata, tensors, data_offset, size)


def _tensor_info(cur: _Cursor) -> Tuple[str, List[int], int, int]:
    name = cur.string("tensor name")
    n_dims = cur.scalar("<I", f"tensor {name!r}'s dimension count")
    if not 1 <= n_dims <= MAX_DIMS:
        raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (1 to {MAX_DIMS} allowed)")
    dims = [cur.scalar("<Q", f"tensor {name!r}'s dimensions") for _ in range(n_dims)]
    type_id = cur.scalar("<I", f"tensor {name!r}'s type")
    offset = cur.scalar("<Q", f"tensor {name!r}'s offset")
    return name, dims, type_id, offset


def _check_extents(
    cur: _Cursor,
    infos: List[Tuple[str, List[int], int, int]],
    data_offset: int,
    size: int,
    alignment: int,
) -> Dict[str, TensorInfo]:
    tensors: Dict[str, TensorInfo] = {}
    limit = 2**63 - 1
    for name, dims, type_id, offset in infos:
        ggml = GGML_TYPES.get(type_id)
        if ggml is None:
            raise cur.fail(f"tensor {name!r} has unknown GGML type {type_id}")
        if name in tensors:
            raise cur.fail(f"tensor {name!r} appears twice")
        count = 1
        for dim in dims:
            count *= dim
            if count > limit:
                raise cur.fail(f"tensor {name!r}'s dimensions {dims} overflow a 64-bit count")
        if dims[0] % ggml.block:
            raise cur.fail(
                f"tensor {name!r}'s rows of {dims[0]} are not whole {ggml.name} blocks of "
                f"{ggml.block}"
            )
        nbytes = count // ggml.block * ggml.size
        if offset % alignment:
            raise cur.fail(f"tensor {name!r}'s offset {offset} is not a multiple of {alignment}")
        if data_offset + offset + nbytes > size:
            raise cur.fail(
                f"truncated: tensor {name!r} ({nbytes} bytes at data offset {offset}) ends past "
                f"the end of file ({size} bytes)"
            )
        tensors[name] = TensorInfo(name, tuple(reversed(dims)), ggml.name, offset, nbytes)
    previous: Optional[TensorInfo] = None
    for info in sorted(tensors.values(), key=lambda t: t.offset):
        if previous is not None and info.offset < previous.offset + previous.nbytes:
            raise cur.fail(f"tensors {previous.name!r} and {info.name!r} overlap")
        previous = info
    return tensors
