"""One run configuration: every plan key reaches the run, and the command line and plan files
check values with the same rules."""

import json
from pathlib import Path

import pytest
from fakes.models import save_conv_model

from edgebench.errors import UserError
from edgebench.measure.session import _resolve_matrix
from edgebench.planning.cells import target_ci_fraction
from edgebench.planning.config import RunConfig, from_options, settings
from edgebench.planning.plan_file import load_plan

#: A value other than the default for every key a plan file may set: (table, key) -> TOML text.
#: Adding a plan key without a line here fails test_every_plan_key_is_exercised.
PLAN_VALUES = {
    ("", "devices"): '["local"]',
    ("", "models"): None,  # the test's model
    ("", "frameworks"): '["onnxruntime"]',
    ("sweep", "threads"): "[2]",
    ("sweep", "cores"): '["0"]',
    ("sweep", "precision"): '["fp32", "fp16"]',
    ("sweep", "backends"): '["cpu"]',
    ("sweep", "concurrency"): "2",
    ("sweep", "shape"): '["1,3,40,40"]',
    ("sweep", "instances"): "[1, 2]",
    ("sweep", "instance_mode"): '["shared"]',
    ("sweep", "shapes"): '["1x3x32x32"]',
    ("sweep", "shape_mode"): '["dynamic"]',
    ("sweep", "prompt_tokens"): "[32, 64]",
    ("sweep", "gen_tokens"): "16",
    ("sweep", "context_depth"): "8",
    ("sweep", "weights"): '["q8_0"]',
    ("breakdown", "profile"): '["ops"]',
    ("breakdown", "profile_iterations"): "2",
    ("breakdown", "no_stages"): "true",
    ("breakdown", "cuda_graphs"): "true",
    ("timing", "warmup"): "3",
    ("timing", "iterations"): "7",
    ("timing", "min_time"): "0.05",
    ("timing", "max_time"): "30.0",
    ("timing", "timeout"): "300.0",
    ("timing", "rounds"): "2",
    ("timing", "target_ci"): "40.0",
    ("timing", "sustained"): None,  # changes what is measured: checked on its own below
    ("telemetry", "energy_source"): '"none"',
    ("telemetry", "baseline_s"): "0.1",
    ("telemetry", "period_s"): "0.02",
    ("telemetry", "sync_marker"): None,  # a path in tmp_path
    ("telemetry", "cooldown_temp"): "150.0",
    ("telemetry", "cooldown_max_wait"): "5.0",
    ("telemetry", "set_governor"): '"performance"',
    ("telemetry", "fixed_performance"): "true",
    ("telemetry", "temp_limit"): "90.0",
    ("checks", "seed"): "7",
    ("checks", "input"): None,  # needs a file: tests/measure/test_output_check.py feeds one
    ("checks", "preprocess"): '"mean=0.5;std=0.25;layout=nchw"',
    ("checks", "reference"): None,  # the test's model
    ("checks", "tolerance"): "0.01",
    ("checks", "tolerance_fp16"): "0.05",
    ("checks", "tflite_converter"): '"onnx2tf"',
    ("checks", "from_tflite"): '"direct"',
    ("quantization", "calibration"): None,  # needs files: tests/quantization/ feeds them
    ("quantization", "eval"): None,
    ("quantization", "calibration_samples"): "5",
    ("quantization", "eval_samples"): "3",
    ("quantization", "int8_min_top1"): "0.5",
    ("quantization", "int8_min_sqnr"): "12.5",
    ("thresholds", "min_effect"): "0.3",
    ("thresholds", "alpha"): "0.05",
    ("thresholds", "metric"): '"p90"',
    ("thresholds", "gate"): '"last-run"',
    ("thresholds", "history_nights"): "12",
}


def plan_keys() -> set[tuple[str, str]]:
    return {(s.plan_table, s.plan_key) for s in settings() if s.plan_key is not None}


