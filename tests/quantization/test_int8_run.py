"""`edgebench run --precision fp32,int8` end to end with ONNX Runtime and OpenVINO: the int8
cells run quantized artifacts, carry the accuracy and quantization fields, and the report puts
the precisions side by side."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.quant_models import QUICK_JSONL_RUN, save_small_classifier

from edgebench.quantization.calibration import set_sha256

pytest.importorskip("openvino")


def _records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.fixture
def classifier(tmp_path: Path) -> Path:
    return save_small_classifier(tmp_path / "small.onnx")


def test_int8_cells_are_quantized_checked_and_compared(run_cli, classifier: Path, tmp_path):
    rng = np.random.default_rng(5)
    calibration = rng.standard_normal((12, 1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", image=calibration)
    common = ["run", "--models", str(classifier), "--frameworks", "onnxruntime,openvino"]
    common += ["--iterations", "5", "--min-time", "0", "--warmup", "1", "--rounds", "1"]
    result = run_cli(
        [
            *common,
            "--precision",
            "fp32,int8",
            "--calibration",
            str(tmp_path / "cal.npz"),
            "--format",
            "jsonl",
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {(r["framework"], r["precision"]): r for r in _records(result.stdout)}
    assert len(records) == 4
    for framework in ("onnxruntime", "openvino"):
        cell = records[(framework, "int8")]
        assert cell["status"] == "ok", cell["error"]
        # The last quarter of the 12 samples evaluates; the first 9 calibrate.
        assert cell["accuracy"]["n"] == 3
        assert cell["accuracy"]["top1_agreement"] >= 0.75
        assert cell["accuracy"]["sqnr_db"] > 15
        quant = cell["quant"]
        assert quant["calibration"] == {
            "n": 9,
            "sha256": set_sha256({"image": calibration[:9]}),
            "synthetic": False,
        }
        assert quant["granularity"].startswith("per-channel")
        assert records[(framework, "fp32")]["accuracy"] is None
    # The artifacts, not the flag: ONNX Runtime runs int8 weights behind DequantizeLinear...
    qdq = Path(records[("onnxruntime", "int8")]["artifact"]["path"]) / "model.int8.onnx"
    model = onnx.load(str(qdq))
    int8_weights = [
        t.name
        for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.INT8 and len(t.dims) == 4
    ]
    assert len(int8_weights) == 3  # the three convolutions
    assert sum(n.op_type == "QuantizeLinear" for n in model.graph.node) >= 4
    # ... and OpenVINO's IR has the same quantization as FakeQuantize with int8 constants.
    ir = Path(records[("openvino", "int8")]["artifact"]["path"]) / "model.xml"
    text = ir.read_text()
    assert 'type="FakeQuantize"' in text or 'element_type="i8"' in text

    table = run_cli(["show"])
    assert table.returncode == 0, table.stderr
    assert "precisions" in table.stdout
    line = next(
        ln
        for ln in table.stdout.splitlines()
        if ln.startswith("local") and "openvino" in ln and "dB" in ln
    )
    assert "x)" in line and "top-1" in line


def test_a_bad_calibration_set_fails_only_the_int8_cells(run_cli, classifier: Path, tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli(
        [
            "run",
            "--models",
            str(classifier),
            "--frameworks",
            "onnxruntime",
            "--precision",
            "fp32,int8",
            "--calibration",
            str(tmp_path / "empty"),
            *QUICK_JSONL_RUN,
        ]
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    problem = [ln for ln in result.stderr.splitlines() if "calibration for small" in ln]
    assert len(problem) == 1 and "holds no samples" in problem[0]
    by_precision = {r["precision"]: r for r in _records(result.stdout)}
    assert by_precision["fp32"]["status"] == "ok"
    assert by_precision["int8"]["status"] == "failed"
    assert "holds no samples" in by_precision["int8"]["error"]


def test_tnn_says_why_it_has_no_int8(run_cli, classifier: Path):
    result = run_cli(["convert", str(classifier), "--to", "tnn", "--precision", "int8"])
    assert result.returncode == 1
    assert "tnn: unsupported_precision" in result.stdout
    assert "does not write TNN's quantized layers" in result.stdout
