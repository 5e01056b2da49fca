"""Converters in the user's environment (MNN, OpenVINO), the artifact cache, the output check."""

import json
import shutil

import numpy as np
import pytest
from fakes.models import save_conv_model
from fakes.toolchains import onnx2tf_or_skip

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, get_converter
from edgebench.converters.artifact_cache import file_sha256
from edgebench.measure.output_check import check_outputs, compare_arrays

pytest.importorskip("MNN")
pytest.importorskip("openvino")


@pytest.fixture
def cache(tmp_path):
    return ArtifactCache(tmp_path / "artifacts")


@pytest.mark.parametrize(
    ("fmt", "files"), [("mnn", ["model.mnn"]), ("openvino", ["model.xml", "model.bin"])]
)
def test_conversion_writes_manifest_and_second_call_is_a_cache_hit(cache, conv_model, fmt, files):
    sha = file_sha256(conv_model)
    first = cache.convert(get_converter(fmt), conv_model, sha, ConversionOptions())
    assert not first.cached
    assert list(first.files) == files
    manifest = json.loads((first.path / "manifest.json").read_text())
    assert manifest["source_sha256"] == sha
    assert manifest["converter_version"] == get_converter(fmt).version()
    assert manifest["time_s"] > 0
    assert {f["name"] for f in manifest["files"]} == set(files)
    # Only declared files stay; tools' scratch output is dropped.
    assert sorted(p.name for p in first.path.iterdir()) == sorted([*files, "manifest.json"])

    second = cache.convert(get_converter(fmt), conv_model, sha, ConversionOptions())
    assert second.cached and second.path == first.path
    forced = cache.convert(get_converter(fmt), conv_model, sha, ConversionOptions(), force=True)
    assert not forced.cached


def test_corrupt_or_partial_cache_entries_are_rebuilt(cache, conv_model):
    sha = file_sha256(conv_model)
    converter = get_converter("openvino")
    artifact = cache.convert(converter, conv_model, sha, ConversionOptions())
    weights = artifact.path / "model.bin"
    weights.write_bytes(weights.read_bytes()[:-4])  # truncated
    assert cache.lookup(converter, sha, ConversionOptions()) is None
    rebuilt = cache.convert(converter, conv_model, sha, ConversionOptions())
    assert not rebuilt.cached and file_sha256(rebuilt.path / "model.bin") == file_sha256(weights)

    (rebuilt.path / "manifest.json").unlink()  # a conversion killed before its manifest
    assert not cache.convert(converter, conv_model, sha, ConversionOptions()).cached


def test_options_are_part_of_the_key(cache, conv_model):
    sha = file_sha256(conv_model)
    converter = get_converter("mnn")
    fp32 = cache.convert(converter, conv_model, sha, ConversionOptions())
    fp16 = cache.convert(converter, conv_model, sha, ConversionOptions(precision="fp16"))
    assert fp32.path != fp16.path
    assert (fp16.path / "model.mnn").stat().st_size < (fp32.path / "model.mnn").stat().st_size


def test_garbage_model_fails_with_the_converter_log(cache, corrupt_model):
    with pytest.raises(ConversionError) as info:
        cache.convert(get_converter("openvino"), corrupt_model, "x" * 64, ConversionOptions())
    assert info.value.kind == "failed"
    assert "OpenVINO conversion failed" in info.value.message
    assert info.value.log
    assert not list((cache.root / "openvino").iterdir())  # no half entry left behind


def test_compare_arrays_metrics():
    ref = np.array([[0.0, 1.0, 3.0], [2.0, 0.5, 0.1]], dtype=np.float32)
    same = compare_arrays("o", "o", ref.copy(), ref)
    assert same.max_abs_diff == 0 and same.rel_error == 0 and same.cosine == pytest.approx(1)
    assert same.top1_agreement == 1.0
    flipped = ref.copy()
    flipped[1] = [0.0, 3.0, 0.0]
    cmp = compare_arrays("o", "o", flipped, ref)
    assert cmp.top1_agreement == 0.5
    assert cmp.max_abs_diff == pytest.approx(2.5)