def test_every_plan_key_is_exercised():
    assert set(PLAN_VALUES) == plan_keys()


def write_full_plan(folder: Path, model: Path, *, sustained: bool = False) -> Path:
    values = dict(PLAN_VALUES)
    values["", "models"] = json.dumps([str(model)])
    values["checks", "reference"] = json.dumps(str(model))
    values["telemetry", "sync_marker"] = json.dumps(str(folder / "window-marker"))
    values["timing", "sustained"] = "1.5" if sustained else None
    lines = ['name = "every-key"']
    lines += [f"{key} = {text}" for (table, key), text in values.items() if table == ""]
    for table in (
        "sweep",
        "timing",
        "breakdown",
        "telemetry",
        "checks",
        "quantization",
        "thresholds",
    ):
        lines.append(f"[{table}]")
        lines += [
            f"{key} = {text}"
            for (t, key), text in values.items()
            if t == table and text is not None
        ]
    path = folder / "every-key.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_plan_key_reaches_the_configuration_and_what_is_built_from_it(tmp_path):
    model = save_conv_model(tmp_path / "dyn.onnx", [1, 3, "h", "w"])
    plan = load_plan(write_full_plan(tmp_path, model))
    config = plan.apply(RunConfig())
    sweep, timing, tele, checks, thr = (
        config.sweep,
        config.timing,
        config.telemetry,
        config.checks,
        config.thresholds,
    )
    assert (sweep.devices, sweep.models, sweep.frameworks) == (
        ["local"],
        [str(model)],
        ["onnxruntime"],
    )
    assert (sweep.threads, sweep.cores, sweep.precision) == ([2], ["0"], ["fp32", "fp16"])
    assert (sweep.concurrency, sweep.shape, sweep.backends) == (2, ["1,3,40,40"], ["cpu"])
    assert (sweep.instances, sweep.instance_mode) == ([1, 2], ["shared"])
    assert (sweep.shapes, sweep.shape_mode) == (["1x3x32x32"], ["dynamic"])
    assert (sweep.prompt_tokens, sweep.gen_tokens, sweep.context_depth) == ([32, 64], 16, 8)
    assert sweep.weights == ["q8_0"]
    b = config.breakdown
    assert (b.profile, b.profile_iterations, b.no_stages) == (["ops"], 2, True)
    assert (timing.rounds, timing.target_ci_pct) == (2, 40.0)
    assert (checks.seed, checks.reference) == (7, model)
    assert checks.tolerances() == {"fp32": 0.01, "fp16": 0.05}
    assert checks.tflite_converter == "onnx2tf"
    assert checks.from_tflite == "direct"
    quant = config.quantization
    assert (quant.calibration_samples, quant.eval_samples) == (5, 3)
    assert (quant.int8_min_top1, quant.int8_min_sqnr_db) == (0.5, 12.5)
    assert (thr.min_effect, thr.alpha, thr.metric) == (0.3, 0.05, "p90")
    assert (thr.gate, thr.history_nights) == ("last-run", 12)
    assert config.plan_name == "every-key"

    built = _resolve_matrix(config).timing
    assert (built.warmup, built.iterations, built.min_time_s) == (3, 7, 0.05)
    assert (built.max_time_s, built.timeout_s, target_ci_fraction(built)) == (30.0, 300.0, 0.4)
    settings_ = config.telemetry
    assert (settings_.energy_source, settings_.baseline_s, settings_.period_s) == (
        "none",
        0.1,
        0.02,
    )
    assert settings_.sync_marker == tele.sync_marker == str(tmp_path / "window-marker")
    assert (settings_.cooldown_temp_c, settings_.cooldown_max_wait_s) == (150.0, 5.0)
    assert (settings_.set_governor, settings_.temp_limit_c) == ("performance", 90.0)
    assert settings_.fixed_performance is True

    sustained = plan_with_sustained = load_plan(write_full_plan(tmp_path, model, sustained=True))
    window = _resolve_matrix(sustained.apply(RunConfig())).timing
    assert plan_with_sustained.get("timing", "sustained_s") == 1.5
    assert window.sustained_s and window.min_time_s == 1.5


