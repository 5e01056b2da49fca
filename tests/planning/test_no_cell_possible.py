"""A run in which no cell is possible (no framework has a backend the run names, or the lab
lists for its device) is refused in one line before anything is stored: an empty run would
become the newest, the default of `show` and of `accept`."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.cli_checks import FAST, assert_one_error_line, records_of
from fakes.models import save_conv_model


def stored_runs(env: dict[str, str]) -> list[str]:
    results = Path(env["EDGEBENCH_RESULTS"])
    return sorted(p.name for p in results.iterdir()) if results.is_dir() else []


def test_no_framework_on_the_named_backends_is_refused_before_a_run_is_stored(
    run_cli, eb_env, tmp_path
):
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 16, 16])
    first = run_cli(["run", "--models", str(model), "--frameworks", "onnxruntime", *FAST])
    assert first.returncode == 0, first.stderr
    (record,) = records_of(first)
    before = stored_runs(eb_env)
    assert before == [record["run_id"]]

    args = ["run", "--models", str(model), "--frameworks", "tensorrt", "--backends", "cpu"]
    line = assert_one_error_line(run_cli([*args, *FAST]))  # before any device is probed
    assert line == (
        "edgebench: error: no cell is possible: tensorrt has no cpu backend (it runs on cuda "
        "only); choose --frameworks and --backends that meet (docs/accelerators.md lists each "
        "framework's backends)"
    )
    assert stored_runs(eb_env) == before
    shown = run_cli(["show", "--format", "jsonl"])
    assert shown.returncode == 0, shown.stderr
    assert [json.loads(x)["run_id"] for x in shown.stdout.splitlines()] == before


def test_no_framework_on_the_labs_backends_is_refused_before_a_run_is_stored(
    run_cli, eb_env, tmp_path
):
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 16, 16])
    lab = tmp_path / "lab.toml"
    lab.write_text('[devices.here]\ntransport = "local"\nbackends = ["vulkan"]\n')
    args = ["run", "--lab", str(lab), "--devices", "here", "--models", str(model)]
    result = run_cli([*args, "--frameworks", "onnxruntime,tensorrt", *FAST])
    # The device is probed first (its lab entry holds the backends), and says so.
    line = assert_one_error_line(result, only_line=False)
    assert line.startswith(
        "edgebench: error: no cell is possible on here: onnxruntime has no vulkan backend "
        "(its accelerators: "
    )
    assert "; tensorrt has no vulkan backend (it runs on cuda only); choose --frameworks" in line
    assert stored_runs(eb_env) == []
