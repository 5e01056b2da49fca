"""MediaPipe's selfie segmenter (tests/data/mediapipe/PROVENANCE.md) through `edgebench run`:
its custom Convolution2DTransposeBias is read by edgebench's .tflite reader, so the ONNX twin
exists, matches LiteRT on the original, and every framework's cell is checked against it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.records import stored_records
from fakes.tflite_runs import QUICK

from edgebench.converters.artifact_cache import file_sha256
from edgebench.converters.tflite.schema import schema_missing

SELFIE = Path(__file__).resolve().parents[1] / "data" / "mediapipe" / "selfie_segmentation.tflite"
FRAMEWORKS = ("onnxruntime", "mnn", "ncnn", "openvino", "tflite")


@pytest.mark.toolchains
def test_the_selfie_segmenter_is_checked_on_every_framework(run_cli, eb_env):
    from edgebench.converters.toolchains import install_toolchain

    for module in ("MNN", "openvino"):
        pytest.importorskip(module)
    if schema_missing():
        pytest.skip(schema_missing())
    if install_toolchain("ncnn").state != "installed":
        pytest.skip("pnnx could not be installed (edgebench toolchains install ncnn)")
    args = ["run", "--models", str(SELFIE), "--frameworks", ",".join(FRAMEWORKS)]
    args += [*QUICK, "--rounds", "1"]
    result = run_cli(args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "has no ONNX twin" not in result.stderr
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    for framework in FRAMEWORKS:
        record = records[framework]
        assert record["status"] == "ok", (framework, record["error"])
        check = record["output_check"]
        assert check["passed"], (framework, check)
        assert "ONNX twin of selfie_segmentation" in check["reference"]
        assert record["artifact"]["tflite_sha256"] == file_sha256(SELFIE)
        assert record["artifact"]["route"] == ("original" if framework == "tflite" else "onnx-twin")
