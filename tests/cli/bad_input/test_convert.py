"""`edgebench convert` (and the conversions of `run`) with bad --preprocess and --calibration
values (issue 26): one error line and exit 2, a warning for what has no effect, and an
int8-weights artifact that does not depend on a calibration set it never reads."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from fakes.cli_checks import FAST, assert_no_traceback, assert_one_error_line, cli, records_of
from fakes.models import save_conv_model

from edgebench.converters import get_converter

WARNING = "edgebench: warning:"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("convert-inputs")
    rng = np.random.default_rng(18)
    out = {"model": save_conv_model(folder / "conv.onnx", [1, 3, 32, 32])}
    for name in ("set_a", "set_b"):
        out[name] = folder / f"{name}.npy"
        np.save(out[name], rng.standard_normal((10, 1, 3, 32, 32)).astype(np.float32))
    out["no_batch_axis"] = folder / "no-batch-axis.npy"
    np.save(out["no_batch_axis"], rng.standard_normal((10, 3, 32, 32)).astype(np.float32))
    poisoned = rng.standard_normal((10, 1, 3, 32, 32)).astype(np.float32)
    poisoned[6] = np.inf
    out["inf_sample"] = folder / "inf-sample.npy"
    np.save(out["inf_sample"], poisoned)
    out["garbage"] = folder / "garbage.npy"
    out["garbage"].write_bytes(b"PKnot a zip and not an npy " * 8)
    return out


def _convert(files: dict[str, Path], env: dict[str, str], *extra: str):
    return cli(["convert", str(files["model"]), "--to", "onnx-qdq", *extra], env)


@pytest.mark.parametrize("value", ["scale=1/0", "mean=1/0", "std=nan"])
def test_malformed_preprocess_number_is_one_line(files, mod_env, value):
    args = ["--precision", "int8", "--calibration", str(files["set_a"]), "--preprocess", value]
    line = assert_one_error_line(_convert(files, mod_env, *args))
    assert line.startswith("edgebench: error: --preprocess:") and value.split("=")[0] in line


def test_calibration_options_at_fp32_get_a_warning_each(files, mod_env):
    args = ["--to", "openvino", "--calibration", str(files["set_a"]), "--preprocess", "scale=1"]
    result = cli(["convert", str(files["model"]), *args], mod_env)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith(WARNING)]
    assert len(warnings) == 2, result.stderr
    for warning, option in zip(warnings, ("--calibration", "--preprocess"), strict=True):
        assert warning.startswith(f"{WARNING} {option} has no effect at fp32")


def test_calibration_that_is_no_numpy_file_is_one_line(files, mod_env):
    args = ["--precision", "int8", "--calibration", str(files["garbage"])]
    line = assert_one_error_line(_convert(files, mod_env, *args))
    assert str(files["garbage"]) in line and "pickle" not in line


def test_non_finite_calibration_sample_is_named_with_the_file(files, mod_env):
    args = ["--precision", "int8", "--calibration", str(files["inf_sample"])]
    line = assert_one_error_line(_convert(files, mod_env, *args))
    assert str(files["inf_sample"]) in line and "sample 6" in line
    assert mod_env["EDGEBENCH_CACHE"] not in line


def test_calibration_stacked_without_batch_axis_calibrates(files, mod_env):
    args = ["--precision", "int8", "--calibration", str(files["no_batch_axis"])]
    result = _convert(files, mod_env, *args)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert "calibration: 8 samples from" in result.stdout, result.stdout


# --------------------------------------------------------------------------- the cache key


def _conversion_line(stderr: str, fmt: str, precision: str) -> str:
    """How the run's one conversion to ``fmt`` ended: its time, or cached."""
    lines = [ln for ln in stderr.splitlines() if f"-> {fmt} ({precision}):" in ln]
    (outcome,) = [ln for ln in lines if not ln.endswith("...")]
    return outcome


def _run_twice(files, env, framework: str, precision: str) -> list:
    runs = []
    for name in ("set_a", "set_b"):
        args = ["run", "--models", str(files["model"]), "--frameworks", framework]
        args += ["--precision", precision, "--calibration", str(files[name]), *FAST]
        result = cli(args, env)
        assert_no_traceback(result)
        assert result.returncode == 0, result.stderr
        runs.append(result)
    return runs


def test_int8_weights_reuses_its_artifact_whatever_the_calibration(files, eb_env):
    reason = get_converter("mnn").unavailable_reason()
    if reason:
        pytest.skip(reason)
    first, second = _run_twice(files, eb_env, "mnn", "int8-weights")
    assert re.search(r": [0-9.]+ s$", _conversion_line(first.stderr, "mnn", "int8-weights"))
    assert _conversion_line(second.stderr, "mnn", "int8-weights").endswith(": cached")
    (a,), (b,) = records_of(first), records_of(second)
    assert b["artifact"]["cached"] and a["artifact"]["path"] == b["artifact"]["path"]
    # The sets still differ where they are used: the evaluation of the cell.
    assert a["quant"]["evaluation"]["sha256"] != b["quant"]["evaluation"]["sha256"]


def test_int8_converts_again_for_another_calibration(files, eb_env):
    first, second = _run_twice(files, eb_env, "onnxruntime", "int8")
    for run in (first, second):
        line = _conversion_line(run.stderr, "onnx-qdq", "int8")
        assert re.search(r": [0-9.]+ s$", line), line
    (a,), (b,) = records_of(first), records_of(second)
    assert a["artifact"]["path"] != b["artifact"]["path"]
