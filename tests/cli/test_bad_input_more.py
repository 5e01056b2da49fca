"""More bad input, as a new user would type it (issue 11): silently ignored options, empty
values, unwritable outputs, dangerous work dirs, missing keys and a stray adb server.

Same promise as test_bad_input.py: one error line naming the thing and the fix, exit 2, no
traceback, and results already collected are kept.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from fakes.cli_checks import (
    FAST,
    assert_failed_record,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model

from edgebench.errors import UserError
from edgebench.lab.cores import resolve_cores
from edgebench.lab.lab_file import load_lab
from edgebench.planning.checks import names
from edgebench.planning.config import from_options
from edgebench.planning.modelref import resolve_model, resolve_models
from edgebench.planning.plan_file import load_plan

ORT = ["--frameworks", "onnxruntime"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    """A bounded connect attempt: True when something accepts on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def run_args(model: Path, *more: str) -> list[str]:
    """`edgebench run` of one model on ONNX Runtime, quickly, records on stdout."""
    return ["run", "--models", str(model), *ORT, *FAST, *more]


def _runs(env: dict[str, str]) -> list[Path]:
    root = Path(env["EDGEBENCH_RESULTS"])
    return [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []


# --------------------------------------------------------------------------- empty values


@pytest.mark.parametrize(
    ("args", "option"),
    [
        pytest.param(["--frameworks", ""], "--frameworks", id="frameworks-empty"),
        pytest.param(["--frameworks", ","], "--frameworks", id="frameworks-comma"),
        pytest.param([*ORT, "--frameworks", ""], "--frameworks", id="frameworks-repeat-empty"),
        pytest.param(["--cores", ""], "--cores", id="cores-empty"),
        pytest.param(["--models", ""], "--models", id="models-empty"),
        pytest.param(["--shape", ""], "--shape", id="shape-empty"),
        pytest.param(["--seed", "-1"], "--seed", id="seed-negative"),
    ],
)
def test_empty_or_negative_option_is_one_error_line(run_cli, eb_env, conv_model, args, option):
    frameworks = [] if "--frameworks" in args else ORT
    result = run_cli(["run", "--models", str(conv_model), *frameworks, *FAST, *args])
    line = assert_one_error_line(result)
    assert option in line, line
    assert not records_of(result) and not _runs(eb_env)


def test_repeated_sweep_values_are_measured_once():
    config = from_options({"sweep__threads": ("1,1", "1"), "sweep__frameworks": ("a,a",)})
    assert config.sweep.threads == [1] and config.sweep.frameworks == ["a"]


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        pytest.param("devices = []\n", "devices", id="devices-empty"),
        pytest.param("frameworks = []\n", "frameworks", id="frameworks-empty"),
        pytest.param('[telemetry]\nbaseline_s = "abc"\n', "baseline_s", id="baseline-abc"),
        pytest.param("[timing]\ntimeout = 0\n", "timeout", id="timeout-zero"),
        pytest.param("[timing]\nmax_time = 0\n", "max_time", id="max-time-zero"),
    ],
)
def test_plan_value_is_refused_when_loading(tmp_path, text, mention):
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        load_plan(path)
    message = str(caught.value)
    assert "\n" not in message and path.name in message and mention in message, message


# --------------------------------------------------------------------------- models


def test_missing_or_directory_model_is_a_usage_error_before_any_run(run_cli, eb_env, tmp_path):
    for model in (tmp_path / "nope.onnx", tmp_path):
        result = run_cli(["run", "--models", str(model), *ORT, *FAST])
        line = assert_one_error_line(result)
        assert str(model) in line and ("not found" in line or "not a file" in line), line
    assert not _runs(eb_env)


