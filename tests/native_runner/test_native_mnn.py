"""edgebench-native with MNN, where an MNN source was given (no package registry has one, so
these skip on a machine without it, saying where to put it): the x86 build against the
Python runner's MNN wheel on the same cell, and the aarch64 build on the emulated phone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakes.adb_fixtures import EmulatedPhone
from fakes.arm_board import BOARD_PYTHON, board_lab_entry
from fakes.native_builds import convert_builtin, run_native
from fakes.records import stored_records
from fakes.runner_process import run_runner

from edgebench.builds.native_runner import BuiltRunner
from edgebench.runners import protocol


@pytest.fixture(scope="module")
def mnn_mobilenet(tmp_path_factory: pytest.TempPathFactory, shared_models: Path) -> Path:
    return convert_builtin("mobilenetv2", "mnn", tmp_path_factory.mktemp("cache"), shared_models)


def test_mnn_cell_matches_the_python_runner(
    native_x86_mnn: BuiltRunner, mnn_mobilenet: Path, tmp_path: Path
) -> None:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(mnn_mobilenet),
        "framework": "mnn",
        "warmup": 2,
        "iterations": 5,
        "min_time_s": 0,
        "seed": 5,
    }
    native = run_native(native_x86_mnn.path, {**spec, "save_outputs": str(tmp_path / "n.npz")})
    python = run_runner({**spec, "save_outputs": str(tmp_path / "p.npz")})
    assert native["status"] == "ok", native["error"]
    assert python["status"] == "ok", python["error"]
    assert native["framework_version"] == native_x86_mnn.frameworks["mnn"]
    assert native["inputs"] == python["inputs"]
    assert len(native["samples_ns"]) == 5 and len(native["warmup_samples_ns"]) == 2
    with np.load(tmp_path / "n.npz") as ours, np.load(tmp_path / "p.npz") as theirs:
        assert list(ours["__names__"]) == list(theirs["__names__"])
        np.testing.assert_allclose(ours["output_0"], theirs["output_0"], rtol=0, atol=1e-5)
    streams = run_native(native_x86_mnn.path, {**spec, "concurrency": 2, "iterations": 4})
    assert streams["status"] == "ok" and sum(streams["per_stream_counts"]) >= 4


def test_mnn_on_the_phone_without_python(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_arm_mnn: BuiltRunner,
    board_phone: EmulatedPhone,
    board_work_dir: str,
) -> None:
    entry = board_lab_entry(
        "phone", board_work_dir, phone=board_phone, extra=["emulated = false", 'runner = "auto"']
    )
    lab = tmp_path / "lab.toml"
    lab.write_text(entry.replace(f'python = "{BOARD_PYTHON}"', 'python = "/system/bin/python3"'))
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "phone"),
            *("--models", "mobilenetv2", "--frameworks", "mnn", "--precision", "fp32"),
            *("--warmup", "0", "--iterations", "3", "--min-time", "0", "--rounds", "1"),
        ],
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    (record,) = records
    assert record["status"] == "ok", record.get("error")
    assert record["device_info"]["runner"] == "edgebench-native (aarch64-linux)"
    assert record["framework_version"] == native_arm_mnn.frameworks["mnn"]
    assert record["n_samples"] == 3 and record["output_check"]["passed"]
