"""A trtexec cell end to end on a lab device over the real sshd on 127.0.0.1: trtexec found in
tools_bin, its version asked, the engine built once into the device's cache and loaded the
second time, the --exportTimes file read back as the record's raw samples and stage split.

The trtexec here is a fake that prints TensorRT 10.9's real output (tests/fakes/
trtexec_outputs.py) and writes an exportTimes file in trtexec's format; it refuses a command
line without the flags a TensorRT 10 build needs to match edgebench's own (--stronglyTyped
--noTF32, and never --fp16/--int8 beside them), so the test proves the command as well.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fakes.labs import write_lab

QUICK = ["--warmup", "1", "--iterations", "8", "--min-time", "0"]

FAKE_TRTEXEC = """\
#!{python}
import json, os, sys
sys.path.insert(0, {fakes!r})
import trtexec_outputs as out
args = sys.argv[1:]
if os.path.exists({no_driver!r}):
    print(out.NO_DRIVER, end="")
    sys.exit(1)
if args == ["--help"]:
    print(out.TRT10_RUNNING_LINE, end="")
    sys.exit(0)
flags = dict(a.partition("=")[::2] for a in args)
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if "--iterations" not in flags or flags.get("--avgRuns") != "1":
    sys.exit("fake trtexec: a cell needs --iterations and --avgRuns=1")
if "--onnx" in flags and not {{"--stronglyTyped", "--noTF32"}} <= set(flags):
    sys.exit("fake trtexec: a TensorRT 10 build needs --stronglyTyped --noTF32")
if {{"--fp16", "--int8"}} & set(flags):
    sys.exit("fake trtexec: precision flags are not allowed with --stronglyTyped")
if "--saveEngine" in flags:
    open(flags["--saveEngine"], "w").write("engine")
count = int(flags["--iterations"])
queries = [(0.05, 0.4 + i / 1000, 0.02) for i in range(count)]
open(flags["--exportTimes"], "w").write(out.export_times(queries))
print(out.TRT10_BUILD_RUN, end="")
"""


@pytest.fixture
def tools_lab(tmp_path: Path, shared_sshd) -> tuple[Path, Path]:
    """A device over the real sshd on 127.0.0.1 that measures through the frameworks' tools,
    with the fake trtexec in its tools_bin; the fake's call log. (Such a device has no runner
    to probe, so no facts refuse its CUDA cells at planning: trtexec itself decides.)"""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "trtexec-calls.jsonl"
    fakes = str(Path(__file__).resolve().parents[1] / "fakes")
    script = bin_dir / "trtexec"
    no_driver = str(tmp_path / "no-driver")  # present: the fake answers as without a GPU
    script.write_text(
        FAKE_TRTEXEC.format(python=sys.executable, fakes=fakes, log=str(log), no_driver=no_driver)
    )
    script.chmod(0o755)
    lab = write_lab(
        tmp_path / "lab.toml",
        shared_sshd,
        tmp_path / "work",
        runner="framework-tools",
        tools_bin=str(bin_dir),
    )
    lab.write_text(lab.read_text().replace("[devices.ssh-box]", "[devices.orin]"))
    return lab, log


def run_tensorrt(run_cli, lab: Path, model: Path) -> dict:
    where = ["--lab", str(lab), "--devices", "orin", "--models", str(model)]
    result = run_cli(["run", *where, "--frameworks", "tensorrt", "--format", "jsonl", *QUICK])
    assert result.returncode == 0, result.stderr
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    return record


def test_a_trtexec_cell_builds_once_then_loads_and_records_raw_samples(
    run_cli, tools_lab, conv_model
):
    lab, log = tools_lab
    first = run_tensorrt(run_cli, lab, conv_model)
    assert first["status"] == "ok", first["error"]
    assert (first["framework"], first["backend"]) == ("tensorrt", "cuda")
    assert first["n_samples"] == 8 and len(first["samples_ns"]) == 8
    assert first["latency_ms"]["p50"] == pytest.approx(0.05 + 0.4035 + 0.02, rel=1e-3)
    assert first["stages"]["p50_ms"]["compute"] == pytest.approx(0.4035, rel=1e-3)
    assert first["native"]["tool"] == "trtexec" and first["native"]["tool_version"] == "10.9.0"
    second = run_tensorrt(run_cli, lab, conv_model)
    assert second["status"] == "ok", second["error"]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2
    built, loaded = calls
    assert any(a.startswith("--onnx=") for a in built)
    assert any(a.startswith("--saveEngine=") for a in built)
    assert any(a.startswith("--loadEngine=") for a in loaded)
    assert not any(a.startswith("--onnx=") for a in loaded)


def test_trtexec_without_a_driver_makes_the_cell_unsupported_in_its_own_words(
    run_cli, tools_lab, conv_model, tmp_path
):
    lab, _ = tools_lab
    (tmp_path / "no-driver").touch()
    where = ["--lab", str(lab), "--devices", "orin", "--models", str(conv_model)]
    result = run_cli(["run", *where, "--frameworks", "tensorrt", "--format", "jsonl", *QUICK])
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "unsupported", record
    assert "CUDA driver version is insufficient" in record["error"]
    assert "\n" not in record["error"] and record["latency_ms"] is None


def test_an_int8_cell_runs_the_qdq_model_through_trtexec_and_other_tools_refuse_int8(
    run_cli, tools_lab, conv_model
):
    from planning.test_backend_axis import cells_for

    from edgebench.measure.methods.framework_tools import precision_refusal

    lab, log = tools_lab
    where = ["--lab", str(lab), "--devices", "orin", "--models", str(conv_model)]
    choice = ["--frameworks", "tensorrt", "--precision", "int8", "--format", "jsonl"]
    result = run_cli(["run", *where, *choice, *QUICK])
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "ok", record["error"]
    assert record["artifact"]["format"] == "onnx-qdq"
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    # Strongly typed: the QDQ graph carries int8, as in edgebench's own TensorRT build.
    assert "--stronglyTyped" in call and "--noTF32" in call and "--int8" not in call
    (mnn,) = cells_for(["mnn"], ["cpu"], precision="int8")
    assert precision_refusal(mnn) == (
        "benchmark.out runs fp32, fp16 cells, not int8; measure int8 with the Python runner or "
        "edgebench-native (the lab's runner)"
    )