def test_zero_byte_model_is_refused_at_resolution(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    ref = resolve_model(str(empty), tmp_path / "cache")
    assert ref.error and "empty (0 bytes)" in ref.error and "empty.onnx" in ref.error


def test_comma_in_an_existing_model_path_is_kept(tmp_path):
    model = save_conv_model(tmp_path / "a,b.onnx", [1, 3, 8, 8])
    assert names((f"{model},mobilenetv2",)) == [str(model), "mobilenetv2"]
    assert names(("x,y",)) == ["x", "y"]  # not files: split as before


def test_reference_on_an_onnx_model_says_it_is_ignored(tmp_path, conv_model, caplog):
    resolve_models([str(conv_model)], tmp_path / "cache", reference=conv_model)
    (message,) = [r.getMessage() for r in caplog.records if "--reference" in r.getMessage()]
    assert "--reference" in message and "ignored" in message and "conv" in message


def test_comma_path_reference_and_threads_in_one_run(run_cli, tmp_path, conv_model):
    """One real run: the comma path is one model, the --reference warning and the threads
    warning are printed, and a cell with far too many threads ends within its timeout."""
    model = save_conv_model(tmp_path / "a,b.onnx", [1, 3, 8, 8])
    threads = (os.cpu_count() or 1) * 50
    started = time.monotonic()
    result = run_cli(
        [
            *run_args(model, "--reference", str(conv_model), "--threads", str(threads)),
            *("--timeout", "5", "--baseline-s", "0"),
        ]
    )
    elapsed = time.monotonic() - started
    assert_no_traceback(result)
    (record,) = records_of(result)
    assert record["model_path"] == str(model)
    assert record["status"] == "ok" or "timed out" in record["error"], record
    assert elapsed < 60, elapsed
    warnings = [ln for ln in result.stderr.splitlines() if "warning:" in ln]
    assert any("--reference" in ln and "ignored" in ln for ln in warnings), result.stderr
    assert any(f"--threads {threads}" in ln and "cpus" in ln for ln in warnings), result.stderr


# --------------------------------------------------------------------------- shapes


@pytest.fixture(scope="module")
def dynamic_run(tmp_path_factory, mod_env):
    """ONE stored run of a model with a dynamic batch, measured at --shape 1,3,8,8."""
    folder = tmp_path_factory.mktemp("dynamic")
    model = save_conv_model(folder / "dyn.onnx", ["N", 3, 8, 8])
    result = cli(["run", "--models", str(model), *ORT, *FAST, "--shape", "1,3,8,8"], mod_env)
    assert result.returncode == 0, result.stderr
    (record,) = records_of(result)
    return record["run_id"], folder, mod_env


@pytest.fixture(scope="module")
def mod_env(tmp_path_factory, shared_models):
    """A private cache, results dir and HOME shared by this module's one-run fixtures."""
    base = tmp_path_factory.mktemp("bad-input-more-env")
    (base / "cache").mkdir()
    (base / "cache" / "models").symlink_to(shared_models, target_is_directory=True)
    (base / "home").mkdir()
    env = dict(os.environ, HOME=str(base / "home"), EDGEBENCH_CACHE=str(base / "cache"))
    env.update(EDGEBENCH_RESULTS=str(base / "results"))
    env.pop("EDGEBENCH_LAB", None)
    return env


def test_shape_is_stored_in_run_json(dynamic_run):
    run_id, _, env = dynamic_run
    meta = json.loads((Path(env["EDGEBENCH_RESULTS"]) / run_id / "run.json").read_text())
    assert meta["config"]["sweep"]["shape"] == ["1,3,8,8"]


@pytest.mark.parametrize(
    ("shape", "mention"),
    [
        pytest.param("1,3,640,640", "fixed", id="contradicts-fixed"),
        pytest.param("1,3,32", "dimensions", id="wrong-rank"),
        pytest.param("images=1,3,32,32", "images", id="unknown-input"),
    ],
)
def test_shape_that_no_model_takes_is_refused(run_cli, eb_env, conv_model, shape, mention):
    line = assert_one_error_line(run_cli(run_args(conv_model, "--shape", shape)))
    assert mention in line, line
    assert not _runs(eb_env)


def test_shape_for_a_dynamic_model_leaves_a_fixed_one_alone(tmp_path):
    from edgebench.planning.cells import resolve_inputs
    from edgebench.planning.modelref import parse_shape_overrides

    fixed = save_conv_model(tmp_path / "fixed.onnx", [1, 3, 16, 16])
    dynamic = save_conv_model(tmp_path / "dyn.onnx", [1, 3, "H", "W"])
    refs = resolve_models([str(fixed), str(dynamic)], tmp_path / "cache")
    inputs = resolve_inputs(refs, parse_shape_overrides(["1,3,64,64"]))
    assert inputs["fixed"][0]["shape"] == [1, 3, 16, 16]
    assert inputs["dyn"][0]["shape"] == [1, 3, 64, 64]


# --------------------------------------------------------------------------- writing output


def test_outputs_that_cannot_be_written_are_one_error_line(dynamic_run, tmp_path):
    run_id, folder, env = dynamic_run
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    cases = [
        ["export", run_id, "--format", "csv", "--out", str(tmp_path / "missing" / "x.csv")],
        ["export", run_id, "--format", "parquet", "--out", str(tmp_path / "missing" / "x.pq")],
        ["export", run_id, "--format", "csv", "--out", str(blocker / "x.csv")],
        ["export", run_id, "--format", "parquet", "--out", "/proc/x.parquet"],
        ["report", run_id, "--out", str(blocker / "deeper")],
        ["report", run_id, "--format", "csv", "--out", "/proc/edgebench-report"],
        ["compare", run_id, run_id, "--junit", str(tmp_path / "missing" / "j.xml")],
        ["compare", run_id, run_id, "--junit", "/proc/j.xml"],
        [
            "history",
            "--device",
            "local",
            "--model",
            "dyn",
            "--framework",
            "onnxruntime",
            "--plot",
            str(blocker / "h.svg"),
        ],
    ]
    for args in cases:
        result = cli(args, env, cwd=folder)
        line = assert_one_error_line(result, only_line=False)
        option = next(a for a in args if a in ("--out", "--junit", "--plot"))
        assert option in line, (args, line)
    # The run the outputs were made from is untouched.
    shown = cli(["show", run_id, "--format", "jsonl"], env)
    assert shown.returncode == 0 and len(records_of(shown)) == 1


@pytest.mark.parametrize(
    ("args", "mention"),
    [
        pytest.param(["--devices", "nosuch", "--model", "dyn"], "nosuch", id="unknown-device"),
        pytest.param(["--devices", "local", "--model", "nosuch"], "nosuch", id="unknown-model"),
        pytest.param(["--devices", ",", "--model", "dyn"], "--devices", id="empty-devices"),
        pytest.param(
            ["--devices", "local", "--model", "dyn", "--budget-ms", "-5"],
            "--budget-ms",
            id="negative-budget",
        ),
    ],
)
def test_recommend_refuses_what_the_run_does_not_have(dynamic_run, args, mention):
    run_id, _, env = dynamic_run
    line = assert_one_error_line(cli(["recommend", "--run", run_id, *args], env))
    assert mention in line, line
    if "nosuch" in args:
        assert "it has:" in line and ("local" in line or "dyn" in line), line


# --------------------------------------------------------------------------- devices


def test_cluster_beyond_the_device_cpus_is_named():
    with pytest.raises(UserError) as caught:
        resolve_cores("big", [0, 1], {"little": [0, 1], "big": [4, 5, 6, 7]}, "board")
    message = str(caught.value)
    assert "'big'" in message and "4-7" in message and "0-1" in message and "board" in message


@pytest.mark.parametrize("work_dir", ["/.", "/tmp/..", "/", "/tmp", "/home/bob", "~", "~/x/.."])
def test_dangerous_work_dir_is_refused(tmp_path, work_dir):
    lab = tmp_path / "lab.toml"
    lab.write_text(f'[devices.b]\ntransport = "ssh"\nhost = "h"\nwork_dir = "{work_dir}"\n')
    with pytest.raises(UserError) as caught:
        load_lab(lab)
    message = str(caught.value)
    assert "work_dir" in message and "folder of its own" in message and "\n" not in message


def test_missing_ssh_key_is_named(run_cli, tmp_path):
    lab = tmp_path / "lab.toml"
    key = tmp_path / "no-such-key"
    lab.write_text(f'[devices.b]\ntransport = "ssh"\nhost = "127.0.0.1"\nkey = "{key}"\n')
    result = run_cli(["devices", "--lab", str(lab), "--devices", "b"])
    assert_no_traceback(result)
    assert f"SSH key {key} does not exist" in result.stdout, result.stdout
    assert "Errno" not in result.stdout


def test_clean_removes_only_what_edgebench_deployed(run_cli, ssh_lab, conv_model):
    work = ssh_lab.work_dir
    lab = ssh_lab.path
    work.mkdir()
    (work / "precious.txt").write_text("not edgebench's")
    # Without edgebench's marker nothing is removed.
    result = run_cli(["clean", "--lab", str(lab), "--devices", "ssh-box"])
    assert result.returncode == 0 and "nothing removed" in result.stdout, result.stdout
    ran = run_cli(run_args(conv_model, "--lab", str(lab), "--devices", "ssh-box"))
    assert ran.returncode == 0, ran.stderr
    assert (work / "runner").is_dir() and (work / ".edgebench-deployed").is_file()
    result = run_cli(["clean", "--lab", str(lab), "--devices", "ssh-box"])
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in work.iterdir()) == ["precious.txt"], result.stdout
    assert "kept" in result.stdout
    # Once only edgebench's files are there, the folder goes too.
    (work / "precious.txt").unlink()
    run_cli(run_args(conv_model, "--lab", str(lab), "--devices", "ssh-box"))
    run_cli(["clean", "--lab", str(lab), "--devices", "ssh-box"])
    assert not work.exists()


