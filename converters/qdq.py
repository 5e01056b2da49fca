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
from typing import Any

from .base import ConversionError, ConversionOptions
from .calibration_data import load_calibration
from .isolation import ToolRun, convert_in_python_subprocess

#: How the QDQ model is made, as the record's ``quant`` names it.
QDQ_METHOD = "onnxruntime quantize_static, QDQ, MinMax calibration"
QDQ_GRANULARITY = "per-channel symmetric int8 weights, per-tensor asymmetric int8 activations"
QDQ_PER_TENSOR = "per-tensor symmetric int8 weights, per-tensor asymmetric int8 activations"
#: DequantizeLinear takes a per-channel ``axis`` from this opset on; older models are raised to
#: it before quantizing (ONNX Runtime's quantizer itself raises them only to 11).
QDQ_OPSET = 13
#: Changes whenever the script below makes different bytes from the same model and set.
_RECIPE = "r2"

# The quantizing script, in steps, runs in a subprocess: onnxruntime writes into $HOME on
# import, and the tool home is private. ``source`` is the model, ``target`` the QDQ model.
_PRELUDE = """
import json, os, sys
import numpy as np
import onnx


def one_line(exc):
    return " ".join(str(exc).split())[:240] or type(exc).__name__
"""

# Raise an old model's opset so that per-channel weights get a valid DequantizeLinear.
_RAISE_OPSET = """
from onnx import version_converter

def checker_error(model):
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        return one_line(exc)
    return None


# A source ONNX's checker already refuses (an output without a shape, say) cannot give a model
# it accepts: then only ONNX Runtime's load judges the result.
source_error = checker_error(source)
if source_error:
    print(f"onnx.checker refuses the source model ({source_error}); the QDQ model is judged by "
          "ONNX Runtime's load only")
per_channel = True
model = onnx.load(source)
opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), QDQ_OPSET)
if opset < QDQ_OPSET:
    try:
        if opset <= 10:
            # Upsample is gone after opset 10: rewritten as ONNX Runtime's pre-processing does.
            from onnxruntime.quantization.onnx_model import ONNXModel
            from onnxruntime.quantization.shape_inference import ReplaceUpsampleWithResize
            ReplaceUpsampleWithResize(ONNXModel(model), opset).apply()
        raised = version_converter.convert_version(model, QDQ_OPSET)
        if not source_error:
            onnx.checker.check_model(raised)
        source = target + ".pre.opset.onnx"
        onnx.save(raised, source)
        print(f"opset {opset} raised to {QDQ_OPSET} for per-channel DequantizeLinear")
    except Exception as exc:
        # Without the raise a per-channel axis would make an invalid model: per tensor instead.
        per_channel = False
        print(f"opset {opset} could not be raised to {QDQ_OPSET} ({one_line(exc)}); "
              "weights quantized per tensor")
del model
"""

_QUANTIZE = """
from onnxruntime.quantization import (
    CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static,
)
from onnxruntime.quantization.shape_inference import quant_pre_process

with np.load(calibration, allow_pickle=False) as data:
    arrays = {name: data[name] for name in data.files}
count = next(iter(arrays.values())).shape[0]


class Samples(CalibrationDataReader):
    def __init__(self):
        self.index = 0

    def get_next(self):
        if self.index >= count:
            return None
        feed = {name: np.asarray(a[self.index], order="C") for name, a in arrays.items()}
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
    per_channel=per_channel,
    activation_type=QuantType.QInt8,
    weight_type=QuantType.QInt8,
    calibrate_method=CalibrationMethod.MinMax,
    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
)
"""

# A model that ONNX's checker refuses, or ONNX Runtime cannot load, is removed, never kept.
_CHECK = """
try:
    if not source_error:
        onnx.checker.check_model(target)
    import onnxruntime
    onnxruntime.InferenceSession(target, providers=["CPUExecutionProvider"])
except Exception as exc:
    os.remove(target)
    sys.exit(f"the quantized model is invalid: {one_line(exc)}")
"""

_SUMMARY = """
model = onnx.load(target)
# An operator runs in int8 when its data input comes out of a DequantizeLinear; any other
# compute operator stays in floating point.
dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
float_ops = sorted({
    n.op_type for n in model.graph.node
    if n.op_type not in ("QuantizeLinear", "DequantizeLinear", "Shape", "Constant")
    and n.input and n.input[0] not in dequantized
})
print("EDGEBENCH_QDQ " + json.dumps({"fp32_fallback_ops": float_ops, "per_channel": per_channel}))
"""

_SCRIPT = (
    _PRELUDE
    + "source, target, calibration = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    + "QDQ_OPSET = int(sys.argv[4])\n"
    + _RAISE_OPSET
    + _QUANTIZE
    + _CHECK
    + _SUMMARY
)


def qdq_unavailable() -> str | None:
    if importlib.util.find_spec("onnxruntime") is None:
        return "INT8 through QDQ needs onnxruntime: pip install 'edgebench[onnxruntime]'"
    return None


def qdq_version() -> str:
    try:
        return f"ort-qdq-{importlib.metadata.version('onnxruntime')}-{_RECIPE}"
    except importlib.metadata.PackageNotFoundError:
        return "ort-qdq-missing"


def quantize_qdq(
    onnx_path: Path,
    target: Path,
    options: ConversionOptions,
    timeout: float,
    *,
    opset: int = QDQ_OPSET,
) -> tuple[ToolRun, dict[str, object]]:
    """Write the QDQ model of ``onnx_path`` to ``target``; (the tool run, the record's quant).

    A model of an older opset is raised to ``opset`` first (it stays there if it cannot be
    raised, quantized per tensor). The model written has passed ``onnx.checker`` and loads in
    ONNX Runtime; one that does not is removed and raises a "failed" ConversionError naming
    why."""
    load_calibration(options)  # one clear line for a bad set before the tool starts
    try:
        run = convert_in_python_subprocess(
            label="ONNX Runtime static quantization",
            script=_SCRIPT,
            args=[str(onnx_path), str(target), str(options.calibration), str(opset)],
            out_dir=target.parent,
            expected=target,
            timeout=timeout,
            unsupported_markers=(),
        )
    finally:
        for leftover in target.parent.glob(target.name + ".pre*"):
            leftover.unlink()
    summary: dict[str, Any] = {}  # the quantizer's JSON line
    for line in run.log.splitlines():
        if line.startswith("EDGEBENCH_QDQ "):
            summary = json.loads(line.split(" ", 1)[1])
    if not target.is_file():
        raise ConversionError("failed", "ONNX Runtime static quantization wrote no model", run.log)
    return run, {
        "method": QDQ_METHOD,
        "granularity": QDQ_GRANULARITY if summary.get("per_channel", True) else QDQ_PER_TENSOR,
        "fp32_fallback_ops": list(summary.get("fp32_fallback_ops") or []),
    }
