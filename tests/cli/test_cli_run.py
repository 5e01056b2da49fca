"""`edgebench run/show/export/models` end to end with the real runner and ONNX Runtime."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from fakes.models import save_conv_model

QUICK = ["--warmup", "2", "--iterations", "20", "--min-time", "0"]


def stored_records(results: Path) -> list[dict]:
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_builtin_model_runs_pinned_and_bad_models_fail_alone(
    run_cli, eb_env, corrupt_model, tmp_path
):
    # A missing path is a usage error before any run (tests/cli/test_bad_input_more.py).
    result = run_cli(
        [
            "run",
            "--models",
            f"mobilenetv2,{corrupt_model}",
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            *QUICK,
        ]
    )
    assert result.returncode == 1, result.stderr  # failed cells make the run exit 1
    assert "Traceback" not in result.stderr
    records = {r["model"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    assert set(records) == {"mobilenetv2", "corrupt"}

    good = records["mobilenetv2"]
    assert good["status"] == "ok"
    assert good["n_samples"] == len(good["samples_ns"]) >= 20
    assert good["cores_effective"] == [0]
    assert good["peak_rss_mb"] > 0
    assert good["latency_ms"]["min"] <= good["latency_ms"]["p50"] <= good["latency_ms"]["p99"]
    assert good["throughput_ips"] > 0
    assert len(good["model_sha256"]) == 64
    assert good["device_info"]["cpu_model"]
    assert good["inputs"] == [{"name": "input", "shape": [1, 3, 224, 224], "dtype": "float32"}]

    bad = records["corrupt"]
    assert bad["status"] == "failed" and "not a readable ONNX file" in bad["error"]
    assert "\n" not in bad["error"]
    assert "FAILED" in result.stdout and "mobilenetv2" in result.stdout


def test_jsonl_output_and_show_and_export(run_cli, eb_env, conv_model, tmp_path):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime,mnn",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["framework"] for r in records] == ["onnxruntime", "mnn"]
    assert records[0]["status"] == "ok"
    if records[1]["status"] == "skipped":  # mnn is absent in the test environment
        assert "pip install 'edgebench[mnn]'" in records[1]["error"]

    shown = run_cli(["show"])
    assert shown.returncode == 0, shown.stderr
    assert "conv · fp32 · 1 thread · cores all" in shown.stdout
    assert records[0]["run_id"] in shown.stdout

    csv_path = tmp_path / "out.csv"
    exported = run_cli(["export", "--format", "csv", "--out", str(csv_path)])
    assert exported.returncode == 0, exported.stderr
    frame = pd.read_csv(csv_path)
    ok = frame[frame["status"] == "ok"].iloc[0]
    assert ok["latency_ms_p50"] == pytest.approx(records[0]["latency_ms"]["p50"])
    parquet_path = tmp_path / "out.parquet"
    assert run_cli(["export", "--format", "parquet", "--out", str(parquet_path)]).returncode == 0
    assert len(pd.read_parquet(parquet_path)) == 2


def test_concurrency_reports_throughput_and_per_request_latency(run_cli, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--concurrency",
            "2",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["concurrency"] == 2
    assert record["n_samples"] >= 20
    assert record["throughput_ips"] == pytest.approx(record["n_samples"] / record["measure_wall_s"])


def test_dynamic_model_needs_a_shape_and_runs_with_one(run_cli, tmp_path):
    model = save_conv_model(tmp_path / "dyn.onnx", ["batch", 3, "height", "width"])
    refused = run_cli(["run", "--models", str(model), "--frameworks", "onnxruntime", *QUICK])
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "dynamic dimensions" in lines[0] and "--shape x=" in lines[0]

    ran = run_cli(
        [
            "run",
            "--models",
            str(model),
            "--frameworks",
            "onnxruntime",
            "--shape",
            "x=1,3,48,40",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout.splitlines()[0])
    assert record["inputs"][0]["shape"] == [1, 3, 48, 40]
    assert record["outputs"][0]["shape"] == [1, 8, 48, 40]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "pixel9"], "device 'pixel9' is not defined"),
        (["--frameworks", "tensorflow"], "unknown framework tensorflow"),
        (["--cores", "4096"], "cpu 4096 is not available on device local"),
        (["--threads", "0"], "--threads: must be whole numbers >= 1"),
        (["--shape", "1,3,x"], "is not a shape"),
    ],
)
def test_user_errors_are_one_line_without_traceback(run_cli, conv_model, args, message):
    result = run_cli(["run", "--models", str(conv_model), *args, *QUICK])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert message in lines[-1]
    assert "Traceback" not in result.stderr


def test_models_lists_every_builtin_with_size_and_inputs(run_cli):
    result = run_cli(["models"])
    assert result.returncode == 0, result.stderr
    for name in ("mobilenetv2", "resnet50", "vit-tiny", "detector"):
        assert name in result.stdout
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("resnet50"))
    assert "25." in line and "[1, 3, 224, 224]" in line
    # The generative ones with their sizes from their shapes, without writing them.
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("qwen2.5-0.5b-shape"))
    assert "494.03 M" in line and "278.1 MB" in line  # q4_0 weights
    assert any(ln.startswith("llm-tiny ") for ln in result.stdout.splitlines())


def test_results_never_go_to_the_users_home(run_cli, eb_env, conv_model):
    run_cli(["run", "--models", str(conv_model), "--frameworks", "onnxruntime", *QUICK])
    home = Path(eb_env["HOME"])
    assert not (home / ".cache" / "Microsoft").exists()
    assert os.listdir(eb_env["EDGEBENCH_RESULTS"])


def test_a_cell_over_its_timeout_is_killed_and_recorded(run_cli, conv_model):
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--format",
            "jsonl",
            "--timeout",
            "1",
            "--min-time",
            "30",
            "--warmup",
            "0",
            "--iterations",
            "2000000",
            "--baseline-s",
            "0",
        ]
    )
    assert result.returncode == 1
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "failed"
    assert record["error"] == "runner timed out after 1 s"
    assert record["duration_s"] < 20
