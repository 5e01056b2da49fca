"""Full-integer int8 quantization of the writer's fp32 .tflite, from calibrated ranges.

Weights are symmetric int8 with one scale per output channel, biases int32 at input scale times
weight scale, activations per-tensor asymmetric int8 from the calibrated [min, max] (widened to
hold 0). Ops the tables below know run in int8 when they are connected, through int8 tensors, to
a conv or fully connected op; every other op keeps its float kernel between a DEQUANTIZE and a
QUANTIZE (an "fp32 fallback"). The model's inputs and outputs stay float32: a
QUANTIZE follows each input and a DEQUANTIZE feeds each output, so tensor indices, names and
the signature of the fp32 file still hold.

The output parameters follow TFLite's int8 kernel rules (its "8-bit quantization spec"): ops
that move or pick values reuse their input's parameters, CONCATENATION/MAXIMUM/MINIMUM requantize
inputs to the output's, and LOGISTIC, SOFTMAX, TANH and LOG_SOFTMAX have fixed ones.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .calibrate import Range, tensor_ranges
from .convert import Converted
from .model_builder import FILE_IDENTIFIER
from .ops_conv import LOWEST_FLOAT
from .schema import load_schema

#: Part of the int8 artifacts' cache key: bump when the int8 bytes change.
QUANTIZER_VERSION = "edgebench-tflite-int8-1"
METHOD = (
    "edgebench-tflite minmax (per-channel symmetric int8 weights, "
    "per-tensor asymmetric int8 activations)"
)
GRANULARITY = "per-channel"


@dataclass(frozen=True)
class QParams:
    scale: float
    zero_point: int


# op -> (filter input, bias input, the filter's output-channel axis); the data input is the
# other float input.
WEIGHTED = {
    "CONV_2D": (1, 2, 0),
    "DEPTHWISE_CONV_2D": (1, 2, 3),
    "FULLY_CONNECTED": (1, 2, 0),
    "TRANSPOSE_CONV": (1, 3, 0),
}
# Output parameters from the output's own calibrated range.
# (Not SUM: LiteRT 2.3's int8 SUM gives sums several steps off, with and without XNNPACK.)
FREE = {"ADD", "SUB", "MUL", "MEAN", "HARD_SWISH", "RELU", "RELU6", "RELU_N1_TO_1"}
FREE |= {"LEAKY_RELU", "PRELU", "ELU", "GELU"}
# Kernels that copy, pick or average stored values: output parameters = input parameters.
SAME = {"RESHAPE", "SQUEEZE", "TRANSPOSE", "GATHER", "SLICE", "STRIDED_SLICE", "SPLIT"}
SAME |= {"SPLIT_V", "PAD", "PADV2", "MIRROR_PAD", "MAX_POOL_2D", "AVERAGE_POOL_2D"}
SAME |= {"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "REDUCE_MAX", "REDUCE_MIN"}
# Several inputs that must share the output's parameters.
JOINED = {"CONCATENATION", "MAXIMUM", "MINIMUM"}
FIXED = {
    "LOGISTIC": QParams(1 / 256, -128),
    "SOFTMAX": QParams(1 / 256, -128),
    "TANH": QParams(1 / 128, 0),
    "LOG_SOFTMAX": QParams(16 / 256, 127),
}
# The lowest operator version whose kernel takes int8 (TFLite's op_version.cc): 2 unless listed.
_WEIGHTED_VERSION = {
    "CONV_2D": 3,
    "DEPTHWISE_CONV_2D": 3,
    "FULLY_CONNECTED": 4,
    "TRANSPOSE_CONV": 3,
}
_VERSION_ONE = {"RESHAPE", "SQUEEZE", "HARD_SWISH", "LEAKY_RELU", "PRELU", "ELU", "RELU_N1_TO_1"}
_MIN_WIDTH = 1e-6  # a calibrated range narrower than this (a constant tensor) is widened
_BIAS_LIMIT = float(2**30)  # |int32 bias| kept below this, with room for the accumulator


@dataclass(frozen=True)
class Quantized:
    converted: Converted
    #: Op types left in float32 between DEQUANTIZE and QUANTIZE, sorted, each once.
    fallback_ops: list[str]


def quantize_int8(converted: Converted, arrays: dict[str, np.ndarray]) -> Quantized:
    """The int8 version of an fp32 conversion, calibrated on ``arrays`` (ONNX input name ->
    [N, *input shape]); ConversionError ("failed") for a calibration set that does not fit."""
    schema = load_schema()
    model = schema.ModelT.InitFromPackedBuf(converted.flatbuffer, 0)
    graph = _Graph(schema, model)
    ranges = tensor_ranges(
        converted.flatbuffer, converted.inputs, arrays, graph.float_activations()
    )
    fallbacks = _Rewrite(graph, ranges).run()
    graph.compact()
    data = graph.pack()
    counts: dict[str, int] = {}
    for op in graph.sub.operators:
        counts[graph.code(op)] = counts.get(graph.code(op), 0) + 1
    return Quantized(replace(converted, flatbuffer=data, op_counts=counts), fallbacks)


def activation_params(low: float, high: float) -> QParams:
    """Asymmetric int8 parameters for values in [low, high], which are widened to hold 0."""
    low, high = min(low, 0.0), max(high, 0.0)
    scale = float(np.float32(max(high - low, _MIN_WIDTH) / 255.0))
    zero_point = int(np.clip(np.round(-128 - low / scale), -128, 127))
    return QParams(scale, zero_point)


def quantize_values(values: np.ndarray, params: QParams) -> np.ndarray:
    scaled = np.round(np.asarray(values, np.float64) / params.scale) + params.zero_point
    return np.clip(scaled, -128, 127).astype(np.int8)


def per_channel(
    weight: np.ndarray, axis: int, bias: np.ndarray | None, input_scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Symmetric int8 weights with one scale per slice of ``axis`` and the int32 bias at
    input_scale * weight scale: (weights, weight scales, bias, bias scales)."""
    channels = weight.shape[axis]
    absmax = np.abs(np.moveaxis(weight, axis, 0).reshape(channels, -1)).max(axis=1)
    scales = absmax.astype(np.float64) / 127.0
    used = scales > 0
    # An all-zero channel takes a typical scale, so its bias keeps the others' precision.
    scales[~used] = float(np.median(scales[used])) if used.any() else 1.0
    if bias is not None:
        # Raise a channel's scale where its bias would not fit the int32 range.
        scales = np.maximum(scales, np.abs(bias) / (input_scale * _BIAS_LIMIT))
    scales = scales.astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = channels
    q_weight = np.clip(np.round(weight / scales.reshape(shape)), -127, 127).astype(np.int8)
    bias_scales = (np.float64(input_scale) * scales.astype(np.float64)).astype(np.float32)
    if bias is None:
        return q_weight, scales, None, bias_scales
    q_bias = np.round(np.asarray(bias, np.float64) / bias_scales.astype(np.float64))
    return q_weight, scales, q_bias.astype(np.int32), bias_scales