def test_check_matches_by_name_then_position_and_flags_shape_problems():
    ref = [np.ones((1, 4), np.float32), np.zeros((1, 2), np.float32)]
    by_name = check_outputs(["b", "a"], [ref[1], ref[0]], ["a", "b"], ref, 1e-3, "ort")
    assert by_name.passed
    by_position = check_outputs(["x", "y"], ref, ["a", "b"], ref, 1e-3, "ort")
    assert by_position.passed and by_position.outputs[0].name == "x"
    off = check_outputs(["a", "b"], [ref[0] * 1.01, ref[1]], ["a", "b"], ref, 1e-3, "ort")
    assert not off.passed and off.rel_error == pytest.approx(0.01, rel=1e-3)
    wrong = check_outputs(["a"], [np.ones((1, 5))], ["a", "b"], ref, 1e-3, "ort")
    assert not wrong.passed and "shape" in wrong.problem


QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0"]


def test_run_converts_checks_outputs_and_second_run_converts_nothing(run_cli, conv_model):
    args = [
        "run",
        "--models",
        str(conv_model),
        "--frameworks",
        "onnxruntime,mnn,openvino",
        "--format",
        "jsonl",
        *QUICK,
    ]
    first = run_cli(args)
    assert first.returncode == 0, first.stderr
    records = {r["framework"]: r for r in map(json.loads, first.stdout.splitlines())}
    for framework in ("mnn", "openvino"):
        record = records[framework]
        assert record["status"] == "ok", record["error"]
        check = record["output_check"]
        assert check["passed"] and check["max_abs_diff"] < 1e-4 and check["top1_agreement"] == 1
        assert record["artifact"]["format"] == framework and not record["artifact"]["cached"]
    assert "conversions: 2 run" in first.stderr

    second = run_cli(args)
    assert "conversions: 0 run" in second.stderr
    again = {r["framework"]: r for r in map(json.loads, second.stdout.splitlines())}
    assert again["mnn"]["artifact"]["cached"] and again["openvino"]["artifact"]["cached"]


