"""Running a .tflite in LiteRT and an ONNX model in ONNX Runtime by tensor name, and the
output check's fp32 rule, for the tests of edgebench's .tflite reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from edgebench.agreement import allclose_bound, excess
from edgebench.planning.tolerances import TOLERANCES

#: A quick `edgebench run` of a real .tflite: one thread, one warm-up, five timed inferences.
QUICK = ["--threads", "1", "--warmup", "1", "--iterations", "5", "--min-time", "0"]


def assert_fp32_close(got: np.ndarray, want: np.ndarray) -> None:
    """The output check's fp32 rule (edgebench.agreement with TOLERANCES["fp32"])."""
    assert got.shape == want.shape
    bound, _, _ = allclose_bound(want, TOLERANCES["fp32"])
    worst = float(excess(got, want, bound).max())
    assert worst <= 1.0, f"max |diff| {np.abs(got - want).max():.3g}: {worst:.3g}x the bound"


def run_onnx(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_litert(model: bytes, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """LiteRT's outputs by tensor name, fed by tensor name (the .tflite's own layout)."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=model, num_threads=1)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}
