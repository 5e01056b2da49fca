"""`edgebench run` with counts, sizes, sweeps and pinning a user can get wrong (issue 26).

Every count and size has an upper bound (edgebench/planning/limits.py), refused in one line
that names the option, the value and the limit, before anything runs; what only the device's
memory can refuse fails its cells naming that memory. Every list option parses its commas
alike, a sweep labels its rows by the swept value, `--shapes` takes only shapes the model can
have, N instances are N running (or the record says how many were), and more threads than
pinned cores is a warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.cli_checks import (
    FAST,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model
from onnx import TensorProto, helper, save

from edgebench.errors import UserError
from edgebench.planning import limits
from edgebench.planning.config import from_options, settings
from edgebench.planning.plan_file import load_plan

ORT = ["--frameworks", "onnxruntime"]
#: FAST without ``--format jsonl``: the matrix and the cell table on stdout.
FAST_TABLE = FAST[: FAST.index("--format")]
HUGE = "99999999999999999999"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("run-options")
    relu = folder / "relu.onnx"  # one dynamic axis, and next to no work per element
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(relu))
    return {"conv": save_conv_model(folder / "conv32.onnx", [1, 3, 32, 32]), "relu": relu}


def _runs(env: dict[str, str]) -> set[Path]:
    root = Path(env["EDGEBENCH_RESULTS"])
    return {p for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def refused(args: list[str], env: dict[str, str], only_line: bool = True) -> str:
    """Run ``args``: one error line, no record, and no run stored; returns the line."""
    before = _runs(env)
    result = cli(args, env)
    line = assert_one_error_line(result, only_line=only_line)
    assert not records_of(result) and _runs(env) == before
    return line


def run_args(model: Path, *more: str, fast: list[str] = FAST) -> list[str]:
    return ["run", "--models", str(model), *ORT, *fast, *more]


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(
    ("args", "value", "limit"),
    [
        pytest.param(["--instances", HUGE], HUGE, limits.MAX_INSTANCES, id="instances-huge"),
        pytest.param(["--iterations", HUGE], HUGE, limits.MAX_ITERATIONS, id="iterations-huge"),
        pytest.param(["--threads", "1,5000"], "5000", limits.MAX_THREADS, id="threads"),
        pytest.param(["--warmup", "9" * 5000], "99999", limits.MAX_WARMUP, id="warmup-5000-digits"),
        pytest.param(["--min-time", "1e400"], "1e400", limits.MAX_SECONDS, id="min-time-1e400"),
        pytest.param(
            ["--shapes", "1x3x100000x100000"],
            "1x3x100000x100000",
            limits.MAX_TENSOR_ELEMENTS,
            id="shapes-elements",
        ),
        pytest.param(
            ["--shape", "1,3,100000,100000"],
            "1,3,100000,100000",
            limits.MAX_TENSOR_ELEMENTS,
            id="shape-elements",
        ),
    ],
)
def test_a_count_over_its_bound_is_one_line_before_anything_runs(
    mod_env, models, args, value, limit
):
    line = refused(run_args(models["conv"], *args), mod_env)
    limit_text = f"{limit:g}" if isinstance(limit, float) else str(limit)
    assert args[0] in line and value in line and f"limit of {limit_text}" in line, line


def test_a_cpu_range_over_the_bound_is_refused_not_expanded(mod_env, models):
    line = refused(run_args(models["conv"], "--cores", f"0-{HUGE}"), mod_env, only_line=False)
    assert "--cores" in line and f"limit of {limits.MAX_CPU_ID}" in line, line


def _numeric_specs():
    return [s for s in settings() if getattr(s.check, "metavar", "") in ("N", "X", "N[,N...]")]


@pytest.mark.parametrize("spec", _numeric_specs(), ids=lambda s: s.name)
def test_every_number_setting_has_an_upper_bound_on_both_sides(spec, tmp_path):
    """A huge value is refused from the command line and from a plan, by the same checker;
    the limit the message names is itself accepted."""
    messages = []
    if spec.option is not None:
        with pytest.raises(UserError) as caught:
            from_options({spec.dest: (HUGE,) if spec.repeat else HUGE})
        messages.append(str(caught.value))
        assert messages[-1].startswith(f"{spec.option}: "), messages[-1]
    if spec.plan_key is not None:
        table = f"[{spec.plan_table}]\n" if spec.plan_table else ""
        plan = tmp_path / "p.toml"
        plan.write_text(f"{table}{spec.plan_key} = {HUGE}\n")
        with pytest.raises(UserError) as caught:
            load_plan(plan)
        messages.append(str(caught.value))
        assert f"{spec.plan_key}: " in messages[-1], messages[-1]
    for message in messages:
        assert "\n" not in message
        assert re.search(r"limit of|<= |between", message), message
    bound = re.search(r"limit of ([0-9.e+]+)", messages[0])
    if bound is not None and spec.option is not None:
        at_limit = bound.group(1)
        config = from_options({spec.dest: (at_limit,) if spec.repeat else at_limit})
        value = getattr(getattr(config, spec.part), spec.name)
        assert float(value[-1] if isinstance(value, list) else value) == float(at_limit)


# --------------------------------------------------------------------------- comma lists


def _split_list_specs():
    return [s for s in settings() if s.repeat and "[," in getattr(s.check, "metavar", "")]


@pytest.mark.parametrize("spec", _split_list_specs(), ids=lambda s: s.name)
def test_every_list_option_refuses_an_empty_item_alike(spec):
    for typed in ("a,,b", "a,", ",a"):
        with pytest.raises(UserError) as caught:
            from_options({spec.dest: (typed,)})
        assert str(caught.value) == (
            f"{spec.option}: {typed!r} has an empty item; separate the items with single commas"
        )


@pytest.mark.parametrize(
    ("option", "typed"), [("--precision", "fp32,,int8"), ("--threads", "1,,2")]
)
def test_an_empty_list_item_is_one_line_from_the_cli(mod_env, models, option, typed):
    line = refused(run_args(models["conv"], option, typed), mod_env)
    assert line.endswith(
        f"{option}: {typed!r} has an empty item; separate the items with single commas"
    )


def test_other_commands_parse_their_lists_the_same_way(mod_env):
    result = cli(["devices", "--devices", "local,,local"], mod_env)
    line = assert_one_error_line(result)
    assert "--devices: 'local,,local' has an empty item" in line, line


# --------------------------------------------------------------------------- sweeps


def test_a_thread_sweep_gives_one_labelled_row_per_thread_count(mod_env, models):
    result = cli(run_args(models["conv"], "--threads", "1,2", fast=FAST_TABLE), mod_env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result)
    rows = [ln.split()[0] for ln in result.stdout.splitlines() if ln.startswith("local/")]
    assert rows == ["local/conv32/onnxruntime/1t", "local/conv32/onnxruntime/2t"], result.stdout
    notes = [ln.split(":")[0].strip() for ln in result.stdout.splitlines() if ": warning:" in ln]
    assert notes and set(notes) <= set(rows), result.stdout


def test_shapes_written_with_commas_are_one_line_naming_the_x_syntax(mod_env, models):
    line = refused(run_args(models["conv"], "--shapes", "1,3,32,32"), mod_env)
    assert "--shapes" in line and "'1,3,32,32'" in line and "(1x3x32x32)" in line, line


@pytest.mark.parametrize("typed", ["1x3x32", "x=1x3x32"])
def test_a_shape_of_the_wrong_rank_is_refused_not_relabelled(mod_env, models, typed):
    line = refused(run_args(models["conv"], "--shapes", typed), mod_env)
    assert f"--shapes {typed}:" in line and "has 4 dimensions" in line and "gives 3" in line


def test_more_threads_than_pinned_cores_is_a_warning_line(mod_env, models):
    result = cli(run_args(models["conv"], "--threads", "2", "--cores", "0"), mod_env)
    assert result.returncode == 0, result.stderr
    warnings = [ln for ln in result.stderr.splitlines() if "--threads 2 with --cores 0" in ln]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith("edgebench: warning:") and "share one core" in warnings[0]
    (record,) = records_of(result)
    assert record["status"] == "ok" and record["cores_effective"] == [0]


# --------------------------------------------------------------------------- device memory


def _mem_total_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    pytest.skip("no MemTotal in /proc/meminfo")


def test_instances_that_cannot_fit_the_devices_memory_fail_naming_it(mod_env, models):
    """N streams of an input each 1/N of the device's memory cannot fit: that cell fails
    before it runs, naming the device's memory; the plain cell at the same shape runs."""
    count = limits.MAX_INSTANCES
    elements = _mem_total_bytes() // (4 * count) + 1
    if elements > limits.MAX_TENSOR_ELEMENTS:
        pytest.skip("this machine's memory is beyond what one bounded input can exceed")
    args = ["--shape", f"1,{elements}", "--instances", str(count), "--instance-mode", "shared"]
    result = cli(run_args(models["relu"], *args), mod_env)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    plain, many = records_of(result)
    assert plain["status"] == "ok" and plain["inputs"][0]["shape"] == [1, elements]
    assert many["status"] == "failed" and many["error_kind"] == "out_of_memory", many
    assert "device local's memory" in many["error"] and "MemTotal" in many["error"]
    assert many["n_samples"] == 0 and "\n" not in many["error"]


