"""`edgebench run --plan` with plans a user can get wrong (issue 26): every relative path a
plan gives is relative to the plan's folder, a missing plan lab is reported as the plan's, and
no string from a plan reaches the terminal with a line break, a carriage return or an escape
sequence in it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakes.cli_checks import FAST, assert_one_error_line, cli, records_of
from fakes.models import save_conv_model

from edgebench.errors import UserError
from edgebench.planning.plan_file import load_plan

TIMING = "[timing]\niterations = 3\nmin_time = 0.0\nwarmup = 0\n"


def _plan(folder: Path, text: str, name: str = "p.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def _toml(value: str) -> str:
    """A TOML basic string: JSON's escapes (\\n, \\r, \\u001b) are TOML's too."""
    return json.dumps(value)


def test_a_plans_relative_paths_are_relative_to_its_folder(mod_env, tmp_path):
    """models, [checks] input and lab all name files beside the plan; the run starts from
    another folder, where none of them is."""
    folder = tmp_path / "plans"
    folder.mkdir()
    save_conv_model(folder / "tiny.onnx", [1, 3, 32, 32])
    values = np.random.default_rng(19).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(folder / "in.npy", values)
    (folder / "lab.toml").write_text("")
    plan = _plan(
        folder,
        'lab = "lab.toml"\nmodels = ["tiny.onnx"]\nframeworks = ["onnxruntime"]\n'
        f'{TIMING}[checks]\ninput = "in.npy"\n',
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = cli(["run", "--plan", str(plan), "--format", "jsonl"], mod_env, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    (record,) = records_of(result)
    assert record["status"] == "ok" and record["model_path"] == str(folder / "tiny.onnx")
    assert record["inputs"][0].get("source") == "file", record["inputs"]
    (run_json,) = sorted(Path(mod_env["EDGEBENCH_RESULTS"]).glob(f"{record['run_id']}/run.json"))
    metadata = json.loads(run_json.read_text())
    assert metadata["lab"] == str(folder / "lab.toml")
    assert metadata["config"]["checks"]["input"] == str(folder / "in.npy")


@pytest.mark.parametrize(
    ("key", "line"),
    [
        pytest.param("models", 'models = ["tiny.onnx"]\n', id="models"),
        pytest.param("input", '[checks]\ninput = "in.npy"\n', id="checks-input"),
    ],
)
def test_a_plan_path_is_not_looked_up_in_the_current_folder(mod_env, tmp_path, key, line):
    """The same file in the current folder does not stand in for the plan's missing one."""
    here = tmp_path / "here"
    here.mkdir()
    save_conv_model(here / "tiny.onnx", [1, 3, 32, 32])
    np.save(here / "in.npy", np.zeros((1, 3, 32, 32), np.float32))
    plan = _plan(tmp_path / "plans", f'frameworks = ["onnxruntime"]\n{line}')
    result = cli(
        ["run", "--plan", str(plan), "--models", str(here / "tiny.onnx"), *FAST], mod_env, cwd=here
    )
    message = assert_one_error_line(result)
    assert str(tmp_path / "plans" / Path(line.split('"')[-2]).name) in message, message


def test_a_missing_plan_lab_is_reported_as_the_plans(mod_env, tmp_path):
    plan = _plan(tmp_path / "plans", 'lab = "nolab.toml"\n')
    result = cli(["run", "--plan", str(plan), *FAST], mod_env)
    line = assert_one_error_line(result)
    assert line.startswith("edgebench: error: plan p.toml: lab:"), line
    assert str(tmp_path / "plans" / "nolab.toml") in line and "plan's folder" in line, line
    assert "--lab" not in line


HOSTILE = [
    pytest.param("night\nly", id="newline"),
    pytest.param("night\rly", id="carriage-return"),
    pytest.param("\x1b[31mred\x1b[0m", id="ansi-colour"),
    pytest.param("\x1b]0;title\x07", id="osc-title"),
    pytest.param("a\x9bb", id="c1-csi"),
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_plan_name_with_control_characters_is_one_escaped_line(mod_env, tmp_path, hostile):
    plan = _plan(tmp_path, f"name = {_toml(hostile)}\n")
    result = cli(["run", "--plan", str(plan), *FAST], mod_env)
    line = assert_one_error_line(result)
    assert line.startswith("edgebench: error: plan p.toml: name: ") and repr(hostile) in line
    for raw in ("\x1b", "\r", "\x07", "\x9b"):
        assert raw not in result.stderr + result.stdout


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize(
    "where",
    [
        pytest.param("frameworks = [{}]\n", id="frameworks"),
        pytest.param("devices = [{}]\n", id="devices"),
        pytest.param("lab = {}\n", id="lab"),
        pytest.param("[sweep]\ncores = [{}]\n", id="cores"),
        pytest.param("[telemetry]\nset_governor = {}\n", id="governor"),
    ],
)
def test_every_plan_string_with_control_characters_is_refused_escaped(tmp_path, hostile, where):
    """The plan reader (the same code the run calls) refuses them, showing them escaped."""
    plan = _plan(tmp_path, where.format(_toml(hostile)))
    with pytest.raises(UserError) as caught:
        load_plan(plan)
    message = str(caught.value)
    assert repr(hostile) in message, message
    assert message.isprintable(), message


def test_a_plan_name_without_control_characters_is_printed_as_given(mod_env, tmp_path):
    model = save_conv_model(tmp_path / "tiny.onnx", [1, 3, 32, 32])
    plan = _plan(
        tmp_path,
        f'name = "nightly ünïcode"\nmodels = [{_toml(str(model))}]\n'
        f'frameworks = ["onnxruntime"]\n{TIMING}',
    )
    result = cli(["run", "--plan", str(plan), "--format", "jsonl"], mod_env)
    assert result.returncode == 0, result.stderr
    assert "plan nightly ünïcode: no earlier good run" in result.stderr
