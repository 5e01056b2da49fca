"""The precision a record gives is the precision of the file its cell ran, read from that
file: an int8 .tflite run by LiteRT and through --from-tflite direct is int8 (and ranked in
the int8 matrix), a float file asked for at int8 is fp32, and run.json says what the records
say, beside what was asked for (docs/converters.md, "Pre-converted artifacts")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes.models import save_conv_model
from fakes.records import stored_records

from edgebench.converters.tflite.schema import schema_missing

pytest.importorskip("MNN")
pytest.importorskip("openvino")
if schema_missing():
    pytest.skip(schema_missing(), allow_module_level=True)

QUICK = ["--threads", "1", "--warmup", "1", "--iterations", "10", "--min-time", "0"]
QUICK += ["--rounds", "1", "--eval-samples", "2"]
FILE_RUNNERS = ("tflite", "mnn", "openvino")  # LiteRT's original and the direct route


def convert(run_cli, model: Path, to: str, precision: str) -> Path:
    made = run_cli(["convert", str(model), "--to", to, "--precision", precision])
    assert made.returncode == 0, made.stderr[-2000:]
    return Path(made.stdout.split(" -> ")[1].split(" (")[0])


def run_json(eb_env) -> dict:
    (run,) = Path(eb_env["EDGEBENCH_RESULTS"]).glob("*/run.json")
    return json.loads(run.read_text())


@pytest.fixture
def int8_tflite(run_cli, tmp_path: Path) -> Path:
    onnx_path = save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])
    folder = convert(run_cli, onnx_path, "tflite", "int8")
    return Path(shutil.copyfile(folder / "model.tflite", tmp_path / "conv_int8.tflite"))


def test_an_int8_tflite_is_recorded_int8_where_the_int8_file_ran(run_cli, eb_env, int8_tflite):
    args = ["run", "--models", str(int8_tflite), "--from-tflite", "direct"]
    args += ["--frameworks", "onnxruntime,tflite,mnn,openvino", *QUICK]
    result = run_cli(args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    assert (records["onnxruntime"]["precision"], records["onnxruntime"]["status"]) == ("fp32", "ok")
    for framework in FILE_RUNNERS:
        record = records[framework]
        assert (record["precision"], record["precision_requested"]) == ("int8", "fp32")
        # Judged as what it is (accuracy against the float twin), so MNN no longer fails
        # the fp32 rule against a float reference.
        assert record["status"] == "ok", (framework, record["error"])
        assert record["quant"]["method"].startswith("pre-converted")
        assert record["quant"]["calibration"] is None
        said = [ln for ln in result.stderr.splitlines() if f"on {framework} runs" in ln]
        assert len(said) == 1 and "not the fp32 asked for" in said[0], result.stderr[-3000:]
    options = run_json(eb_env)["options"]
    assert (options["precision"], options["precision_requested"]) == (["fp32", "int8"], ["fp32"])
    # The int8 cells sit in the int8 matrix, not beside the float cells.
    fp32_matrix = result.stdout.split("conv_int8 · fp32")[1].split("\n\n")[0]
    int8_matrix = result.stdout.split("conv_int8 · int8")[1].split("\n\n")[0]
    assert len(fp32_matrix.splitlines()[-1].split()) == 2  # the device, ONNX Runtime's p50
    assert len(int8_matrix.splitlines()[-1].split()) == 4  # the device, the three int8 cells


def test_a_sweep_with_int8_measures_the_int8_file_once(run_cli, eb_env, int8_tflite):
    args = ["run", "--models", str(int8_tflite), "--from-tflite", "direct"]
    args += ["--frameworks", "tflite,mnn", "--precision", "fp32,int8", *QUICK]
    result = run_cli(args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    records = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    got = sorted((r["framework"], r["precision"], r["precision_requested"]) for r in records)
    assert got == [("mnn", "int8", None), ("tflite", "int8", None)]
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    tflite = next(r for r in records if r["framework"] == "tflite")
    assert tflite["artifact"]["route"] == "original" and tflite["model_path"] == str(int8_tflite)
    once = [ln for ln in result.stderr.splitlines() if "is measured once, at int8" in ln]
    assert len(once) == 2, result.stderr[-3000:]
    assert run_json(eb_env)["options"]["precision"] == ["int8"]


def test_a_float_file_asked_for_at_int8_is_recorded_fp32(run_cli, eb_env, tmp_path: Path):
    onnx_path = save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])
    mnn = Path(
        shutil.copyfile(
            convert(run_cli, onnx_path, "mnn", "fp32") / "model.mnn", tmp_path / "f.mnn"
        )
    )
    args = ["run", "--models", str(mnn), "--reference", str(onnx_path), "--frameworks", "mnn"]
    result = run_cli([*args, "--precision", "int8", *QUICK], timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    assert (record["precision"], record["precision_requested"]) == ("fp32", "int8")
    assert record["status"] == "ok" and record["output_check"]["passed"]
    assert record["quant"] is None and record["accuracy"] is None
    said = [ln for ln in result.stderr.splitlines() if "not the int8 asked for" in ln]
    assert len(said) == 1 and "f.mnn, which holds fp32" in said[0], result.stderr[-3000:]
    options = run_json(eb_env)["options"]
    assert (options["precision"], options["precision_requested"]) == (["fp32"], ["int8"])