# --------------------------------------------------------------------------- instances


@pytest.fixture(scope="module")
def thousand(mod_env, models) -> dict:
    """One run of 1000 instances sharing a load, with three timed iterations asked for."""
    args = ["--instances", "1000", "--instance-mode", "shared"]
    result = cli(run_args(models["conv"], *args), mod_env)
    assert result.returncode == 0, result.stderr
    (record,) = [r for r in records_of(result) if r["instances"]]
    return record


def test_n_instances_all_run_in_the_timed_window(thousand):
    instances = thousand["instances"]
    assert (instances["count"], instances["mode"], instances["ran"]) == (1000, "shared", 1000)
    assert thousand["n_samples"] >= 1000  # every instance timed at least once


def test_the_record_says_how_many_ran_at_once_and_warns_when_fewer(thousand):
    at_once = thousand["instances"]["at_once"]
    assert isinstance(at_once, int) and 1 <= at_once <= 1000
    fewer = [w for w in thousand["warnings"] if "instances were inferring at the same" in w]
    if at_once < 1000:
        assert fewer == [
            f"at most {at_once} of the 1000 instances were inferring at the same moment (one "
            "inference is shorter than starting them all): throughput and memory are with up "
            f"to {at_once} running, not 1000"
        ]
    else:
        assert not fewer


def test_the_report_does_not_call_fewer_all_n_running(mod_env, thousand, tmp_path):
    out = tmp_path / "report"
    result = cli(["report", thousand["run_id"], "--format", "md", "--out", str(out)], mod_env)
    assert result.returncode == 0, result.stderr
    (markdown,) = out.glob("*.md")
    text = markdown.read_text()
    at_once = thousand["instances"]["at_once"]
    if at_once < 1000:
        assert f"1000 (at most {at_once} at once)" in text
    else:
        assert "at once)" not in text
    assert "with all N running" not in text
    shown = cli(["show", thousand["run_id"]], mod_env)
    assert all(w in shown.stdout for w in thousand["warnings"] if "at once" in w)
