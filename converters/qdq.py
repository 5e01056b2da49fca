"""ONNX -> ONNX with QuantizeLinear/DequantizeLinear pairs (QDQ), by ONNX Runtime's static
quantizer, calibrated on edgebench's calibration set.

ONNX Runtime runs the QDQ model with its int8 kernels (QLinearConv, QGemm after fusion), and
OpenVINO reads the same QDQ model natively (docs/quantization.md says why edgebench does not run
NNCF instead): both frameworks then execute the very same scales and zero points.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path

from .base import ConversionError, ConversionOptions
from .calibration_data import load_calibration
from .isolation import ToolRun, convert_in_python_subprocess

#: How the QDQ model is made, as the record's ``quant`` names it.
QDQ_METHOD = "onnxruntime quantize_static, QDQ, MinMax calibration"
QDQ_GRANULARITY = "per-channel symmetric int8 weights, per-tensor asymmetric int8 activations"

# In a subprocess: onnxruntime writes into $HOME on import, and the tool home is private.
_SCRIPT = """
import json, sys
import numpy as np
from onnxruntime.quantization import (
    CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static,
)
from onnxruntime.quantization.shape_inference import quant_pre_process

source, target, calibration = sys.argv[1], sys.argv[2], sys.argv[3]
with np.load(calibration, allow_pickle=False) as data:
    arrays = {name: data[name] for name in data.files}
count = next(iter(arrays.values())).shape[0]


class Samples(CalibrationDataReader):
    def __init__(self):
        self.index = 0

    def get_next(self):
        if self.index >= count:
            return None
        feed = {name: np.ascontiguousarray(a[self.index]) for name, a in arrays.items()}
        self.index += 1
        return feed

    def rewind(self):
        self.index = 0


prepared = target + ".pre.onnx"
try:
    # Shape inference and graph fusion (BatchNorm into Conv) before the quantizer looks.
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
except Exception as exc:
    print("quant_pre_process skipped:", exc)
    prepared = source
quantize_static(
    prepared, target, Samples(),
    quant_format=QuantFormat.QDQ,
    per_channel=True,
    activation_type=QuantType.QInt8,
    weight_type=QuantType.QInt8,
    calibrate_method=CalibrationMethod.MinMax,
    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
)
import onnx
model = onnx.load(target)
# An operator runs in int8 when its data input comes out of a DequantizeLinear; any other
# compute operator stays in floating point.
dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
float_ops = sorted({
    n.op_type for n in model.graph.node
    if n.op_type not in ("QuantizeLinear", "DequantizeLinear", "Shape", "Constant")
    and n.input and n.input[0] not in dequantized
})
print("EDGEBENCH_QDQ " + json.dumps({"fp32_fallback_ops": float_ops}))
"""


def qdq_unavailable() -> str | None:
    if importlib.util.find_spec("onnxruntime") is None:
        return "INT8 through QDQ needs onnxruntime: pip install 'edgebench[onnxruntime]'"
    return None


def qdq_version() -> str:
    try:
        return "ort-qdq-" + importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        return "ort-qdq-missing"


def quantize_qdq(
    onnx_path: Path, target: Path, options: ConversionOptions, timeout: float
) -> tuple[ToolRun, dict[str, object]]:
    """Write the QDQ model of ``onnx_path`` to ``target``; (the tool run, the record's quant)."""
    load_calibration(options)  # one clear line for a bad set before the tool starts
    run = convert_in_python_subprocess(
        label="ONNX Runtime static quantization",
        script=_SCRIPT,
        args=[str(onnx_path), str(target), str(options.calibration)],
        out_dir=target.parent,
        expected=target,
        timeout=timeout,
        unsupported_markers=(),
    )
    fallback: list[str] = []
    for line in run.log.splitlines():
        if line.startswith("EDGEBENCH_QDQ "):
            fallback = list(json.loads(line.split(" ", 1)[1])["fp32_fallback_ops"])
    for leftover in target.parent.glob(target.name + ".pre*"):
        leftover.unlink()
    if not target.is_file():
        raise ConversionError("failed", "ONNX Runtime static quantization wrote no model", run.log)
    return run, {
        "method": QDQ_METHOD,
        "granularity": QDQ_GRANULARITY,
        "fp32_fallback_ops": fallback,
    }
