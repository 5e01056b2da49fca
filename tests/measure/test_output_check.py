"""The output check's rule (allclose against the output's own scale, cosine for score vectors),
its warning for a reference that proves little, and --input: one file fed to every framework."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from fakes.local_cells import onnxruntime_cells
from fakes.toolchains import pnnx_or_skip

from edgebench.frameworks import framework_names
from edgebench.lab.device import LocalDevice
from edgebench.measure.input_files import InputFiles
from edgebench.measure.output_check import (
    CheckSettings,
    check_outputs,
    compare_arrays,
    tolerance_for,
)
from edgebench.measure.scheduler import run_cell
from edgebench.planning.cells import Cell
from edgebench.planning.checks import input_file, preprocessing
from edgebench.planning.config import TOLERANCES, CheckConfig, TimingConfig
from edgebench.results.record_warnings import BLANK_REFERENCE
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import parse_preprocess, read_input_file

FP32 = TOLERANCES["fp32"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# --- the rule on arrays ------------------------------------------------------------------------


def test_a_sparse_probability_map_is_judged_on_its_own_scale():
    rng = np.random.default_rng(0)
    # A detector's score map: logits mostly far below zero, a few strong responses.
    ref = _sigmoid(rng.normal(-12.0, 3.0, (1, 4, 32, 32))).astype(np.float32)
    assert np.median(ref) < 1e-4 < 0.05 < ref.max()
    # A correct framework: the ~1.2e-7 absolute error of a vectorised sigmoid, as measured.
    out = ref + rng.uniform(-1.2e-7, 1.2e-7, ref.shape).astype(np.float32)
    check = check_outputs(["s"], [out], ["s"], [ref], FP32, "ort")
    assert check.passed and check.criterion == "allclose" and check.ratio < 0.01
    assert check.warnings == []  # the map varies: the check does prove something

    # A wrong framework: the strongest 1% of responses off by 5%.
    wrong = ref.copy()
    wrong[ref > np.quantile(ref, 0.99)] *= 1.05
    bad = check_outputs(["s"], [wrong], ["s"], [ref], FP32, "ort")
    assert not bad.passed and bad.criterion == "allclose" and bad.ratio > 1
    assert "worst element" in bad.summary() and "outside tolerance" in bad.summary()


def test_a_map_that_is_tiny_everywhere_passes_and_is_called_blank():
    """The issue's text detector on seeded noise: no response anywhere, so ||ref|| is tiny and
    the relative L2 rule divided a 1e-7 sigmoid error by nearly nothing."""
    rng = np.random.default_rng(0)
    ref = _sigmoid(rng.normal(-16.0, 1.5, (1, 4, 32, 32))).astype(np.float32)
    out = ref + rng.uniform(-1.2e-7, 1.2e-7, ref.shape).astype(np.float32)
    check = check_outputs(["s"], [out], ["s"], [ref], FP32, "ort", "the seeded input")
    assert check.rel_error > 1e-3  # the relative L2 rule would have called this a mismatch
    assert check.passed and check.ratio < 0.5
    (warning,) = (w.message for w in check.warnings)
    assert "close to zero everywhere" in warning and "--input" in warning


def test_excess_is_the_worst_elements_error_over_its_bound():
    ref = np.linspace(-2.0, 4.0, 300).reshape(1, 100, 3)  # 100 rows: not a score vector
    out = ref.copy()
    bound = FP32.rtol * abs(ref[0, 41, 2]) + FP32.rtol * 4.0  # atol = rtol x peak |ref|
    out[0, 41, 2] += 1.5 * bound
    cmp = compare_arrays("y", "y", out, ref, FP32)
    assert cmp.excess == pytest.approx(1.5, rel=1e-6)
    assert cmp.worst_index == [0, 41, 2]
    assert cmp.over_fraction == pytest.approx(1 / 300)
    assert cmp.atol == pytest.approx(4e-3) and cmp.rtol == FP32.rtol
    assert not cmp.passed and cmp.ratio == cmp.excess
    out[0, 41, 2] = ref[0, 41, 2] + 0.5 * bound
    assert compare_arrays("y", "y", out, ref, FP32).passed


def test_logits_are_also_held_to_a_cosine_and_report_top_k():
    rng = np.random.default_rng(1)
    ref = rng.normal(0.0, 3.0, (1, 1000))
    close = ref + rng.normal(0.0, 1e-5, ref.shape)
    ok = compare_arrays("logits", "logits", close, ref, FP32)
    assert ok.passed and ok.score_vector and ok.top5_agreement == 1.0
    assert ok.score_cosine == pytest.approx(1.0, abs=1e-9)

    # Every element just inside its allclose bound, with random signs: together the logits
    # have drifted, and the cosine (centred: logits are shift-invariant) says so.
    bound = FP32.rtol * np.abs(ref) + FP32.rtol * np.max(np.abs(ref))
    drifted = ref + 0.9 * bound * rng.choice([-1.0, 1.0], ref.shape)
    cmp = compare_arrays("logits", "logits", drifted, ref, FP32)
    assert cmp.excess < 1.0
    assert not cmp.passed and cmp.criterion == "cosine" and cmp.ratio > 1
    check = check_outputs(["logits"], [drifted], ["logits"], [ref], FP32, "ort")
    assert check.criterion == "cosine" and "1 - cosine" in check.summary()


def test_a_detector_output_is_not_a_score_vector():
    ref = np.random.default_rng(2).normal(size=(1, 6300, 85))
    assert not compare_arrays("d", "d", ref, ref, FP32).score_vector


def test_integer_outputs_must_match_exactly():
    ref = np.array([[3, 998, 12]], dtype=np.int64)
    assert compare_arrays("idx", "idx", ref.copy(), ref, FP32).passed
    off_by_one = ref + np.array([[0, 1, 0]])
    assert not compare_arrays("idx", "idx", off_by_one, ref, FP32).passed


def test_nan_where_the_reference_is_finite_fails():
    ref = np.ones((1, 8))
    out = ref.copy()
    out[0, 3] = np.nan
    cmp = compare_arrays("y", "y", out, ref, FP32)
    assert not cmp.passed and cmp.worst_index == [0, 3]


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        (np.full((1, 64), 5.0) + np.linspace(0, 1e-6, 64), "near-constant"),
        (np.zeros((1, 64)), "zero everywhere"),
        (np.array([[1.0, np.nan, 2.0]]), "not finite"),
    ],
    ids=["near-constant", "all-zero", "nan"],
)
def test_a_reference_that_proves_little_is_named_with_input_as_the_way_out(ref, reason):
    out = np.where(np.isfinite(ref), np.median(ref[np.isfinite(ref)]), ref)
    check = check_outputs(["y"], [out], ["y"], [ref], FP32, "ort", "the seeded input")
    (warning,) = (w.message for w in check.warnings)
    assert reason in warning and "--input" in warning and "proves little" in warning


def test_a_varied_reference_gets_no_warning():
    ref = np.random.default_rng(3).normal(size=(1, 64))
    assert check_outputs(["y"], [ref], ["y"], [ref], FP32, "ort").warnings == []


def test_tolerance_sets_rtol_and_scales_the_cosine_gap_with_its_square():
    assert tolerance_for("fp16") == TOLERANCES["fp16"]
    looser = tolerance_for("fp32", 1e-2)
    assert looser.rtol == 1e-2 and looser.cosine_gap == pytest.approx(FP32.cosine_gap * 100)
    assert looser.atol_floor == FP32.atol_floor
    assert CheckSettings.from_config(CheckConfig(tolerance=2e-3)).tolerance["fp32"] == 2e-3


def test_the_record_keeps_the_old_keys_and_says_what_decided():
    ref = np.random.default_rng(4).normal(size=(1, 10))
    record = check_outputs(["y"], [ref], ["y"], [ref], FP32, "ort").to_dict()
    for key in ("max_abs_diff", "rel_error", "cosine", "top1_agreement", "passed", "tolerance"):
        assert key in record
    assert record["rule"] == "allclose" and record["tolerance"] == FP32.rtol
    assert record["criterion"] in ("allclose", "cosine") and record["criterion_output"] == "y"
    assert record["ratio"] <= 1 and record["outputs"][0]["excess"] == 0.0
    json.dumps(record)  # stored as a JSON line


# --- a real model with a sparse sigmoid head -------------------------------------------------

QUICK = ["--warmup", "1", "--iterations", "3", "--min-time", "0", "--format", "jsonl"]
CONVERTED = {"mnn": "mnn", "ncnn": "ncnn", "openvino": "openvino"}


def _installed(frameworks: list[str]) -> list[str]:
    """Those whose runtime is here and, for ncnn, whose converter can be installed (pnnx, on
    first use): an ncnn cell of an ONNX model needs it, and with two test processes this test
    may run before any other installed it."""
    facts = LocalDevice().facts()
    found = [f for f in frameworks if f in framework_names() and facts.framework_available(f)]
    if "ncnn" in found:
        try:
            pnnx_or_skip()
        except pytest.skip.Exception:
            found.remove("ncnn")
    return found


def _records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_a_sparse_detector_passes_on_correct_frameworks_and_a_corrupted_copy_does_not(
    run_cli, sparse_detector
):
    good, corrupted = sparse_detector
    frameworks = _installed(["onnxruntime", "openvino", "mnn", "ncnn"])
    assert "onnxruntime" in frameworks
    run = run_cli(["run", "--models", str(good), "--frameworks", ",".join(frameworks), *QUICK])
    records = _records(run.stdout)
    assert sorted(r["framework"] for r in records) == sorted(frameworks), run.stderr
    for record in records:
        check = record["output_check"]
        assert record["status"] == "ok", (record["framework"], record["error"])
        assert check["passed"] and check["criterion"] == "allclose" and check["ratio"] < 0.5
        assert not any("proves little" in w for w in record["warnings"])

    converted = [f for f in frameworks if f in CONVERTED]
    if not converted:
        pytest.skip("no converting framework installed")
    made = run_cli(["convert", str(corrupted), "--to", ",".join(CONVERTED[f] for f in converted)])
    assert made.returncode == 0, made.stderr
    artifacts = [
        str(Path(folder) / first)
        for folder, first in re.findall(r"-> (\S+) \(([^,)]+)", made.stdout)
    ]
    assert len(artifacts) == len(converted), made.stdout
    models, names = ",".join(artifacts), ",".join(converted)
    run = run_cli(
        ["run", "--models", models, "--frameworks", names, "--reference", str(good), *QUICK]
    )
    measured = [r for r in _records(run.stdout) if r["status"] != "skipped"]
    assert sorted(r["framework"] for r in measured) == sorted(converted), run.stderr
    for record in measured:
        assert record["status"] == "mismatch", (record["framework"], record["error"])
        assert record["output_check"]["criterion"] == "allclose"
        assert record["output_check"]["ratio"] > 5
        assert "worst element" in record["error"]
    assert run.returncode == 1


# --- --input: one file for every framework ---------------------------------------------------


def test_preprocess_text_and_its_checker():
    settings = parse_preprocess("mean=0.5,0.4,0.3; std=0.2 layout=NHWC;size=32x48;scale=1/255")
    assert settings["mean"] == [0.5, 0.4, 0.3] and settings["std"] == [0.2]
    assert settings["layout"] == "nhwc" and settings["size"] == [32, 48]
    assert settings["scale"] == pytest.approx(1 / 255)
    for bad, word in [("mean=a", "mean"), ("colour=rgb", "key"), ("size=0", "size")]:
        with pytest.raises(ValueError, match=word):
            preprocessing(bad)


def test_input_checker_wants_an_existing_supported_file(tmp_path):
    array = tmp_path / "x.npy"
    np.save(array, np.zeros(3))
    assert input_file(str(array)) == array
    with pytest.raises(ValueError, match="no such file"):
        input_file(str(tmp_path / "missing.npz"))
    (tmp_path / "x.csv").write_text("1,2")
    with pytest.raises(ValueError, match=r"\.npy or \.npz"):
        input_file(str(tmp_path / "x.csv"))


def test_arrays_and_images_become_the_models_tensors(tmp_path):
    spec = InputSpec("x", [1, 3, 8, 6], "float32")
    np.save(tmp_path / "x.npy", np.ones((3, 8, 6)))  # batch axis added
    (tensor,) = read_input_file(str(tmp_path / "x.npy"), [spec]).values()
    assert tensor.shape == (1, 3, 8, 6) and tensor.dtype == np.float32
    np.savez(tmp_path / "wrong.npz", y=np.ones((1, 3, 8, 6)), z=np.ones(2))
    with pytest.raises(ValueError, match="one array per input name"):
        read_input_file(str(tmp_path / "wrong.npz"), [spec])
    with pytest.raises(ValueError, match="wants"):
        read_input_file(str(tmp_path / "x.npy"), [InputSpec("x", [1, 3, 4, 4], "float32")])

    image = pytest.importorskip("PIL.Image")
    pixels = np.zeros((10, 12, 3), dtype=np.uint8)
    pixels[..., 0] = 255  # pure red
    image.fromarray(pixels).save(tmp_path / "red.png")
    (tensor,) = read_input_file(
        str(tmp_path / "red.png"), [spec], "mean=0.5;std=0.5;scale=1/255"
    ).values()
    assert tensor.shape == (1, 3, 8, 6)
    assert np.allclose(tensor[0, 0], 1.0) and np.allclose(tensor[0, 1:], -1.0)
    nhwc = InputSpec("x", [1, 8, 6, 3], "float32")
    (tensor,) = read_input_file(str(tmp_path / "red.png"), [nhwc]).values()
    assert tensor.shape == (1, 8, 6, 3) and np.allclose(tensor[0, :, :, 0], 1.0)


def _cell(model_path: Path) -> tuple[Cell, LocalDevice]:
    device = LocalDevice()
    (cell,) = onnxruntime_cells(model_path, device, TimingConfig(warmup=1, iterations=3))
    return cell, device


def test_an_input_file_is_what_the_runner_times_and_the_check_compares(tmp_path, conv_model):
    zeros = tmp_path / "zeros.npz"
    np.savez(zeros, x=np.zeros((1, 3, 32, 32), np.float32))
    checks = CheckSettings(input=InputFiles(zeros))
    record = run_cell("input-test", *_cell(conv_model), checks)
    assert record.status == "ok", record.error
    # The conv has no bias: zeros in, zeros out. Seeded inputs would give anything but.
    (output,) = record.outputs
    assert output["min"] == output["max"] == 0.0
    assert record.inputs[0]["source"] == "file"
    assert record.output_check.passed
    (warning,) = [w.message for w in record.warnings if w.is_a(BLANK_REFERENCE)]
    assert "--input zeros.npz" in warning and "zero everywhere" in warning

    seeded = run_cell("input-test", *_cell(conv_model), CheckSettings())
    assert seeded.outputs[0]["max"] > 0 and "source" not in seeded.inputs[0]


def test_an_input_that_does_not_fit_fails_its_cell_with_the_reason(tmp_path, conv_model):
    small = tmp_path / "small.npy"
    np.save(small, np.zeros((1, 3, 4, 4), np.float32))
    record = run_cell("input-test", *_cell(conv_model), CheckSettings(input=InputFiles(small)))
    assert record.status == "failed" and record.error_kind == "bad_spec"
    assert "--input" in record.error and "[1, 3, 32, 32]" in record.error


def test_an_all_nan_output_is_judged_without_numpys_all_nan_warning() -> None:
    # numpy's nanmax warns "All-NaN slice encountered" on the terminal; the comparison itself
    # says what is wrong (a NaN maximum difference, a failed check).
    reference = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare_arrays("y", "y", np.full((3, 4), np.nan, np.float32), reference)
        blank = compare_arrays("y", "y", reference, np.full((3, 4), np.nan, np.float32))
    assert np.isnan(result.max_abs_diff) and not result.passed
    assert result.peak == 1.0
    assert np.isnan(blank.peak) and not blank.passed