class _Graph:
    """The unpacked model (schema object API): reading ops and tensors, adding new ones,
    dropping what nothing uses, packing."""

    def __init__(self, schema: Any, model: Any) -> None:
        self.schema = schema
        self.model = model
        self.sub = model.subgraphs[0]
        self._names = {
            v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")
        }
        self.sub.inputs = [int(i) for i in self.sub.inputs]
        self.sub.outputs = [int(i) for i in self.sub.outputs]
        for op in self.sub.operators:
            op.inputs = [int(i) for i in op.inputs]
            op.outputs = [int(i) for i in op.outputs]
        for tensor in self.sub.tensors:  # the object API reads names as bytes
            if isinstance(tensor.name, bytes):
                tensor.name = tensor.name.decode()
        self._taken = {t.name for t in self.sub.tensors}

    def code(self, op: Any) -> str:
        record = self.model.operatorCodes[op.opcodeIndex]
        return self._names[max(record.builtinCode, record.deprecatedBuiltinCode)]

    def version(self, op: Any) -> int:
        return int(self.model.operatorCodes[op.opcodeIndex].version)

    def set_code(self, op: Any, code: str, version: int) -> None:
        number = getattr(self.schema.BuiltinOperator, code)
        for index, record in enumerate(self.model.operatorCodes):
            if max(record.builtinCode, record.deprecatedBuiltinCode) == number and (
                record.version == version
            ):
                op.opcodeIndex = index
                return
        record = self.schema.OperatorCodeT()
        record.builtinCode = number
        record.deprecatedBuiltinCode = min(number, 127)
        record.version = version
        self.model.operatorCodes.append(record)
        op.opcodeIndex = len(self.model.operatorCodes) - 1

    def new_op(self, code: str, inputs: list[int], outputs: list[int], version: int = 1) -> Any:
        op = self.schema.OperatorT()
        op.inputs, op.outputs = list(inputs), list(outputs)
        self.set_code(op, code, version)
        return op

    def is_float(self, index: int) -> bool:
        return self.sub.tensors[index].type == self.schema.TensorType.FLOAT32

    def has_data(self, index: int) -> bool:
        tensor = self.sub.tensors[index]
        data = self.model.buffers[tensor.buffer].data if tensor.buffer else None
        return data is not None and len(data) > 0

    def constant(self, index: int) -> np.ndarray:
        """The data of a float32 constant tensor."""
        tensor = self.sub.tensors[index]
        raw = np.asarray(self.model.buffers[tensor.buffer].data, np.uint8).tobytes()
        return np.frombuffer(raw, np.float32).reshape([int(d) for d in tensor.shape])

    def float_activations(self) -> list[int]:
        count = len(self.sub.tensors)
        return [i for i in range(count) if self.is_float(i) and not self.has_data(i)]

    def new_tensor(
        self,
        like: int,
        suffix: str,
        type_name: str,
        params: QParams | None = None,
        data: np.ndarray | None = None,
    ) -> int:
        source = self.sub.tensors[like]
        tensor = self.schema.TensorT()
        name, n = f"{source.name}_{suffix}", 1
        while name in self._taken:
            name, n = f"{source.name}_{suffix}_{n}", n + 1
        self._taken.add(name)
        tensor.name = name
        tensor.shape = [int(d) for d in (source.shape if data is None else data.shape)]
        tensor.type = getattr(self.schema.TensorType, type_name)
        tensor.buffer = 0
        if data is not None:
            buffer = self.schema.BufferT()
            buffer.data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            self.model.buffers.append(buffer)
            tensor.buffer = len(self.model.buffers) - 1
        if params is not None:
            self.set_params(tensor, [params.scale], [params.zero_point])
        self.sub.tensors.append(tensor)
        return len(self.sub.tensors) - 1

    def set_params(self, tensor: Any, scales: list[float], zero_points: list[int], axis=0) -> None:
        quant = self.schema.QuantizationParametersT()
        quant.scale = [float(s) for s in scales]
        quant.zeroPoint = [int(z) for z in zero_points]
        quant.quantizedDimension = int(axis)
        tensor.quantization = quant

    def to_int8(self, index: int, params: QParams) -> None:
        tensor = self.sub.tensors[index]
        tensor.type = self.schema.TensorType.INT8
        self.set_params(tensor, [params.scale], [params.zero_point])

    def compact(self) -> None:
        """Drop tensors, buffers and operator codes that nothing uses any more."""
        sub, model = self.sub, self.model
        used = {i for op in sub.operators for i in (*op.inputs, *op.outputs) if i >= 0}
        kept = sorted(used | set(sub.inputs) | set(sub.outputs))
        remap = {old: new for new, old in enumerate(kept)}
        sub.tensors = [sub.tensors[i] for i in kept]
        for op in sub.operators:
            op.inputs = [remap[i] if i >= 0 else -1 for i in op.inputs]
            op.outputs = [remap[i] for i in op.outputs]
        sub.inputs = [remap[i] for i in sub.inputs]
        sub.outputs = [remap[i] for i in sub.outputs]
        for signature in model.signatureDefs or []:
            for entry in (*signature.inputs, *signature.outputs):
                entry.tensorIndex = remap[entry.tensorIndex]
        buffers = sorted({t.buffer for t in sub.tensors} | {0})
        buffer_index = {old: new for new, old in enumerate(buffers)}
        model.buffers = [model.buffers[b] for b in buffers]
        for tensor in sub.tensors:
            tensor.buffer = buffer_index[tensor.buffer]
        codes = sorted({op.opcodeIndex for op in sub.operators})
        code_index = {old: new for new, old in enumerate(codes)}
        model.operatorCodes = [model.operatorCodes[c] for c in codes]
        for op in sub.operators:
            op.opcodeIndex = code_index[op.opcodeIndex]

    def pack(self) -> bytes:
        import flatbuffers

        size = sum(len(b.data) for b in self.model.buffers if b.data is not None)
        builder = flatbuffers.Builder(size + (1 << 20))
        builder.Finish(self.model.Pack(builder), file_identifier=FILE_IDENTIFIER)
        return bytes(builder.Output())