# --------------------------------------------------------------------------- framework messages


def test_openvino_error_gives_the_reason_line():
    from edgebench.runners.backends.openvino_backend import reason_line

    text = (
        "Exception from src/inference/src/cpp/core.cpp:84:\n"
        "Check 'res.status == pugi::status_ok' failed at src/frontends/ir/src/input.cpp:219:\n"
        "Error parsing start element tag at offset 41\n\n"
    )
    assert reason_line(text) == "Error parsing start element tag at offset 41"


# --------------------------------------------------------------------------- adb server


def test_no_adb_server_is_started_implicitly(run_cli, eb_env, tmp_path, conv_model):
    port = _free_port()
    default_was_up = _listening(5037)
    lab = tmp_path / "lab.toml"
    lab.write_text(
        f'[devices.phone]\ntransport = "adb"\nserial = "EMU1"\nadb_port = {port}\n'
        f'runner = "python"\npython = "{sys.executable}"\n'
    )
    eb_env.pop("ANDROID_ADB_SERVER_PORT", None)
    result = run_cli(run_args(conv_model, "--lab", str(lab), "--devices", "phone"))
    assert_no_traceback(result)
    (record,) = records_of(result)
    assert_failed_record(record)
    assert f"adb -P {port} start-server" in record["error"], record["error"]
    time.sleep(0.5)
    assert not _listening(port)
    if not default_was_up:
        assert not _listening(5037), "edgebench started an adb server on 5037"
