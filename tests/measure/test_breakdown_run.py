"""`edgebench run --instances --shapes --profile ops` end to end on the built-in MobileNetV2
with every Python framework: stage times, N instances in both modes, a shape sweep with fixed
and dynamic artifacts, per-operator profiles, and the report that shows them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.runner_process import run_runner

from edgebench.models import BUILTIN_MODELS
from edgebench.planning.modelref import resolve_model
from edgebench.planning.variants import _sweep_model, shape_points
from edgebench.runners.protocol import SPEC_SCHEMA

FRAMEWORKS = ("onnxruntime", "openvino", "mnn", "ncnn", "tflite")
#: Frameworks whose shared mode serves every stream from one copy of the weights.
SHARING = ("onnxruntime", "openvino", "ncnn")
SHAPES = ("1x3x160x160", "1x3x224x224")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, shared_models: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("breakdown")
    cache = root / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(shared_models, target_is_directory=True)
    (root / "home").mkdir()
    env = dict(
        os.environ,
        EDGEBENCH_CACHE=str(cache),
        EDGEBENCH_RESULTS=str(root / "results"),
        HOME=str(root / "home"),
    )
    args = ["run", "--models", "mobilenetv2", "--frameworks", ",".join(FRAMEWORKS)]
    args += ["--iterations", "5", "--min-time", "0", "--warmup", "1", "--rounds", "1"]
    args += ["--instances", "1,3", "--shapes", ",".join(SHAPES)]
    args += ["--profile", "ops", "--profile-iterations", "3", "--format", "jsonl"]
    proc = subprocess.run(
        [sys.executable, "-m", "edgebench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert records, proc.stderr
    return {"records": records, "env": env, "proc": proc}


def _plain(records: list[dict]) -> dict[str, dict]:
    return {r["framework"]: r for r in records if not r["instances"] and not r["shape"]}


def test_every_cell_is_measured_or_refused_with_a_reason(run):
    records = run["records"]
    # 5 plain + 5 x 2 instance modes + 5 x 2 shapes x 2 shape modes.
    assert len(records) == 5 + 10 + 20
    assert len({r["cell_id"] for r in records}) == len(records)
    for r in records:
        assert r["status"] in ("ok", "unsupported"), (r["cell_id"], r["error"])
        if r["status"] == "unsupported":
            assert r["error"] and "\n" not in r["error"]


def test_stage_samples_add_up_to_no_more_than_the_iteration(run):
    for framework, r in _plain(run["records"]).items():
        stages = r["stages"]
        assert set(stages["p50_ms"]) == {"copy_in", "compute", "copy_out"}, framework
        per_stage = stages["samples_ns"]
        assert all(len(v) == r["n_samples"] for v in per_stage.values())
        for i, whole in enumerate(r["samples_ns"]):
            parts = per_stage["copy_in"][i] + per_stage["compute"][i] + per_stage["copy_out"][i]
            assert 0 < parts <= whole, (framework, i)
        assert sum(r["samples_ns"]) <= r["measure_wall_s"] * 1e9
        # A 300 MMAC network computes for milliseconds; copying 600 KB in and 4 KB out
        # takes microseconds.
        p50 = stages["p50_ms"]
        assert p50["compute"] > 10 * (p50["copy_in"] + p50["copy_out"]), framework
        assert all(text for text in stages["boundaries"].values())


def test_shared_instances_use_less_memory_than_separate_loads(run):
    by_mode: dict[tuple[str, str], dict] = {}
    for r in run["records"]:
        if r["instances"]:
            by_mode[(r["framework"], r["instances"]["mode"])] = r
    for framework in FRAMEWORKS:
        separate = by_mode[(framework, "separate")]
        assert separate["status"] == "ok", separate["error"]
        assert separate["concurrency"] == 3
        assert len(separate["instances"]["rss_after_load_mb"]) == 3
        assert separate["throughput_ips"] > 0
        # MobileNetV2 holds 14 MB of fp32 weights: a separate load adds at least most of it.
        assert separate["instances"]["load_mb_per_instance"] > 7, framework
    for framework in SHARING:
        shared, separate = by_mode[(framework, "shared")], by_mode[(framework, "separate")]
        assert shared["status"] == "ok", shared["error"]
        assert shared["instances"]["per_instance_mb"] < separate["instances"]["per_instance_mb"]
    refused = by_mode[("tflite", "shared")]
    assert refused["status"] == "unsupported"
    assert "interpreter" in refused["error"]


def test_shape_sweep_runs_fixed_and_dynamic_artifacts(run):
    cells = [r for r in run["records"] if r["shape"]]
    fixed = [r for r in cells if r["shape"]["mode"] == "fixed"]
    assert {(r["framework"], r["inputs"][0]["shape"][2]) for r in fixed} == {
        (f, size) for f in FRAMEWORKS for size in (160, 224)
    }
    for r in fixed:
        assert r["status"] == "ok", (r["cell_id"], r["error"])
        assert r["output_check"]["passed"], r["cell_id"]
        assert r["shape"]["pixels"] == 3 * r["inputs"][0]["shape"][2] ** 2
        assert r["shape"]["change"] is None
    dynamic = [r for r in cells if r["shape"]["mode"] == "dynamic" and r["status"] == "ok"]
    # ONNX Runtime runs the relaxed ONNX model; OpenVINO, MNN and ncnn a dynamic artifact.
    assert {(r["framework"], r["inputs"][0]["shape"][2]) for r in dynamic} == {
        (f, size) for f in ("onnxruntime", "openvino", "mnn", "ncnn") for size in (160, 224)
    }
    for r in dynamic:
        change = r["shape"]["change"]
        assert change["from"][0]["shape"] != r["inputs"][0]["shape"]
        assert change["resize_ms"] >= 0 and change["first_ms"] > 0
        assert r["output_check"]["passed"], r["cell_id"]
    refused = {r["framework"] for r in cells if r["status"] == "unsupported"}
    assert refused == {"tflite"}
    for r in cells:
        if r["status"] == "unsupported":
            assert r["shape"]["mode"] == "dynamic" and "TFLite" in r["error"], r["error"]


def test_op_profiles_name_real_operators(run):
    plain = _plain(run["records"])
    for framework in ("onnxruntime", "openvino", "mnn"):
        profile = plain[framework]["op_profile"]
        assert profile["iterations"] == 3, framework
        types = {op["type"].lower() for op in profile["ops"]}
        assert any("conv" in t for t in types), (framework, types)
    for framework in ("ncnn", "tflite"):
        assert plain[framework]["op_profile"]["unavailable"]


def test_a_fixed_artifact_refuses_another_shape(run):
    for framework, r in _plain(run["records"]).items():
        model = r["artifact"]["path"] if r["artifact"] else r["model_path"]
        primary = Path(model)
        if primary.is_dir():
            primary = next(Path(r["artifact"]["path"]).glob(f"*{_suffix(framework)}"))
        spec = {
            "schema": SPEC_SCHEMA,
            "model": str(primary),
            "framework": framework,
            "warmup": 0,
            "iterations": 1,
            "min_time_s": 0,
            "inputs": [{"name": r["inputs"][0]["name"], "shape": [1, 3, 160, 160]}],
        }
        result = run_runner(spec)
        assert result["status"] == "failed", framework
        assert result["error"]["kind"] == "bad_spec"
        message = result["error"]["message"]
        assert "[1, 3, 224, 224]" in message and "\n" not in message, message


def _suffix(framework: str) -> str:
    return {"openvino": ".xml", "mnn": ".mnn", "ncnn": ".param", "tflite": ".tflite"}[framework]


def test_a_model_with_fixed_dimensions_cannot_be_swept(tmp_path):
    vit = resolve_model("vit-tiny", tmp_path)
    assert not BUILTIN_MODELS["vit-tiny"].free_axes
    base = [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in vit.inputs]
    model, points, reason = _sweep_model(vit, base, ["1x3x160x160", "1x3x320x320"], tmp_path)
    assert model is vit and [p[0]["shape"][2] for p in points] == [160, 320]
    assert reason and "fixed at [1, 3, 224, 224]" in reason
    assert "rank" not in shape_points(vit, base, ["1x3x160"])  # a wrong rank is named
    assert "dimensions" in shape_points(vit, base, ["1x3x160"])


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--shapes", "1x3x160"], "--shapes 1x3x160: model vit-tiny's input 'input' has 4"),
        (["--shapes", "1x3xbigx160"], "'1x3xbigx160' is not a shape such as 1x3x224x224"),
        (["--instances", "0"], "--instances: must be whole numbers >= 1"),
        (["--instance-mode", "pooled"], "'pooled' is not separate or shared"),
        (["--profile", "layers"], "--profile: 'layers' is not ops"),
    ],
)
def test_bad_breakdown_options_get_one_line(run_cli, args, problem):
    result = run_cli(["run", "--models", "vit-tiny", "--frameworks", "onnxruntime", *args])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0], result.stderr
    assert "Traceback" not in result.stderr
