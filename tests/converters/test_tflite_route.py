"""A model given as a .tflite, measured on every framework (docs/converters.md, "Starting from
.tflite"): its ONNX twin through the artifact cache, ONNX Runtime on the twin as the
reference, LiteRT on the original, the direct route (--from-tflite direct), and a twin that
does not match LiteRT.

The model is MediaPipe's face detector (tests/data/mediapipe/PROVENANCE.md).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fakes.models import save_conv_model
from fakes.native_builds import host_native_lab
from fakes.records import stored_records

from edgebench.builds.native_runner import BuiltRunner
from edgebench.converters.artifact_cache import file_sha256
from edgebench.converters.onnx_from_tflite import OnnxFromTfliteConverter
from edgebench.converters.tflite.schema import schema_missing

MEDIAPIPE = Path(__file__).resolve().parents[1] / "data" / "mediapipe"
FACE = MEDIAPIPE / "face_detection_short_range.tflite"
QUICK = ["--threads", "1", "--warmup", "1", "--iterations", "20", "--min-time", "0"]
QUICK += ["--rounds", "1"]
FRAMEWORKS = ("onnxruntime", "mnn", "ncnn", "openvino", "tflite")

pytest.importorskip("MNN")
pytest.importorskip("openvino")
if schema_missing():
    pytest.skip(schema_missing(), allow_module_level=True)


def run_face(run_cli, eb_env, frameworks, *extra: str) -> dict[str, dict]:
    """`edgebench run` on the face detector; its records by framework."""
    args = ["run", "--models", str(FACE), "--frameworks", ",".join(frameworks), *QUICK, *extra]
    result = run_cli(args, timeout=900)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    records = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    return {r["framework"]: r for r in records}


def twin_entry(eb_env) -> Path:
    (entry,) = (Path(eb_env["EDGEBENCH_CACHE"]) / "artifacts" / "onnx-from-tflite").iterdir()
    return entry


@pytest.mark.toolchains
def test_the_face_detector_is_checked_and_measured_on_every_framework(run_cli, eb_env):
    from edgebench.converters.toolchains import install_toolchain

    if install_toolchain("ncnn").state != "installed":
        pytest.skip("pnnx could not be installed (edgebench toolchains install ncnn)")
    records = run_face(run_cli, eb_env, FRAMEWORKS)
    twin = twin_entry(eb_env) / "model.onnx"
    for framework in FRAMEWORKS:
        record = records[framework]
        assert record["status"] == "ok", (framework, record["error"])
        check = record["output_check"]
        assert check["passed"] and "ONNX twin of face_detection_short_range" in check["reference"]
        artifact = record["artifact"]
        assert artifact["tflite_sha256"] == file_sha256(FACE)
        assert artifact["twin_sha256"] == file_sha256(twin)
        assert artifact["twin_dequantized"] is False
        assert artifact["route"] == ("original" if framework == "tflite" else "onnx-twin")
        # The twin keeps the .tflite's NHWC interface: every runner is fed 1x128x128x3.
        assert [i["shape"] for i in record["inputs"]] == [[1, 128, 128, 3]], record["inputs"]
    # LiteRT ran the original file, not a rewrite of it.
    assert records["tflite"]["model_path"] == str(FACE)
    assert records["tflite"]["artifact"]["files"][0]["sha256"] == file_sha256(FACE)
    # ONNX Runtime ran the twin itself; the others converted from it.
    assert records["onnxruntime"]["model_path"] == str(twin)
    assert records["openvino"]["artifact"]["converter"] == "OpenVinoConverter"


def test_the_twin_is_cached_by_the_tflites_sha256_and_the_readers_version(run_cli, eb_env):
    run_face(run_cli, eb_env, ["onnxruntime"])
    manifest = json.loads((twin_entry(eb_env) / "manifest.json").read_text())
    assert manifest["source_sha256"] == file_sha256(FACE)
    assert manifest["converter_version"] == OnnxFromTfliteConverter().version()
    report = json.loads((twin_entry(eb_env) / "import.json").read_text())
    assert report["dequantized"] is False and report["op_counts"]["CONV_2D"] > 0
    assert [o["name"] for o in report["outputs"]] == ["regressors", "classificators"]
    again = run_cli(["run", "--models", str(FACE), "--frameworks", "onnxruntime", *QUICK])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "ONNX twin" not in again.stderr  # nothing converted: the cached twin
    assert len(list(twin_entry(eb_env).parent.iterdir())) == 1


def test_the_direct_route_converts_the_tflite_itself_for_openvino_and_mnn(run_cli, eb_env):
    records = run_face(
        run_cli, eb_env, ["openvino", "mnn", "onnxruntime"], "--from-tflite", "direct"
    )
    for framework in ("openvino", "mnn"):
        record = records[framework]
        assert record["status"] == "ok", (framework, record["error"])
        assert record["output_check"]["passed"], record["output_check"]
        artifact = record["artifact"]
        assert artifact["route"] == "direct"
        assert artifact["converter_version"].endswith("+tflite-direct")
        assert artifact["tflite_sha256"] == file_sha256(FACE)
    # The reference is still ONNX Runtime on the twin.
    assert records["onnxruntime"]["artifact"]["route"] == "onnx-twin"


def test_a_twin_that_does_not_match_litert_makes_every_cell_mismatch(run_cli, eb_env):
    """A twin damaged in the cache (its manifest rewritten to match, so the cache serves it):
    the check against LiteRT fails, so no cell is checked against it; each is mismatch with
    the figures, and the run says so once."""
    import onnx
    from onnx import numpy_helper

    run_face(run_cli, eb_env, ["onnxruntime"])
    entry = twin_entry(eb_env)
    model = onnx.load(str(entry / "model.onnx"))
    weight = next(t for t in model.graph.initializer if len(t.dims) == 4)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 1.5, weight.name))
    onnx.save(model, str(entry / "model.onnx"))
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"][0].update(
        sha256=file_sha256(entry / "model.onnx"), size=(entry / "model.onnx").stat().st_size
    )
    (entry / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(eb_env["EDGEBENCH_RESULTS"])

    args = ["run", "--models", str(FACE), "--frameworks", "onnxruntime,tflite,openvino", *QUICK]
    result = run_cli(args, timeout=900)
    assert result.returncode == 1
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    # LiteRT's cell ran the original, the reference the twin failed against: not judged by it.
    lite = records["tflite"]
    assert lite["status"] == "ok" and lite["output_check"] is None, lite["error"]
    assert any("the reference its ONNX twin failed against" in str(w) for w in lite["warnings"])
    for framework in ("onnxruntime", "openvino"):
        record = records[framework]
        assert record["status"] == "mismatch", (framework, record["status"])
        assert record["error"].startswith("no reference: the ONNX twin does not match LiteRT")
        check = record["output_check"]
        assert not check["passed"] and check["reference"].startswith("LiteRT ")
        assert check["max_abs_diff"] > 0 and check["criterion_output"] in (
            "regressors",
            "classificators",
        )
    said = [ln for ln in result.stderr.splitlines() if "LiteRT on the original" in ln]
    assert len(said) == 1, result.stderr[-3000:]


def test_tnn_measures_the_twin_with_edgebench_native(
    run_cli, eb_env, tmp_path: Path, native_x86_tnn: BuiltRunner
):
    lab = host_native_lab(tmp_path)
    records = run_face(run_cli, eb_env, ["tnn"], "--lab", str(lab), "--devices", "host-native")
    tnn = records["tnn"]
    assert tnn["status"] == "ok", tnn["error"]
    assert tnn["output_check"]["passed"], tnn["output_check"]
    assert tnn["artifact"]["route"] == "onnx-twin"


def test_an_int8_tflite_is_measured_through_its_dequantized_twin_and_says_so(
    run_cli, eb_env, tmp_path: Path
):
    """An int8 file (the writer's, from a one-conv model): its twin is float, every record
    says so, the run warns once, and LiteRT's cell runs the int8 file, recorded as int8 and
    judged by its accuracy against the twin (tests/converters/test_true_precision.py)."""
    onnx_path = save_conv_model(tmp_path / "conv.onnx", [1, 3, 32, 32])
    made = run_cli(["convert", str(onnx_path), "--to", "tflite", "--precision", "int8"])
    assert made.returncode == 0, made.stderr[-2000:]
    (folder,) = re.findall(r"-> (\S+) \(", made.stdout)
    int8 = tmp_path / "conv_int8.tflite"
    shutil.copyfile(Path(folder) / "model.tflite", int8)

    args = ["run", "--models", str(int8), "--frameworks", "onnxruntime,tflite", *QUICK]
    result = run_cli(args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    said = [ln for ln in result.stderr.splitlines() if "its ONNX twin is a float model" in ln]
    assert len(said) == 1, result.stderr[-3000:]
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    for framework in ("onnxruntime", "tflite"):
        record = records[framework]
        assert record["status"] == "ok", (framework, record["error"])
        assert record["artifact"]["twin_dequantized"] is True
    tflite = records["tflite"]
    assert tflite["artifact"]["route"] == "original" and tflite["model_path"] == str(int8)
    assert tflite["precision"] == "int8" and tflite["accuracy"]["passed"]


def test_edgebench_native_runs_mnns_direct_artifact_in_its_own_layout(
    run_cli, eb_env, tmp_path: Path, native_x86_mnn: BuiltRunner
):
    """MNNConvert -f TFLITE keeps the .tflite's NHWC tensors; the native runner's host tensors
    take each session tensor's dimension type, so the NHWC input is not read as NCHW."""
    lab = host_native_lab(tmp_path)
    args = ["--lab", str(lab), "--devices", "host-native", "--from-tflite", "direct"]
    records = run_face(run_cli, eb_env, ["mnn"], *args)
    mnn = records["mnn"]
    assert mnn["status"] == "ok", mnn["error"]
    assert mnn["output_check"]["passed"], mnn["output_check"]
    assert mnn["artifact"]["route"] == "direct"
    assert mnn["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
