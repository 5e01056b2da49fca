"""The on-device runner, run as a subprocess exactly as a device runs it."""

import json
import os
import re
import subprocess

import pytest
from fakes.models import save_conv_model, save_sqrt_model
from fakes.result_contract import assert_fits_protocol
from fakes.runner_process import RUNNER_ARGV, run_runner

from edgebench.lab.runner_tree import RUNNER_PACKAGE
from edgebench.runners.backends import discover


def spec_for(model_path, **extra):
    spec = {
        "schema": "edgebench.spec/1",
        "model": str(model_path),
        "framework": "onnxruntime",
        "threads": 1,
        "warmup": 2,
        "iterations": 25,
        "min_time_s": 0.0,
    }
    spec.update(extra)
    return spec


def test_runner_measures_pins_and_reports_memory(conv_model):
    result = run_runner(spec_for(conv_model, cores=[0]))
    assert result["schema"] == "edgebench.result/1"
    assert result["status"] == "ok", result["error"]
    assert result["cores_effective"] == [0]
    assert len(result["samples_ns"]) == 25
    assert all(isinstance(s, int) and s > 0 for s in result["samples_ns"])
    assert len(result["warmup_samples_ns"]) == 2
    assert result["stop_reason"] == "target_reached"
    assert result["peak_rss_kb"] > 0
    assert result["peak_rss_kb"] >= result["rss_before_load_kb"] > 0
    assert result["load_ns"] > 0 and result["first_inference_ns"] > 0
    assert result["framework_version"]
    (output,) = result["outputs"]
    assert output["shape"] == [1, 8, 32, 32]
    assert output["std"] > 0 and len(output["sample"]) > 0


@pytest.mark.parametrize(
    "extra",
    [
        {"stages": True, "profile_ops": 2, "target_ci": 0.5, "cores": [0]},
        {"instances": 2, "concurrency": 2, "instance_mode": "shared"},
        {"telemetry": {"period_s": 0.01, "baseline_s": 0.05}, "min_time_s": 0.1},
        {"threads": "two"},  # a bad spec: the result fits, its header without the bad value
    ],
    ids=["stages-profile-ci", "instances", "telemetry", "bad-spec"],
)
def test_the_python_runners_real_results_fit_the_schema(conv_model, extra):
    result = run_runner(spec_for(conv_model, **extra))
    assert_fits_protocol(result)
    if "threads" in extra:
        assert result["error"]["kind"] == "bad_spec" and result["threads"] is None
    else:
        assert result["status"] == "ok", result["error"]
        named = {"stages": {"stages", "op_profile", "median_ci"}, "telemetry": {"telemetry"}}
        parts = next((named[k] for k in extra if k in named), {"instances"})
        assert parts <= set(result), sorted(result)


def test_affinity_follows_the_spec_on_every_cpu(conv_model):
    for cpu in sorted(os.sched_getaffinity(0)):
        result = run_runner(spec_for(conv_model, cores=[cpu], iterations=3))
        assert result["cores_effective"] == [cpu]


def test_same_seed_gives_same_outputs_and_a_new_seed_differs(conv_model):
    a = run_runner(spec_for(conv_model, iterations=2, seed=7))
    b = run_runner(spec_for(conv_model, iterations=2, seed=7))
    c = run_runner(spec_for(conv_model, iterations=2, seed=8))
    assert a["outputs"][0]["sample"] == b["outputs"][0]["sample"]
    assert a["outputs"][0]["sample"] != c["outputs"][0]["sample"]


def test_min_time_keeps_iterating_past_the_iteration_count(conv_model):
    result = run_runner(spec_for(conv_model, iterations=1, min_time_s=0.3))
    assert result["status"] == "ok"
    assert result["measure_wall_ns"] >= 0.3e9
    assert len(result["samples_ns"]) > 1


def test_max_iterations_caps_the_loop(conv_model):
    result = run_runner(spec_for(conv_model, iterations=50, max_iterations=7))
    assert len(result["samples_ns"]) == 7
    assert result["stop_reason"] == "max_iterations"


def test_concurrent_streams_report_every_request(conv_model):
    # A 0.3 s window: long enough that both streams are scheduled even on a loaded machine.
    result = run_runner(spec_for(conv_model, concurrency=2, iterations=40, min_time_s=0.3))
    assert result["status"] == "ok", result["error"]
    counts = result["per_stream_counts"]
    assert len(counts) == 2 and all(c > 0 for c in counts)
    assert sum(counts) == len(result["samples_ns"]) >= 40
    assert len(result["warmup_samples_ns"]) == 4  # warm-up runs on every stream


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"schema": "edgebench.spec/99"}, "bad_spec"),
        ({"threads": 0}, "bad_spec"),
        ({"framework": "tensorflow-js"}, "bad_spec"),
        ({"model": "/nonexistent/model.onnx"}, "model_load"),
        ({"cores": [4096]}, "pinning"),
        ({"inputs": [{"name": "nope", "shape": [1, 3, 8, 8]}]}, "bad_spec"),
    ],
)
def test_errors_are_structured(conv_model, change, kind):
    result = run_runner(spec_for(conv_model, **change))
    assert result["status"] == "failed"
    assert result["error"]["kind"] == kind
    assert result["error"]["message"]


