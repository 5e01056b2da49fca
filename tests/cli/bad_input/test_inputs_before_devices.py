"""Inputs that cannot work are refused in one line before any device is connected (issue 40's
open items): a --cores selection that is no cpu list, a garbage --calibration or --eval array
file (alone or in a folder), and --preprocess given only arrays. Before, each was found only
after the device probe, in every cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakes.cli_checks import FAST, assert_one_error_line, cli
from fakes.models import save_conv_model

ORT = ["--frameworks", "onnxruntime", *FAST]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs-before-devices")
    out = {"model": save_conv_model(folder / "conv32.onnx", [1, 3, 32, 32])}
    out["garbage"] = folder / "calib.npz"
    out["garbage"].write_bytes(b"no zip and no numpy array " * 8)
    out["folder"] = folder / "set"
    out["folder"].mkdir()
    np.save(out["folder"] / "a.npy", np.zeros((1, 3, 32, 32), np.float32))
    (out["folder"] / "b.npy").write_bytes(b"junk " * 40)
    out["array"] = folder / "in.npy"
    np.save(out["array"], np.zeros((1, 3, 32, 32), np.float32))
    return out


def _run(files: dict[str, Path], *extra: str) -> list[str]:
    return ["run", "--models", str(files["model"]), *extra, *ORT]


@pytest.mark.parametrize(
    ("cores", "said"),
    [("5-2", "bad cpu range '5-2'"), ("-1", "'-1' is not a cpu id or range"), ("0,,1", "empty")],
)
def test_a_malformed_cpu_list_is_refused_before_the_device_probe(files, mod_env, cores, said):
    line = assert_one_error_line(cli(_run(files, "--cores", cores), mod_env))
    assert line.startswith(f"edgebench: error: --cores {cores}") and said in line


@pytest.mark.parametrize("option", ["--calibration", "--eval"])
def test_a_garbage_array_file_in_a_sample_set_is_refused_up_front(files, mod_env, option):
    for source, where in ((files["garbage"], "calib.npz"), (files["folder"], "set: b.npy")):
        args = _run(files, "--precision", "int8", option, str(source))
        line = assert_one_error_line(cli(args, mod_env))
        assert f"{option} " in line and where in line and "not a numpy array file" in line


def test_preprocess_with_only_arrays_is_refused_up_front(files, mod_env):
    args = _run(files, "--input", str(files["array"]), "--preprocess", "scale=1")
    line = assert_one_error_line(cli(args, mod_env))
    assert "--preprocess applies to images" in line and "in.npy" in line
