"""`edgebench run` on models whose conversion or precision needs care (issue 26): a real
opset-9 export quantized to int8 for ONNX Runtime and OpenVINO, and an int8 ncnn model given
pre-converted."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from fakes.cli_checks import FAST, assert_no_traceback, cli, records_of

DATA = Path(__file__).resolve().parents[2] / "data" / "paddleocr"
#: PaddleOCR's direction classifier as paddle2onnx exported it: opset 9, every size dynamic.
CLASSIFIER = DATA / "ch_ppocr_mobile_v2.0_cls.onnx"


def test_int8_of_an_opset9_export_is_valid_and_runs_in_onnxruntime_and_openvino(mod_env):
    pytest.importorskip("openvino")
    result = cli(
        [
            "run",
            "--models",
            str(CLASSIFIER),
            "--shape",
            "1,3,48,192",
            "--frameworks",
            "onnxruntime,openvino",
            "--precision",
            "int8",
            "--calibration-samples",
            "8",
            "--eval-samples",
            "2",
            "--rounds",
            "1",
            *FAST,
        ],
        mod_env,
    )
    assert_no_traceback(result)
    records = {r["framework"]: r for r in records_of(result)}
    assert set(records) == {"onnxruntime", "openvino"}, result.stderr
    for record in records.values():
        assert record["status"] == "ok", record["error"]
        assert record["precision"] == "int8"
        assert record["quant"]["granularity"].startswith("per-channel")
    # The artifact ONNX Runtime ran: raised to opset 13, where DequantizeLinear takes the
    # per-channel axis its weights carry, and valid for ONNX's own checker.
    qdq = onnx.load(str(Path(records["onnxruntime"]["artifact"]["path"]) / "model.int8.onnx"))
    onnx.checker.check_model(qdq, full_check=True)
    opset = next(o.version for o in qdq.opset_import if o.domain in ("", "ai.onnx"))
    assert opset >= 13
    per_channel = [
        n
        for n in qdq.graph.node
        if n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)
    ]
    assert per_channel
