"""A quantized model with one wrong scale runs fine and fast; only its accuracy gives it away.
Given to `edgebench run` as a pre-converted int8 .tflite with its ONNX reference, it must come
out `mismatch` with the figure that failed, while the untouched file comes out `ok`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
from fakes.quant_models import QUICK_JSONL_RUN, save_small_classifier

from edgebench.converters import ArtifactCache, ConversionOptions, get_converter
from edgebench.converters.artifact_cache import file_sha256
from edgebench.quantization.calibration import CalibrationConfig, CalibrationSets

schema = pytest.importorskip("ai_edge_litert.schema_py_generated")


def _int8_tflite(onnx_path: Path, work: Path) -> Path:
    inputs = [{"name": "image", "shape": [1, 3, 32, 32], "dtype": "float32"}]
    calibration = CalibrationSets(CalibrationConfig(calibration_samples=16)).prepared(inputs)
    options = ConversionOptions(
        "int8",
        {"image": [1, 3, 32, 32]},
        calibration.calibration.path,
        calibration.calibration.sha256,
    )
    artifact = ArtifactCache(work / "artifacts").convert(
        get_converter("tflite"), onnx_path, file_sha256(onnx_path), options
    )
    folder = work / "given"
    folder.mkdir()
    for name in artifact.files:  # model.tflite and the io.json that maps NCHW to NHWC
        shutil.copy(artifact.path / name, folder / name)
    return folder / "model.tflite"


def _corrupt_first_conv_output_scale(path: Path, factor: float) -> None:
    """Multiply the scale of the first CONV_2D's int8 output by ``factor``: every later layer
    reads its input ``factor`` times too large, and the file stays perfectly loadable."""
    model = schema.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    graph = model.subgraphs[0]
    codes = [c.builtinCode or c.deprecatedBuiltinCode for c in model.operatorCodes]
    conv = next(
        op for op in graph.operators if codes[op.opcodeIndex] == schema.BuiltinOperator.CONV_2D
    )
    params = graph.tensors[conv.outputs[0]].quantization
    params.scale = [float(s) * factor for s in params.scale]
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))


def _run(run_cli, model: Path, reference: Path) -> dict:
    result = run_cli(
        [
            "run",
            "--models",
            str(model),
            "--reference",
            str(reference),
            "--frameworks",
            "tflite",
            "--precision",
            "int8",
            *QUICK_JSONL_RUN,
        ]
    )
    assert "Traceback" not in result.stderr
    (record,) = [json.loads(ln) for ln in result.stdout.splitlines() if ln.startswith("{")]
    return record


def test_a_corrupted_scale_is_caught_as_mismatch(run_cli, tmp_path: Path):
    onnx_path = save_small_classifier(tmp_path / "small.onnx")
    good = _int8_tflite(onnx_path, tmp_path)
    record = _run(run_cli, good, onnx_path)
    assert record["status"] == "ok", record["error"]
    assert record["accuracy"]["sqnr_db"] > 20
    assert record["quant"]["method"].startswith("pre-converted")

    _corrupt_first_conv_output_scale(good, 8.0)
    bad = _run(run_cli, good, onnx_path)
    assert bad["status"] == "mismatch"
    assert bad["accuracy"]["passed"] is False
    assert bad["accuracy"]["sqnr_db"] < 10
    assert "SQNR of output logits" in bad["error"] and "below the floor 10 dB" in bad["error"]
    # It still ran: a wrong scale costs nothing in speed, which is why accuracy must decide.
    assert bad["latency_ms"]["p50"] > 0
    assert np.isfinite(bad["accuracy"]["cosine_min"])
