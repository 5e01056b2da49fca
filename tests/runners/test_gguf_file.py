"""runners/protocol/gguf.py against files the real `gguf` package writes (every metadata type and
every dequantized tensor type, checked against gguf.quants), and against malformed files: each
is one GgufError line naming the file, read without a large allocation."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from edgebench.runners.protocol.gguf import GGML_TYPES, GgufError, read_gguf

RNG = np.random.default_rng(7)
#: Tensors of every dequantized type: (numpy values written, GGML type).
TENSORS = {
    "f32": (RNG.standard_normal((3, 5)).astype(np.float32), Q.F32),
    "f16": (RNG.standard_normal((2, 3, 4)).astype(np.float32), Q.F16),
    "bf16": (RNG.standard_normal((4, 8)).astype(np.float32), Q.BF16),
    "q8_0": (RNG.standard_normal((6, 64)).astype(np.float32), Q.Q8_0),
    "q4_0": (RNG.standard_normal((2, 3, 96)).astype(np.float32), Q.Q4_0),
}
METADATA = {
    "general.architecture": "qwen2",
    "t.u8": (200, "add_uint8"),
    "t.i8": (-100, "add_int8"),
    "t.u16": (60000, "add_uint16"),
    "t.i16": (-30000, "add_int16"),
    "t.u32": (4_000_000_000, "add_uint32"),
    "t.i32": (-2_000_000_000, "add_int32"),
    "t.f32": (1.5, "add_float32"),
    "t.u64": (2**63 + 5, "add_uint64"),
    "t.i64": (-(2**62), "add_int64"),
    "t.f64": (0.1, "add_float64"),
    "t.bool": (True, "add_bool"),
    "t.str": ("héllo ✓", "add_string"),
    "t.ints": ([3, -1, 7], "add_array"),
    "t.floats": ([0.5, 2.25], "add_array"),
    "t.strs": (["a", "", "ü"], "add_array"),
    "t.nested": ([[1, 2], [3]], "add_array"),
}


def write_file(path: Path, alignment: int | None = None) -> Path:
    writer = gguf.GGUFWriter(path, "qwen2")
    if alignment:
        writer.add_custom_alignment(alignment)
    for key, entry in METADATA.items():
        if isinstance(entry, tuple):
            getattr(writer, entry[1])(key, entry[0])
    for name, (values, qtype) in TENSORS.items():
        if qtype == Q.F32:
            writer.add_tensor(name, values)
        elif qtype == Q.F16:
            writer.add_tensor(name, values.astype(np.float16))
        else:
            writer.add_tensor(name, gguf.quants.quantize(values, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    return write_file(tmp_path_factory.mktemp("gguf") / "model.gguf")


def test_metadata_reads_back_as_written(written):
    meta = read_gguf(written).metadata
    for key, entry in METADATA.items():
        want = entry[0] if isinstance(entry, tuple) else entry
        if isinstance(want, float):
            assert meta[key] == pytest.approx(want, rel=1e-7), key
        else:
            assert meta[key] == want and type(meta[key]) is type(want), key


def test_every_type_dequantizes_to_what_gguf_itself_reads(written):
    g = read_gguf(written)
    assert g.version == 3 and g.data_offset % 32 == 0
    for name, (values, qtype) in TENSORS.items():
        info = g.tensors[name]
        assert info.shape == values.shape and info.ggml_type == qtype.name
        got = g.tensor(name)
        assert got.dtype == np.float32 and got.shape == values.shape
        if qtype == Q.F32:
            np.testing.assert_array_equal(got, values)
        elif qtype == Q.F16:
            np.testing.assert_array_equal(got, values.astype(np.float16).astype(np.float32))
        else:
            theirs = gguf.quants.dequantize(gguf.quants.quantize(values, qtype), qtype)
            np.testing.assert_array_equal(got, theirs.reshape(values.shape))
            # And near the values written, by the quantization's own error.
            bound = {Q.BF16: 0.01, Q.Q8_0: 0.01, Q.Q4_0: 0.15}[qtype]
            assert np.linalg.norm(got - values) <= bound * np.linalg.norm(values), name


def test_a_custom_alignment_and_version_2_are_read(tmp_path):
    path = write_file(tmp_path / "a64.gguf", alignment=64)
    data = bytearray(path.read_bytes())
    data[4:8] = struct.pack("<I", 2)  # v2 and v3 differ only in endianness support
    path.write_bytes(bytes(data))
    g = read_gguf(path)
    assert g.version == 2 and g.alignment == 64 and g.data_offset % 64 == 0
    assert all(t.offset % 64 == 0 for t in g.tensors.values())
    np.testing.assert_array_equal(g.tensor("f32"), TENSORS["f32"][0])


def test_the_block_table_is_ggmls():
    for qtype, (block, size) in gguf.GGML_QUANT_SIZES.items():
        # gguf-py 0.19 gives Q8_1 float scales (40 bytes); ggml-common.h asserts two halves
        # and 32 quants (36). No file stores Q8_1: it is a dot-product intermediate.
        want = (qtype.name, block, 36 if qtype == Q.Q8_1 else size)
        assert GGML_TYPES[qtype.value] == want
    # ggml.h's Q2_0 (64 2-bit quants and a half scale) is newer than gguf-py 0.19.
    assert set(GGML_TYPES) == {q.value for q in gguf.GGML_QUANT_SIZES} | {42}


# --- malformed files ------------------------------------------------------------------------


def kv_string(key: str, value: str) -> bytes:
    raw = value.encode()
    return s(key) + struct.pack("<I", 8) + struct.pack("<Q", len(raw)) + raw


def s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def tensor_info(name: str, dims: list[int], type_id: int, offset: int) -> bytes:
    head = s(name) + struct.pack("<I", len(dims))
    return head + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", type_id, offset)


def gguf_bytes(
    kvs: Sequence[bytes] = (),
    infos: Sequence[bytes] = (),
    data: bytes = b"",
    *,
    n_kv: int | None = None,
    n_tensors: int | None = None,
    version: int = 3,
) -> bytes:
    body = b"GGUF" + struct.pack("<I", version)
    body += struct.pack("<QQ", len(infos) if n_tensors is None else n_tensors, len(kvs))
    if n_kv is not None:
        body = body[:-8] + struct.pack("<Q", n_kv)
    body += b"".join(kvs) + b"".join(infos)
    return body + b"\0" * (-len(body) % 32) + data


ONE_F32 = tensor_info("w", [4, 2], 0, 0)
HOSTILE = {
    "empty": (b"", "not a GGUF file"),
    "not gguf": (b"PK\x03\x04" + b"\0" * 40, "not a GGUF file"),
    "version 1": (gguf_bytes(version=1), "version 1"),
    "big-endian": (gguf_bytes(version=3 << 24), "big-endian"),
    "kv count 2**60": (gguf_bytes(n_kv=2**60), "metadata count"),
    "tensor count 2**60": (gguf_bytes(n_tensors=2**60), "tensor count"),
    "string length 2**60": (
        gguf_bytes([s("k") + struct.pack("<IQ", 8, 2**60)]),
        "claims 1152921504606846976 bytes",
    ),
    "array count 2**60": (
        gguf_bytes([s("k") + struct.pack("<IIQ", 9, 4, 2**60)]),
        "length",
    ),
    "string array count 2**60": (
        gguf_bytes([s("k") + struct.pack("<IIQ", 9, 8, 2**60)]),
        "length",
    ),
    "unknown value type": (gguf_bytes([s("k") + struct.pack("<II", 13, 0)]), "value type 13"),
    "unknown array type": (gguf_bytes([s("k") + struct.pack("<IIQ", 9, 77, 1)]), "type 77"),
    "duplicate key": (gguf_bytes([kv_string("k", "a"), kv_string("k", "b")]), "twice"),
    "alignment 3": (
        gguf_bytes([s("general.alignment") + struct.pack("<II", 4, 3)]),
        "not a power of two",
    ),
    "unknown tensor type": (gguf_bytes([], [tensor_info("w", [4], 99, 0)], b"\0" * 64), "99"),
    "tensor past the end": (gguf_bytes([], [ONE_F32], b"\0" * 31), "past the end"),
    "misaligned offset": (gguf_bytes([], [tensor_info("w", [4], 0, 4)], b"\0" * 64), "multiple"),
    "overlap": (
        gguf_bytes([], [ONE_F32, tensor_info("v", [2], 0, 0)], b"\0" * 64),
        "overlap",
    ),
    "dims overflow": (
        gguf_bytes([], [tensor_info("w", [2**32, 2**32], 0, 0)], b"\0" * 64),
        "overflow",
    ),
    "zero dims": (gguf_bytes([], [tensor_info("w", [], 0, 0)], b"\0" * 64), "0 dimensions"),
    "five dims": (gguf_bytes([], [tensor_info("w", [1] * 5, 0, 0)], b"\0" * 64), "5 dimensions"),
    "partial block": (gguf_bytes([], [tensor_info("w", [33], 8, 0)], b"\0" * 64), "blocks"),
    "duplicate tensor": (
        gguf_bytes([], [ONE_F32, tensor_info("w", [2], 0, 32)], b"\0" * 64),
        "twice",
    ),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_malformed_file_is_one_line_without_a_large_allocation(tmp_path, case):
    content, words = HOSTILE[case]
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    tracemalloc.start()
    try:
        with pytest.raises(GgufError) as exc:
            read_gguf(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{path}: ") and words in text, text
    assert peak < 1 << 20, peak


def test_every_cut_of_a_file_before_its_last_tensor_ends_is_refused(written, tmp_path):
    whole = written.read_bytes()
    g = read_gguf(written)
    end = g.data_offset + max(t.offset + t.nbytes for t in g.tensors.values())
    cut = tmp_path / "cut.gguf"
    for length in sorted({*range(0, g.data_offset, 7), g.data_offset, end - 1}):
        cut.write_bytes(whole[:length])
        with pytest.raises(GgufError, match=r"truncated|not a GGUF|more than") as exc:
            read_gguf(cut)
        assert "\n" not in str(exc.value)


def test_a_tensor_cut_off_after_the_header_was_read(written, tmp_path):
    path = tmp_path / "shrunk.gguf"
    path.write_bytes(written.read_bytes())
    g = read_gguf(path)
    last = max(g.tensors.values(), key=lambda t: t.offset)
    with open(path, "r+b") as handle:
        handle.truncate(g.data_offset + last.offset + 1)
    with pytest.raises(GgufError, match=f"truncated: tensor '{last.name}'"):
        g.tensor(last.name)


def test_a_type_it_does_not_dequantize_and_a_missing_file_are_one_line(tmp_path):
    writer = gguf.GGUFWriter(tmp_path / "k.gguf", "llama")
    writer.add_tensor("k", np.zeros((1, 144), np.uint8), raw_dtype=Q.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    g = read_gguf(tmp_path / "k.gguf")
    assert g.tensors["k"].shape == (1, 256) and g.tensors["k"].nbytes == 144
    with pytest.raises(GgufError, match="is Q4_K, which this reader does not dequantize"):
        g.tensor("k")
    with pytest.raises(GgufError, match="no tensor 'x'"):
        g.tensor("x")
    with pytest.raises(GgufError, match="cannot read"):
        read_gguf(tmp_path / "absent.gguf")
