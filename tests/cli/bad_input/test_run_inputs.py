"""`edgebench run` with bad --input, --preprocess, --seed, --eval and --calibration values
(issue 26): one error line and exit 2 for what cannot work, a warning line for what has no
effect, a failed cell naming the user's file for a calibration set that cannot feed the model,
and no record ever lost to a NaN."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from fakes.cli_checks import (
    FAST,
    assert_failed_record,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model, save_sqrt_model

from edgebench.runners.protocol.tensors import MAX_IMAGE_SIDE, image_size_problem

WARNING = "edgebench: warning:"
ORT = ["--frameworks", "onnxruntime", *FAST]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two tiny models (32x32 and 16x16 inputs), an image and the input and calibration
    files the cases feed them."""
    folder = tmp_path_factory.mktemp("run-inputs")
    rng = np.random.default_rng(26)
    out = {
        "model": save_conv_model(folder / "conv32.onnx", [1, 3, 32, 32]),
        "small": save_conv_model(folder / "conv16.onnx", [1, 3, 16, 16]),
    }
    image = pytest.importorskip("PIL.Image")
    out["image"] = folder / "in.png"
    image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(out["image"])
    out["nan"] = folder / "nan.npy"
    np.save(out["nan"], np.full((1, 3, 32, 32), np.nan, np.float32))
    out["inf"] = folder / "inf.npz"
    np.savez(out["inf"], x=np.full((1, 3, 32, 32), np.inf, np.float32))
    out["garbage"] = folder / "garbage.npy"
    out["garbage"].write_bytes(b"these bytes are no numpy array " * 8)
    stack = rng.standard_normal((10, 3, 32, 32)).astype(np.float32)
    out["stack4"] = folder / "stack4.npy"  # (N, C, H, W): the batch axis left out
    np.save(out["stack4"], stack)
    out["stack5"] = folder / "stack5.npy"  # (N, 1, C, H, W)
    np.save(out["stack5"], stack[:, None])
    poisoned = stack.copy()
    poisoned[3, 0, 5, 5] = np.nan
    out["nan_sample"] = folder / "nan-sample.npy"
    np.save(out["nan_sample"], poisoned)
    return out


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(WARNING)]


def _png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose header claims ``width`` x ``height`` pixels (a few bytes on disk): what a
    decompression bomb looks like before it is decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )
    return path


# --------------------------------------------------------------------------- --preprocess


def test_preprocess_size_beyond_the_limit_is_one_line_before_any_run(files, eb_env):
    args = ["run", "--models", str(files["model"]), "--input", str(files["image"])]
    result = cli([*args, "--preprocess", "size=100000x100000", *ORT], eb_env)
    line = assert_one_error_line(result)
    assert "--preprocess" in line and "size=100000x100000" in line
    # The limit named is the smaller of the fixed side and what this host's memory holds.
    side = int(line.split("at most ")[1].split("x")[0])
    assert side <= MAX_IMAGE_SIDE
    source = "edgebench's limit" if side == MAX_IMAGE_SIDE else "MemAvailable in /proc/meminfo"
    assert source in line
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    assert not results.exists() or not any(results.iterdir()), "no run may start"


def test_preprocess_size_limit_is_the_smaller_of_the_fixed_side_and_free_memory():
    # 4 GB available holds less than MAX_IMAGE_SIDE squared: memory is the limit, and named.
    problem = image_size_problem(12000, 12000, available=4 * 10**9)
    assert problem is not None and "MemAvailable in /proc/meminfo" in problem
    side = int(problem.split("at most ")[1].split("x")[0])
    assert side < MAX_IMAGE_SIDE
    assert image_size_problem(side, side, available=4 * 10**9) is None
    assert image_size_problem(side + 1, side + 1, available=4 * 10**9) is not None
    # With memory to spare, the fixed side is the limit.
    problem = image_size_problem(MAX_IMAGE_SIDE + 1, 8, available=10**15)
    assert problem is not None and "edgebench's limit" in problem


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("scale=1/0", "scale"),
        ("scale=1e999", "scale"),
        ("mean=nan", "mean"),
        ("std=0.5,inf,0.5", "std"),
        ("std=1/0", "std"),
    ],
)
def test_malformed_preprocess_number_is_one_line_naming_the_key(files, mod_env, value, key):
    args = ["run", "--models", str(files["model"]), "--input", str(files["image"])]
    line = assert_one_error_line(cli([*args, "--preprocess", value, *ORT], mod_env))
    assert line.startswith("edgebench: error: --preprocess:") and f"{key}" in line


def test_image_too_big_to_decode_fails_its_cell_in_one_line(files, mod_env, tmp_path):
    bomb = _png_header_only(tmp_path / "bomb.png", 100_000, 100_000)
    args = ["run", "--models", str(files["model"]), "--input", str(bomb), *ORT]
    result = cli(args, mod_env)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    (record,) = records_of(result)
    assert_failed_record(record)
    assert record["error_kind"] == "bad_spec", record["error"]
    assert "bomb.png" in record["error"] and "megapixels" in record["error"]


# --------------------------------------------------------------------------- --input


@pytest.mark.parametrize(("name", "array"), [("nan", ""), ("inf", " (array x)")])
def test_non_finite_input_is_refused_before_any_run(files, mod_env, name, array):
    args = ["run", "--models", str(files["model"]), "--input", str(files[name]), *ORT]
    line = assert_one_error_line(cli(args, mod_env))
    assert str(files[name]) in line and f"NaN or Inf values{array}" in line