def test_a_cell_that_fails_after_the_load_still_reports_what_it_measured(conv_model):
    result = run_runner(spec_for(conv_model, inputs=[{"name": "nope", "shape": [1, 3, 8, 8]}]))
    assert result["error"]["kind"] == "bad_spec"
    assert result["framework_version"] and result["load_ns"] > 0
    assert result["rss_before_load_kb"] > 0 and result["cores_effective"]
    assert result["samples_ns"] == [] and result["outputs"] is None


def test_corrupt_model_is_a_model_load_error(corrupt_model):
    result = run_runner(spec_for(corrupt_model))
    assert result["status"] == "failed"
    assert result["error"]["kind"] == "model_load"
    assert "onnxruntime could not load" in result["error"]["message"]


def test_unreadable_spec_still_yields_one_result():
    result = run_runner("{not json")
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"


def test_framework_noise_on_stdout_cannot_corrupt_the_result(conv_model, tmp_path):
    # A native library printing on fd 1 is simulated by a sitecustomize that writes there.
    (tmp_path / "sitecustomize.py").write_text(
        "import os\nos.write(1, b'noise from a native library\\n')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"],
        input=__import__("json").dumps(spec_for(conv_model, iterations=2)),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.stdout.splitlines()[-1].startswith("EDGEBENCH_RESULT ")


def test_nan_outputs_give_a_strict_json_result_line(tmp_path):
    """NaN is no JSON: the runner writes it as null, so a host that reads its result line
    strictly still gets the measurement."""
    model = save_sqrt_model(tmp_path / "sqrt.onnx")
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"],
        input=json.dumps(spec_for(model, iterations=2)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("EDGEBENCH_RESULT ")]

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the result line")

    result = json.loads(line.split(" ", 1)[1], parse_constant=refuse)
    assert result["status"] == "ok", result["error"]
    (output,) = result["outputs"]
    assert output["nonfinite"] > 0 and None in output["sample"]


def test_probe_lists_every_known_framework():
    proc = subprocess.run([*RUNNER_ARGV, "--probe"], capture_output=True, text=True, timeout=120)
    payload = __import__("json").loads(proc.stdout.strip().split(" ", 1)[1])
    assert payload["schema"] == "edgebench.probe/1"
    cnn = {"onnxruntime", "mnn", "ncnn", "tflite", "openvino", "tnn", "tensorrt"}
    generative = {name for name, d in discover()[0].items() if d.generative}
    assert "openvino-genai" in generative
    assert set(payload["frameworks"]) == cnn | generative
    for name, entry in payload["frameworks"].items():
        assert entry["generative"] is (name in generative), name
    assert payload["frameworks"]["onnxruntime"]["available"] is True
    assert payload["frameworks"]["tnn"]["reason"] == "unsupported"


def test_runner_source_stays_python38_compatible():
    # The runner ships to devices with old Pythons: no 3.9+ only syntax in its files.
    import ast

    for path in RUNNER_PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), feature_version=(3, 8))
        assert tree is not None
        for node in ast.walk(tree):
            assert not isinstance(node, ast.Match), path
        source = path.read_text()
        # The host package never; the launcher imports the device package, edgebench_runner.
        assert not re.search(r"(from|import) edgebench\b(?!_runner)", source), path


def test_out_of_memory_is_reported_as_such(tmp_path):
    # A 4.8 GB input under a 3 GB address-space limit: the allocation fails in the runner.
    import resource

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    model = save_conv_model(tmp_path / "dynamic.onnx", [1, 3, "h", "w"])
    spec = spec_for(model, inputs=[{"name": "x", "shape": [1, 3, 20000, 20000]}])
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"],
        input=__import__("json").dumps(spec),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_memory,
    )
    result = __import__("json").loads(proc.stdout.strip().splitlines()[-1].split(" ", 1)[1])
    assert result["status"] == "failed"
    assert result["error"]["kind"] == "out_of_memory"
    assert result["error"]["message"].startswith("out of memory on the device")


def test_a_runner_killed_by_sigkill_is_reported_as_probable_oom():
    from edgebench.lab.device import outcome_of
    from edgebench.lab.transports.base import CommandResult

    outcome = outcome_of(CommandResult(-9, "", "Killed"), 60)
    assert outcome.result is None and "out of memory" in outcome.error
    remote = outcome_of(CommandResult(137, "", ""), 60)
    assert "out of memory" in remote.error
    other = outcome_of(CommandResult(-11, "", ""), 60)
    assert other.error == "runner was killed by signal 11 without a result"