class _Rewrite:
    """Chooses the ops that run in int8, gives every int8 tensor its parameters and rebuilds
    the operator list with the QUANTIZE and DEQUANTIZE ops between float and int8."""

    def __init__(self, graph: _Graph, ranges: dict[int, Range]) -> None:
        self.g = graph
        self.ranges = dict(ranges)
        self.ops = list(graph.sub.operators)
        self.codes = [graph.code(op) for op in self.ops]
        self.activations = set(graph.float_activations())
        self.outputs = set(graph.sub.outputs)
        self.readers: dict[int, list[int]] = defaultdict(list)
        for index, op in enumerate(self.ops):
            for tensor in set(op.inputs):
                if tensor >= 0:
                    self.readers[tensor].append(index)
        self.in_int8 = [self._can_quantize(i) for i in range(len(self.ops))]
        self._keep_weightless_groups_float()
        self.params: dict[int, QParams] = {}  # int8 tensor -> its parameters
        self.int8_of: dict[int, int] = {}  # float activation -> its int8 tensor
        self.float_of: dict[int, int] = {}  # int8 activation -> its float tensor
        self._constants: dict[tuple[int, QParams | None], int] = {}
        self._requantized: dict[tuple[int, QParams], int] = {}
        self._share_joined_ranges()

    # --- which ops run in int8 -----------------------------------------------------------
    def _can_quantize(self, index: int) -> bool:
        op, code = self.ops[index], self.codes[index]
        if code not in WEIGHTED and code not in FREE | SAME | JOINED | set(FIXED):
            return False
        if not op.outputs or any(t not in self.ranges for t in op.outputs):
            return False
        floats = [p for p, t in enumerate(op.inputs) if t >= 0 and self.g.is_float(t)]
        data = [p for p in floats if op.inputs[p] in self.activations]
        if any(op.inputs[p] not in self.ranges for p in data) or not data:
            return False
        constants = [p for p in floats if p not in data]
        if code in WEIGHTED:
            filt, bias, _ = WEIGHTED[code]
            return len(data) == 1 and set(constants) <= {filt, bias} and filt in constants
        if code in SAME or code in FIXED:
            if len(data) != 1:
                return False
            if code == "PADV2" and constants:
                return self._fill_fits(op, constants)
            return not constants
        return True

    def _keep_weightless_groups_float(self) -> None:
        """Ops that could run in int8 but form a connected group with no conv or fully
        connected op (e.g. SOFTMAX between two float BATCH_MATMULs) stay float: between float
        ops they would only add a QUANTIZE, a DEQUANTIZE and rounding error."""
        group = list(range(len(self.ops)))

        def root(i: int) -> int:
            while group[i] != i:
                group[i] = group[group[i]]
                i = group[i]
            return i

        producer = {t: i for i, op in enumerate(self.ops) for t in op.outputs}
        for index, op in enumerate(self.ops):
            for tensor in op.inputs:
                source = producer.get(tensor)
                if source is not None and self.in_int8[index] and self.in_int8[source]:
                    group[root(index)] = root(source)
        weighted = {root(i) for i, c in enumerate(self.codes) if self.in_int8[i] and c in WEIGHTED}
        self.in_int8 = [q and root(i) in weighted for i, q in enumerate(self.in_int8)]

    def _fill_fits(self, op: Any, constants: list[int]) -> bool:
        """A PADV2 fill must be representable with its input's parameters: inside the input's
        range, or the lowest float that pads a max pool (it saturates to -128)."""
        fill = float(self.g.constant(op.inputs[constants[0]]).reshape(-1)[0])
        low, high = self.ranges[op.inputs[0]]
        return fill == LOWEST_FLOAT or min(low, 0.0) <= fill <= max(high, 0.0)

    def _share_joined_ranges(self) -> None:
        """An int8 input of a CONCATENATION, MAXIMUM or MINIMUM that only that op reads, made
        by an op whose output parameters are free, gets the joined output's range so that no
        requantizing QUANTIZE is needed."""
        producer = {t: i for i, op in enumerate(self.ops) for t in op.outputs}
        for index, op in enumerate(self.ops):
            if not self.in_int8[index] or self.codes[index] not in JOINED:
                continue
            for tensor in op.inputs:
                source = producer.get(tensor)
                if (
                    source is not None
                    and self.in_int8[source]
                    and (self.codes[source] in FREE or self.codes[source] in WEIGHTED)
                    and self.readers[tensor] == [index]
                    and tensor not in self.outputs
                ):
                    self.ranges[tensor] = self.ranges[op.outputs[0]]

    # --- the new operator list -------------------------------------------------------------
    def run(self) -> list[str]:
        emitted: list[Any] = []
        for tensor in self.g.sub.inputs:
            if tensor in self.activations:
                self._quantize_float(tensor, emitted)
        fallbacks = set()
        for index, op in enumerate(self.ops):
            if self.in_int8[index]:
                self._emit_int8(index, op, emitted)
                continue
            touches = [t for t in (*op.inputs, *op.outputs) if t in self.activations]
            if touches:
                fallbacks.add(self.codes[index])
            op.inputs = [self.float_of.get(t, t) if t >= 0 else t for t in op.inputs]
            emitted.append(op)
            for tensor in op.outputs:
                if tensor in self.activations:
                    self._quantize_float(tensor, emitted)
        self.g.sub.operators = emitted
        return sorted(fallbacks)

    def _quantize_float(self, tensor: int, emitted: list[Any]) -> None:
        """A QUANTIZE after a float activation that an int8 op reads."""
        if not any(self.in_int8[r] for r in self.readers[tensor]):
            return
        params = activation_params(*self.ranges[tensor])
        int8 = self.g.new_tensor(tensor, "int8", "INT8", params)
        self.params[int8] = params
        self.int8_of[tensor] = int8
        emitted.append(self.g.new_op("QUANTIZE", [tensor], [int8]))

    def _emit_int8(self, index: int, op: Any, emitted: list[Any]) -> None:
        code = self.codes[index]
        inputs = list(op.inputs)
        data = [p for p, t in enumerate(inputs) if t in self.activations]
        for p in data:
            inputs[p] = self.int8_of[inputs[p]]
        first = self.params[inputs[data[0]]]
        if code in FIXED:
            out = FIXED[code]
        elif code in SAME:
            out = first
        else:
            out = activation_params(*self.ranges[op.outputs[0]])
        version = _WEIGHTED_VERSION.get(code, 1 if code in _VERSION_ONE else 2)
        if code in WEIGHTED:
            self._weights(code, inputs, first.scale)
        else:
            for p, tensor in enumerate(inputs):
                if tensor >= 0 and p not in data and self.g.is_float(tensor):
                    # SAME/JOINED constants take the output's parameters, others their own.
                    own = None if code in FREE else out
                    inputs[p] = self._int8_constant(tensor, own)
        if code in JOINED:
            for p in data:
                if self.params[inputs[p]] != out:
                    inputs[p] = self._requantize(inputs[p], out, emitted)
        if code == "MUL":
            scales = [self.params[t].scale for t in inputs[:2]]
            version = 3 if scales[0] * scales[1] / out.scale >= 1 else 2
        op.inputs = inputs
        self.g.set_code(op, code, max(self.g.version(op), version))
        emitted.append(op)
        after = []
        for position, tensor in enumerate(op.outputs):
            if tensor in self.outputs:
                int8 = self.g.new_tensor(tensor, "int8", "INT8", out)
                op.outputs[position] = int8
                after.append(self.g.new_op("DEQUANTIZE", [int8], [tensor], 2))
                self.float_of[tensor] = tensor
            else:
                int8 = tensor
                self.g.to_int8(tensor, out)
                if any(not self.in_int8[r] for r in self.readers[tensor]):
                    back = self.g.new_tensor(tensor, "float", "FLOAT32")
                    after.append(self.g.new_op("DEQUANTIZE", [tensor], [back], 2))
                    self.float_of[tensor] = back
            self.int8_of[tensor] = int8
            self.params[int8] = out
        emitted.extend(after)

    def _weights(self, code: str, inputs: list[int], input_scale: float) -> None:
        """Per-channel int8 filter and int32 bias for a conv or fully connected op."""
        filt, bias_at, axis = WEIGHTED[code]
        weight = self.g.constant(inputs[filt])
        bias_index = inputs[bias_at] if bias_at < len(inputs) else -1
        bias = self.g.constant(bias_index) if bias_index >= 0 else None
        q_weight, scales, q_bias, bias_scales = per_channel(weight, axis, bias, input_scale)
        channels = len(scales)
        new_filter = self.g.new_tensor(inputs[filt], "int8", "INT8", data=q_weight)
        self.g.set_params(self.g.sub.tensors[new_filter], scales.tolist(), [0] * channels, axis)
        inputs[filt] = new_filter
        if q_bias is not None:
            new_bias = self.g.new_tensor(bias_index, "int32", "INT32", data=q_bias)
            self.g.set_params(self.g.sub.tensors[new_bias], bias_scales.tolist(), [0] * channels)
            inputs[bias_at] = new_bias

    def _int8_constant(self, tensor: int, params: QParams | None) -> int:
        """A float constant in int8: with the given parameters, or (None) its own range."""
        key = (tensor, params)
        if key not in self._constants:
            values = self.g.constant(tensor)
            own = params or activation_params(float(values.min()), float(values.max()))
            data = quantize_values(values, own)
            self._constants[key] = self.g.new_tensor(tensor, "int8", "INT8", own, data)
            self.params[self._constants[key]] = own
        return self._constants[key]

    def _requantize(self, tensor: int, params: QParams, emitted: list[Any]) -> int:
        key = (tensor, params)
        if key not in self._requantized:
            out = self.g.new_tensor(tensor, "requantized", "INT8", params)
            self.params[out] = params
            emitted.append(self.g.new_op("QUANTIZE", [tensor], [out]))
            self._requantized[key] = out
        return self._requantized[key]