def test_a_plan_run_stores_every_key_and_uses_the_telemetry_keys(run_cli, eb_env, tmp_path):
    model = save_conv_model(tmp_path / "dyn.onnx", [1, 3, "h", "w"])
    plan = write_full_plan(tmp_path, model)
    result = run_cli(["run", "--plan", str(plan), "--format", "jsonl"])
    assert result.returncode in (0, 1), result.stderr  # fp16 on ONNX Runtime is unsupported
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (run_json,) = Path(eb_env["EDGEBENCH_RESULTS"]).glob("*/run.json")
    stored = json.loads(run_json.read_text())["config"]
    expected = load_plan(plan).values
    for (part, name), value in expected.items():
        assert stored[part][name] == (str(value) if isinstance(value, Path) else value), name

    assert {r["precision"] for r in records} == {"fp32", "fp16"}
    plain = [r for r in records if not r["instances"] and not r["shape"]]
    (ok,) = [r for r in plain if r["status"] == "ok"]
    assert (ok["threads"], ok["cores"], ok["concurrency"], ok["rounds"]) == (2, "0", 2, 2)
    assert ok["inputs"][0]["shape"] == [1, 3, 40, 40]
    assert ok["stages"] is None and ok["op_profile"]["iterations"] == 2
    (shared,) = [r for r in records if r["instances"] and r["status"] == "ok"]
    assert (shared["instances"]["count"], shared["instances"]["mode"]) == (2, "shared")
    (dynamic,) = [r for r in records if r["shape"] and r["status"] == "ok"]
    assert dynamic["shape"]["mode"] == "dynamic"
    assert dynamic["shape"]["change"]["from"][0]["shape"] == [1, 3, 40, 40]
    # The keys that were once dropped between the plan and the runner:
    assert ok["telemetry"]["period_s"] == pytest.approx(0.02)
    assert ok["telemetry"]["cooldown"]["limit_c"] == 150.0
    # This host is no Android device: the mode is not set, and the record says why.
    assert ok["fixed_performance"] is None
    assert any(w.startswith("--fixed-performance not applied") for w in ok["warnings"])


@pytest.mark.parametrize(
    ("option", "raw", "problem"),
    [
        ("--threads", ("0",), "must be whole numbers >= 1, e.g. 1,4"),
        ("--iterations", "-1", "must be a whole number >= 1"),
        ("--telemetry-period", "0.001", "must be a number >= 0.005"),
        ("--precision", ("int4",), "'int4' is not one of fp32, fp16, int8, int8-weights"),
        ("--seed", "-1", "must be a whole number >= 0"),
    ],
)
def test_command_line_and_plan_share_the_checkers(tmp_path, option, raw, problem):
    spec = next(s for s in settings() if s.option == option)
    with pytest.raises(UserError) as from_cli:
        from_options({spec.dest: raw})
    assert str(from_cli.value) == f"{option}: {problem}"

    plan_value = raw[0] if isinstance(raw, tuple) else raw
    table = f"[{spec.plan_table}]\n" if spec.plan_table else ""
    number = plan_value.lstrip("-").replace(".", "", 1).isdigit()
    text = plan_value if number else json.dumps(plan_value)
    path = tmp_path / "p.toml"
    path.write_text(f"{table}{spec.plan_key} = {text}\n")
    with pytest.raises(UserError) as from_plan:
        load_plan(path)
    assert str(from_plan.value).endswith(f"{spec.plan_key}: {problem}")


def test_docs_list_every_setting():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    missing = [s.name for s in settings() if f"| {s.part} | `{s.name}` |" not in doc]
    assert not missing, f"docs/configuration.md lacks {missing}"