def test_preconverted_artifact_runs_with_reference_and_mismatch_is_flagged(
    run_cli, conv_model, tmp_path, cache
):
    artifact = cache.convert(
        get_converter("openvino"), conv_model, file_sha256(conv_model), ConversionOptions()
    )
    xml = tmp_path / "given" / "net.xml"
    xml.parent.mkdir()
    shutil.copy(artifact.path / "model.xml", xml)
    shutil.copy(artifact.path / "model.bin", xml.with_suffix(".bin"))

    ok = run_cli(
        [
            "run",
            "--models",
            str(xml),
            "--frameworks",
            "openvino,onnxruntime",
            "--reference",
            str(conv_model),
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert ok.returncode == 0, ok.stderr
    records = {r["framework"]: r for r in map(json.loads, ok.stdout.splitlines())}
    assert records["openvino"]["status"] == "ok"
    assert records["openvino"]["output_check"]["passed"]
    assert records["onnxruntime"]["status"] == "skipped"
    assert "only openvino runs it" in records["onnxruntime"]["error"]

    # Same shapes, different weights: the check must catch it and keep it out of the ranking.
    other = tmp_path / "other.onnx"
    save_conv_model(other, [1, 3, 32, 32])
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(other))
    proto.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(
            np.full((8, 3, 3, 3), 0.05, np.float32), proto.graph.initializer[0].name
        )
    )
    onnx.save(proto, str(other))
    bad = run_cli(
        [
            "run",
            "--models",
            str(xml),
            "--frameworks",
            "openvino",
            "--reference",
            str(other),
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert bad.returncode == 1
    (record,) = map(json.loads, bad.stdout.splitlines())
    assert record["status"] == "mismatch"
    assert "outputs differ from ONNX Runtime" in record["error"]
    assert record["latency_ms"]["p50"] > 0  # measured, but not trusted

    bare = run_cli(
        ["run", "--models", str(xml), "--frameworks", "openvino", "--format", "jsonl", *QUICK]
    )
    (record,) = map(json.loads, bare.stdout.splitlines())
    assert record["status"] == "ok" and record["output_check"] is None
    assert any("no output check" in w for w in record["warnings"])


def test_preconverted_pair_without_its_companion_fails_alone(run_cli, tmp_path, conv_model):
    lonely = tmp_path / "lonely.param"
    lonely.write_text("7767517\n")
    result = run_cli(
        [
            "run",
            "--models",
            f"{lonely},{conv_model}",
            "--frameworks",
            "ncnn,onnxruntime",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    records = list(map(json.loads, result.stdout.splitlines()))
    lonely_records = [r for r in records if r["model"] == "lonely"]
    assert len(lonely_records) == 2
    assert all(r["status"] == "failed" and "needs lonely.bin" in r["error"] for r in lonely_records)
    conv_ort = next(r for r in records if r["model"] == "conv" and r["framework"] == "onnxruntime")
    assert conv_ort["status"] == "ok"


def test_convert_command_reports_each_format(run_cli, conv_model):
    result = run_cli(["convert", str(conv_model), "--to", "mnn,openvino"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("mnn: converted in") and "model.mnn" in lines[0]
    assert lines[1].startswith("openvino: converted in")
    again = run_cli(["convert", str(conv_model), "--to", "mnn"])
    assert again.stdout.startswith("mnn: cached")
    bad = run_cli(["convert", str(conv_model), "--to", "caffe"])
    assert bad.returncode == 2 and "choose from" in bad.stderr


def test_convert_picks_the_tflite_converter(run_cli, conv_model, tmp_path, eb_env):
    """The own writer needs no toolchain; --tflite-converter onnx2tf without its toolchain is
    one line with the install command, and the cache keeps the two apart."""
    eb_env["EDGEBENCH_TOOLCHAINS_DIR"] = str(tmp_path / "no-toolchains")
    ours = run_cli(["convert", str(conv_model), "--to", "tflite"])
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.startswith("tflite: converted in") and "model.tflite, io.json" in ours.stdout
    theirs = run_cli(
        ["convert", str(conv_model), "--to", "tflite", "--tflite-converter", "onnx2tf"]
    )
    assert theirs.returncode == 1
    assert theirs.stdout.strip() == (
        "tflite: toolchain_missing: the tflite converter needs its toolchain: "
        "edgebench toolchains install tflite"
    )
    again = run_cli(["convert", str(conv_model), "--to", "tflite"])
    assert again.stdout.startswith("tflite: cached")


@pytest.mark.toolchains
def test_run_through_the_isolated_toolchains_checks_ncnn_and_tflite(run_cli, conv_model):
    from edgebench.converters.toolchains import install_toolchain

    onnx2tf_or_skip()
    assert install_toolchain("ncnn").state == "installed"  # shared; a no-op when already there
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "ncnn,tflite",
            "--tflite-converter",
            "onnx2tf",
            "--format",
            "jsonl",
            *QUICK,
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    for framework in ("ncnn", "tflite"):
        record = records[framework]
        assert record["status"] == "ok", record["error"]
        assert record["output_check"]["passed"]
        assert record["output_check"]["max_abs_diff"] < 1e-4
        assert "io.json" in {f["name"] for f in record["artifact"]["files"]}
    assert records["tflite"]["artifact"]["converter_version"].startswith("onnx2tf-")


def test_missing_toolchain_skips_only_its_cells(run_cli, conv_model, tmp_path, eb_env):
    eb_env["EDGEBENCH_TOOLCHAINS_DIR"] = str(tmp_path / "no-toolchains")
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "ncnn,openvino,tflite",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert records["openvino"]["status"] == "ok"
    # TFLite needs no toolchain: edgebench's own writer converts it.
    tflite = records["tflite"]
    assert tflite["status"] == "ok" and tflite["output_check"]["passed"], tflite["error"]
    assert tflite["artifact"]["converter_version"].startswith("edgebench-tflite-")
    ncnn = records["ncnn"]
    assert ncnn["status"] == "skipped" and ncnn["error_kind"] == "toolchain_missing"
    assert "edgebench toolchains install ncnn" in ncnn["error"]