def test_input_that_is_no_numpy_file_is_one_line_without_pickle_advice(files, mod_env):
    args = ["run", "--models", str(files["model"]), "--input", str(files["garbage"]), *ORT]
    line = assert_one_error_line(cli(args, mod_env))
    assert str(files["garbage"]) in line and "not a numpy array file" in line
    assert "pickle" not in line


def _strict(line: str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(line, parse_constant=refuse)


def test_nan_outputs_never_cost_the_record(mod_env, tmp_path):
    model = save_sqrt_model(tmp_path / "sqrt.onnx")
    result = cli(["run", "--models", str(model), *ORT], mod_env)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    (line,) = [ln for ln in result.stdout.splitlines() if ln.startswith("{")]
    record = _strict(line)
    assert record["status"] == "ok", record["error"]
    (output,) = record["outputs"]
    assert output["nonfinite"] > 0 and None in output["sample"]
    # Stored, not only printed: records.jsonl holds strict JSON.
    stored = Path(mod_env["EDGEBENCH_RESULTS"]) / record["run_id"] / "records.jsonl"
    (kept,) = [_strict(ln) for ln in stored.read_text().splitlines() if ln.strip()]
    assert kept["status"] == "ok" and kept["cell_id"] == record["cell_id"]


# --------------------------------------------------------------------------- options with no effect


@pytest.mark.parametrize(
    ("extra", "option", "why"),
    [
        (["--preprocess", "scale=1/127.5"], "--preprocess", "none is given"),
        (["--calibration", "stack4"], "--calibration", "no cell is quantized"),
        (["--eval", "stack4"], "--eval", "no cell is quantized"),
        (["--seed", "7", "--input", "image"], "--seed", "with --input"),
        (
            ["--cuda-graphs"],
            "--cuda-graphs",
            "no cell runs on CUDA (this run has onnxruntime on cpu)",
        ),
    ],
)
def test_an_option_with_no_effect_gets_one_warning_line(files, mod_env, extra, option, why):
    extra = [str(files[v]) if v in files else v for v in extra]
    result = cli(["run", "--models", str(files["model"]), *extra, *ORT], mod_env)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    (warning,) = _warnings(result.stderr)
    assert warning.startswith(f"{WARNING} {option} has no effect") and why in warning
    (record,) = records_of(result)
    assert record["status"] == "ok", record["error"]


def test_options_that_take_effect_get_no_warning(files, mod_env):
    args = ["run", "--models", str(files["model"]), "--input", str(files["image"])]
    result = cli([*args, "--preprocess", "scale=1/127.5;mean=1", *ORT], mod_env)
    assert result.returncode == 0, result.stderr
    assert _warnings(result.stderr) == []


# --------------------------------------------------------------------------- --calibration


@pytest.fixture(scope="module")
def stacked_runs(files, mod_env):
    """int8 runs of both models on the same 10 samples, stacked as (N, C, H, W) and as
    (N, 1, C, H, W): the 32x32 model takes both, the 16x16 one neither."""
    models = f"{files['model']},{files['small']}"
    runs = {}
    for name in ("stack4", "stack5"):
        args = ["run", "--models", models, "--precision", "int8"]
        runs[name] = cli([*args, "--calibration", str(files[name]), *ORT], mod_env)
    return runs


def test_calibration_stack_without_batch_axis_is_n_samples(stacked_runs):
    calibrations = []
    for result in stacked_runs.values():
        assert_no_traceback(result)
        records = {r["model"]: r for r in records_of(result)}
        cell = records["conv32"]
        assert cell["status"] == "ok", cell["error"]
        # 10 samples: the last 2 evaluate, the first 8 calibrate.
        assert cell["quant"]["calibration"]["n"] == 8 and cell["accuracy"]["n"] == 2
        calibrations.append(cell["quant"]["calibration"]["sha256"])
        assert _warnings(result.stderr) == []
    assert calibrations[0] == calibrations[1], "both stackings are the same samples"


def test_calibration_stack_of_another_shape_says_the_shape_expected(stacked_runs):
    for result in stacked_runs.values():
        records = {r["model"]: r for r in records_of(result)}
        cell = records["conv16"]
        assert_failed_record(cell)
        assert "(N, 1, 3, 16, 16) or (N, 3, 16, 16)" in cell["error"], cell["error"]


def test_nan_calibration_sample_is_named_in_the_users_file(files, mod_env):
    args = ["run", "--models", str(files["model"]), "--precision", "int8"]
    result = cli([*args, "--calibration", str(files["nan_sample"]), *ORT], mod_env)
    assert_no_traceback(result)
    (record,) = records_of(result)
    assert_failed_record(record)
    assert str(files["nan_sample"]) in record["error"], record["error"]
    assert "sample 3" in record["error"] and "NaN" in record["error"]
    cache = mod_env["EDGEBENCH_CACHE"]
    assert cache not in record["error"] and "calibration-" not in record["error"]


def test_calibration_file_that_is_no_numpy_file_says_so_without_pickle(files, mod_env):
    args = ["run", "--models", str(files["model"]), "--precision", "int8"]
    result = cli([*args, "--calibration", str(files["garbage"]), *ORT], mod_env)
    # Refused before any device is connected (tests/cli/bad_input/test_inputs_before_devices.py).
    line = assert_one_error_line(result)
    assert str(files["garbage"]) in line
    assert "not a numpy array file" in line and "pickle" not in line
