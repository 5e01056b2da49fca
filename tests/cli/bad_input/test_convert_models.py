"""`edgebench run` on models whose conversion or precision needs care (issue 26): a real
opset-9 export quantized to int8 for ONNX Runtime and OpenVINO, and an int8 ncnn model given
pre-converted."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from fakes.cli_checks import FAST, assert_no_traceback, assert_one_error_line, cli, records_of
from fakes.models import save_conv_model
from fakes.toolchains import pnnx_or_skip

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


@pytest.fixture(scope="module")
def int8_ncnn(mod_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A tiny model and its int8 ncnn files, made by `edgebench convert --precision int8` and
    copied out of the cache as a user would take them: {"onnx", "param"}."""
    pytest.importorskip("ncnn")
    pnnx_or_skip()
    folder = tmp_path_factory.mktemp("int8-ncnn")
    model = save_conv_model(folder / "tiny.onnx", [1, 3, 32, 32])
    made = cli(["convert", str(model), "--to", "ncnn", "--precision", "int8"], mod_env)
    assert made.returncode == 0, made.stdout + made.stderr
    artifact = Path(made.stdout.split(" -> ")[1].split(" (")[0])
    for name in ("model.param", "model.bin", "io.json"):
        (folder / name).write_bytes((artifact / name).read_bytes())
    assert " 8=" in (folder / "model.param").read_text()  # ncnn's int8_scale_term
    return {"onnx": model, "param": folder / "model.param"}


def _run_int8_file(files: dict, env: dict[str, str], *precision: str):
    args = ["run", "--models", str(files["param"]), "--reference", str(files["onnx"])]
    return cli([*args, "--frameworks", "ncnn", *precision, "--eval-samples", "2", *FAST], env)


@pytest.mark.toolchains
def test_an_int8_ncnn_file_runs_as_int8_at_the_default_precision(int8_ncnn, mod_env):
    result = _run_int8_file(int8_ncnn, mod_env)
    assert result.returncode == 0, result.stderr
    (record,) = records_of(result)
    assert record["status"] == "ok", record["error"]
    assert record["precision"] == "int8"
    assert record["quant"]["method"].startswith("pre-converted")
    # Its outputs follow fp32 ONNX Runtime: the weights were read as int8 (with int8 inference
    # off, ncnn reads them as floats and the outputs are garbage, inf on x86).
    assert record["accuracy"]["sqnr_db"] > 20


@pytest.mark.toolchains
def test_an_int8_ncnn_file_at_an_explicit_fp32_is_one_error_line(int8_ncnn, mod_env):
    result = _run_int8_file(int8_ncnn, mod_env, "--precision", "fp32")
    line = assert_one_error_line(result)
    assert "model.param is an int8 ncnn model" in line
    assert "int8_scale_term" in line and "--precision int8" in line
    assert records_of(result) == []


@pytest.mark.toolchains
def test_an_int8_ncnn_file_in_a_precision_sweep_has_only_its_int8_cell(int8_ncnn, mod_env):
    result = _run_int8_file(int8_ncnn, mod_env, "--precision", "fp32,int8")
    assert result.returncode == 0, result.stderr
    assert [(r["precision"], r["status"]) for r in records_of(result)] == [("int8", "ok")]
    notes = [ln for ln in result.stderr.splitlines() if "is an int8 ncnn model" in ln]
    assert len(notes) == 1 and notes[0].startswith("edgebench: warning:")
    assert "measured at int8 only, not fp32" in notes[0]
