"""The precision a model file holds, read from the file itself: the one place that says
whether an artifact is quantized, whatever precision was asked for.

Per format, what counts:

- ONNX: QuantizeLinear, DequantizeLinear, QLinear*, ConvInteger, MatMulInteger or
  DynamicQuantizeLinear nodes, and int8/uint8 initializers (int8; only DequantizeLinear of
  int8 weights: int8-weights); float16 initializers or inputs: fp16.
- .tflite: computed int8/uint8/int16 tensors with quantization parameters (int8); quantized
  constants read by DEQUANTIZE or by hybrid ops only (int8-weights); float16 constants behind
  DEQUANTIZE (fp16, the way TFLite marks fp16 weights); else fp32.
- MNN: a tensor described as DT_INT8 (calibrated activations, ``mnnquant`` or a quantized
  .tflite) is int8; convolution weights stored as int8 (``IDSTQuan`` type 1) without them are
  int8-weights. MNN.fbs field slots as MNN 3.x writes them.
- OpenVINO IR: FakeQuantize layers (int8); i8/u8 constants without them (int8-weights).
- ncnn: layers with ``int8_scale_term`` or ``quantize_term`` (``runners/backends/ncnn_param``).
- TNN: layer types prefixed ``Quantized``.

``precision`` None means a float file whose fp32 or fp16 the run decides (MNN's session
precision, OpenVINO's inference hint, ncnn's fp16 switches, TensorRT's builder flags); half
weights stored in such a file are a storage choice, as in every OpenVINO IR by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

QUANTIZED = ("int8", "int8-weights")
#: The precisions a float file runs at, as the run decides (the first when it asked for a
#: quantized one).
FLOAT = ("fp32", "fp16")


@dataclass(frozen=True)
class FilePrecision:
    """What a model file holds: ``precision`` (None: float, the run decides fp32 or fp16) and
    ``evidence``, a phrase that says how it shows (``"FakeQuantize layers"``)."""

    precision: str | None
    evidence: str

    @property
    def quantized(self) -> bool:
        return self.precision in QUANTIZED


FLOAT_FILE = FilePrecision(None, "no quantized tensors")


def ran_precision(requested: str, found: FilePrecision) -> str:
    """The precision a cell that asked for ``requested`` computes at with this file."""
    if found.precision is not None:
        return found.precision
    return FLOAT[0] if requested in QUANTIZED else requested


def allowed_precisions(found: FilePrecision) -> tuple[str, ...]:
    """The precisions a cell running this file as it is can be measured at."""
    return (found.precision,) if found.precision is not None else FLOAT


def read_precision(path: Path, fmt: str) -> FilePrecision:
    """The precision of the model file ``path`` in format ``fmt`` (a float file when the
    file cannot be read: the framework that loads it says what is wrong)."""
    try:
        stat = path.stat()
    except OSError:
        return FLOAT_FILE
    return _read_cached(str(path), fmt, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=256)
def _read_cached(path: str, fmt: str, size: int, mtime_ns: int) -> FilePrecision:
    reader = _READERS.get("onnx" if fmt.startswith("onnx") else fmt)  # onnx-qdq, onnx-fp16...
    if reader is None:
        return FLOAT_FILE
    try:
        return reader(Path(path))
    except Exception:  # a damaged file: loading it fails the cell with the framework's reason
        return FLOAT_FILE


_ONNX_QUANT_OPS = ("QuantizeLinear", "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear")


def _onnx(path: Path) -> FilePrecision:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    ops = [n.op_type for n in graph.node]
    quant = sorted({op for op in ops if op in _ONNX_QUANT_OPS or op.startswith("QLinear")})
    if quant:
        return FilePrecision("int8", f"{', '.join(quant)} nodes")
    small = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    int8_constants = {t.name for t in graph.initializer if t.data_type in small}
    # Weights: int8 constants that a DequantizeLinear expands. An int8 constant elsewhere (the
    # zero point an int8 input is shifted by) and a DequantizeLinear of an int8 input (an
    # int8 .tflite's twin keeps its int8 io) leave the weights and the compute float.
    dequantized = {n.input[0] for n in graph.node if n.op_type == "DequantizeLinear" and n.input}
    if dequantized & int8_constants:
        return FilePrecision("int8-weights", "int8 weights behind DequantizeLinear")
    half = onnx.TensorProto.FLOAT16
    if any(t.data_type == half for t in graph.initializer) or any(
        i.type.tensor_type.elem_type == half for i in graph.input
    ):
        return FilePrecision("fp16", "float16 tensors")
    return FLOAT_FILE


def _tflite(path: Path) -> FilePrecision:
    from .tflite.model_builder import FILE_IDENTIFIER
    from .tflite.schema import load_schema

    schema = load_schema()
    raw = path.read_bytes()
    if raw[4:8] != FILE_IDENTIFIER:
        return FLOAT_FILE  # not a .tflite: LiteRT says what is wrong with it
    model = schema.Model.GetRootAs(raw, 0)
    names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    op_names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        codes.append(op_names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), ""))
    activations: list[str] = []
    weights: list[str] = []
    half = False
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        readers: dict[int, set[str]] = {}
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            for i in range(op.InputsLength()):
                readers.setdefault(op.Inputs(i), set()).add(codes[op.OpcodeIndex()])
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            kind = names.get(tensor.Type(), "")
            constant = bool(tensor.Buffer()) and model.Buffers(tensor.Buffer()).DataLength() > 0
            if kind == "FLOAT16" and constant and readers.get(t, set()) <= {"DEQUANTIZE"}:
                half = True
            params = tensor.Quantization()
            if kind not in ("INT8", "UINT8", "INT16") or params is None:
                continue
            if params.ScaleLength() == 0:
                continue
            (weights if constant else activations).append(tensor.Name().decode(errors="replace"))
    if activations:
        return FilePrecision("int8", f"{len(activations)} quantized activation tensors")
    if weights:
        return FilePrecision(
            "int8-weights", f"{len(weights)} int8 weight tensors, float activations"
        )
    if half:
        return FilePrecision("fp16", "float16 weights behind DEQUANTIZE")
    return FilePrecision("fp32", "float32 tensors")


# MNN.fbs, as the flatbuffer lays it out: the field slot of each table field read here.
_NET_EXTRA_TENSOR_DESCRIBE, _NET_OPLISTS = 1, 3
_OP_MAIN_TYPE, _OP_MAIN = 1, 2
_CONVOLUTION2D = 9  # OpParameter union member
_CONV_QUAN_PARAMETER = 3
_IDSTQUAN_TYPE = 2
_TENSOR_DESCRIBE_QUANT_INFO = 4
_QUANT_INFO_TYPE = 4
_DT_INT8 = 6


def _mnn(path: Path) -> FilePrecision:
    from flatbuffers import encode
    from flatbuffers import number_types as n
    from flatbuffers.table import Table

    buf = bytearray(path.read_bytes())
    net = Table(buf, encode.Get(n.UOffsetTFlags.packer_type, buf, 0))

    def slot(table: Table, index: int) -> int:
        return table.Offset(4 + 2 * index)

    def child(table: Table, index: int) -> Table | None:
        at = slot(table, index)
        return Table(buf, table.Indirect(table.Pos + at)) if at else None

    def children(table: Table, index: int) -> list[Table]:
        at = slot(table, index)
        if not at:
            return []
        start = table.Vector(at)
        return [Table(buf, table.Indirect(start + 4 * i)) for i in range(table.VectorLen(at))]

    def scalar(table: Table, index: int, flags: type) -> int:
        at = slot(table, index)
        return table.Get(flags, table.Pos + at) if at else 0

    int8_tensors = 0
    for describe in children(net, _NET_EXTRA_TENSOR_DESCRIBE):
        info = child(describe, _TENSOR_DESCRIBE_QUANT_INFO)
        if info is not None and scalar(info, _QUANT_INFO_TYPE, n.Int32Flags) == _DT_INT8:
            int8_tensors += 1
    if int8_tensors:
        return FilePrecision("int8", f"{int8_tensors} tensors quantized to DT_INT8")
    for op in children(net, _NET_OPLISTS):
        if scalar(op, _OP_MAIN_TYPE, n.Uint8Flags) != _CONVOLUTION2D:
            continue
        conv = child(op, _OP_MAIN)
        quan = child(conv, _CONV_QUAN_PARAMETER) if conv is not None else None
        if quan is not None and scalar(quan, _IDSTQUAN_TYPE, n.Int32Flags) == 1:
            return FilePrecision("int8-weights", "convolution weights stored as int8")
    return FLOAT_FILE


def _openvino(path: Path) -> FilePrecision:
    text = path.read_text(errors="replace")
    fake = len(re.findall(r'type="FakeQuantize"', text))
    if fake:
        return FilePrecision("int8", f"{fake} FakeQuantize layers")
    # Constants only: an i8 Parameter is an int8 input (an int8 .tflite's twin), not a weight.
    constants = re.findall(r'<layer [^>]*type="Const"[^>]*>\s*<data [^>]*>', text)
    if any(re.search(r'element_type="(i8|u8)"', data) for data in constants):
        return FilePrecision("int8-weights", "i8/u8 weight constants, no FakeQuantize")
    return FLOAT_FILE


def _ncnn(path: Path) -> FilePrecision:
    from edgebench.runners.protocol.ncnn_param import int8_layers

    layers = int8_layers(str(path))
    if not layers:
        return FLOAT_FILE
    more = f" and {len(layers) - 1} more" if len(layers) > 1 else ""
    return FilePrecision("int8", f"{layers[0]}{more} with int8_scale_term: int8 weights")


def _tnn(path: Path) -> FilePrecision:
    layers = re.findall(r'^"(Quantized\w+) ', path.read_text(errors="replace"), re.MULTILINE)
    if layers:
        return FilePrecision("int8", f"{len(layers)} Quantized layers ({layers[0]} first)")
    return FLOAT_FILE


_READERS = {
    "onnx": _onnx,
    "tflite": _tflite,
    "mnn": _mnn,
    "openvino": _openvino,
    "ncnn": _ncnn,
    "tnn": _tnn,
}
