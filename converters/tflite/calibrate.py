"""Activation ranges for int8 quantization: the fp32 .tflite run in LiteRT over the calibration
set, recording the smallest and largest finite value of every asked tensor."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from edgebench.converters.base import ConversionError
from edgebench.converters.calibration_data import iter_samples
from edgebench.converters.isolation import native_stderr_captured

from .convert import TensorInfo

Range = tuple[float, float]
_FIX = "give one array per model input, shaped [N, *input shape] (ONNX layout)"


def check_calibration(inputs: list[TensorInfo], arrays: dict[str, np.ndarray]) -> None:
    """Every model input has float samples of its ONNX shape; else a one-line ConversionError."""
    for tensor in inputs:
        array = arrays.get(tensor.onnx_name)
        if array is None:
            raise ConversionError(
                "failed", f"calibration set has no array for input {tensor.onnx_name!r}: {_FIX}"
            )
        if list(array.shape[1:]) != list(tensor.onnx_shape):
            raise ConversionError(
                "failed",
                f"calibration samples of input {tensor.onnx_name!r} have shape "
                f"{list(array.shape[1:])}, the model wants {tensor.onnx_shape}: {_FIX}",
            )
        if array.dtype.kind not in "fiu":
            raise ConversionError(
                "failed",
                f"calibration samples of input {tensor.onnx_name!r} are {array.dtype}, "
                "not numbers: store float32 arrays",
            )


def tensor_ranges(
    flatbuffer: bytes,
    inputs: list[TensorInfo],
    arrays: dict[str, np.ndarray],
    tensors: Iterable[int],
) -> dict[int, Range]:
    """[min, max] of each of ``tensors`` (fp32 tensor indices) over every calibration sample.

    A tensor that never holds a finite value is left out."""
    from ai_edge_litert.interpreter import Interpreter

    check_calibration(inputs, arrays)
    wanted = list(tensors)
    try:
        # Keeping every tensor also keeps LiteRT's default delegate (XNNPACK) out, so each
        # intermediate value is really computed and readable; LiteRT warns that this is
        # meant for debugging, which is what calibration is.
        with warnings.catch_warnings(), native_stderr_captured():
            warnings.simplefilter("ignore", UserWarning)
            interpreter = Interpreter(
                model_content=flatbuffer, num_threads=1, experimental_preserve_all_tensors=True
            )
            interpreter.allocate_tensors()
    except (RuntimeError, ValueError) as exc:
        first = _first_line(exc)
        message = f"calibration: LiteRT cannot load the fp32 model: {first}"
        raise ConversionError("failed", message) from exc
    by_name = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    low = dict.fromkeys(wanted, np.inf)
    high = dict.fromkeys(wanted, -np.inf)
    for sample in iter_samples(arrays):
        for tensor in inputs:
            value = np.asarray(sample[tensor.onnx_name], np.float32)
            if tensor.perm:
                value = np.transpose(value, tensor.perm)
            if not np.isfinite(value).all():
                raise ConversionError(
                    "failed",
                    f"calibration samples of input {tensor.onnx_name!r} hold NaN or infinity: "
                    "give finite values",
                )
            interpreter.set_tensor(by_name[tensor.name], np.asarray(value, order="C"))
        try:
            interpreter.invoke()
        except RuntimeError as exc:
            raise ConversionError(
                "failed", f"calibration run failed in LiteRT: {_first_line(exc)}"
            ) from exc
        for index in wanted:
            value = interpreter.get_tensor(index)
            if value.size == 0:
                continue
            lo, hi = float(value.min()), float(value.max())
            if not (np.isfinite(lo) and np.isfinite(hi)):
                finite = value[np.isfinite(value)]
                if finite.size == 0:
                    continue
                lo, hi = float(finite.min()), float(finite.max())
            low[index] = min(low[index], lo)
            high[index] = max(high[index], hi)
    return {i: (low[i], high[i]) for i in wanted if low[i] <= high[i]}


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
