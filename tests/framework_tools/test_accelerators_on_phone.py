"""Accelerator cells through the frameworks' own tools on a phone: the real adb server, the
emulated phone, and fake tools that print what the real tools print
(tests/fakes/tool_outputs.py) once their command line carries the backend's switch.

OpenVINO's cell runs the real benchmark_app (the openvino wheel's) with ``-d GPU`` on this
machine, which has no Intel GPU: the plugin's own refusal is the cell's reason. The last test
runs on the sshd board: NNAPI off Android.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import tool_outputs as out
from fakes.fake_tools import write_fake_tool
from fakes.labs import write_phone_lab

from edgebench.lab.inventory import open_device
from edgebench.lab.lab_file import load_lab
from edgebench.measure.methods.framework_tools import FrameworkTools

pytestmark = pytest.mark.load_sensitive
#: A cell that stalls (a tool, or the link to the phone) is abandoned well inside the test's
#: own bound, so it ends as a record that says where it stalled (edgebench's default is 600 s,
#: past run_cli's 300 s, which would end the test with nothing to read).
CELL_TIMEOUT_S = 120
QUICK = ["--warmup", "1", "--iterations", "8", "--min-time", "0", "--cores", "0"]
QUICK += ["--timeout", str(CELL_TIMEOUT_S)]


@pytest.fixture
def phone_cell(run_cli, eb_env, emulated_phone, tmp_path, conv_model):
    """Runs one cell of the conv model on the emulated phone through its framework's tool (a
    fake from ``tool``, or whatever tmp_path/bin holds) and returns its record."""

    def run(framework: str, backend: str, tool: str | None = None, **fake: Any) -> dict[str, Any]:
        if tool is not None:
            write_fake_tool(tmp_path / "bin", tool, **fake)
        lab = write_phone_lab(
            tmp_path / "lab.toml",
            emulated_phone,
            ['runner = "framework-tools"', f'tools_bin = "{tmp_path / "bin"}"'],
        )
        where = ["--lab", str(lab), "--devices", "emu-phone", "--models", str(conv_model)]
        choice = ["--frameworks", framework, "--backends", backend, "--format", "jsonl"]
        try:
            result = run_cli(["run", *where, *choice, *QUICK])
        except subprocess.TimeoutExpired as exc:
            said = (
                exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
            )
            raise AssertionError(
                f"edgebench ran past {exc.timeout:g} s; its stderr so far: {(said or '')[-3000:]!r}"
            ) from None
        assert result.returncode in (0, 1), result.stderr
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(records) == 1, (result.stdout, result.stderr)
        (record,) = records
        assert record["framework"] == framework and record["backend"] == backend
        return record

    return run


def accelerator_of(record: dict[str, Any]) -> dict[str, Any]:
    """The accelerator part of a measured cell, after checking it is one."""
    assert record["status"] == "ok", record["error"]
    assert record["cell_id"].endswith(f"/b{record['backend']}")
    assert record["latency_ms"]["mean"] > 0
    return record["accelerator"]


def assert_not_measured(record: dict[str, Any], kind: str, words: str) -> None:
    assert record["status"] == "unsupported" and record["error_kind"] == kind
    assert words in record["error"]
    assert record["latency_ms"] is None and record["accelerator"] is None


@pytest.mark.parametrize(
    ("output", "device", "software"),
    [
        (out.NCNN_ADRENO_DEVICE + out.ncnn_header(0) + out.NCNN_RESULT, "Adreno (TM) 640", False),
        (out.NCNN_LAVAPIPE_RUN, "llvmpipe (LLVM 15.0.6, 256 bits)", True),
    ],
    ids=["adreno", "lavapipe"],
)
def test_benchncnn_runs_a_vulkan_cell_on_the_phones_gpu(phone_cell, output, device, software):
    record = phone_cell("ncnn", "vulkan", "benchncnn", expect=["0"], stderr=output)
    accelerator = accelerator_of(record)
    assert accelerator["api"] == "Vulkan" and accelerator["device"] == device
    assert accelerator["precision"] == "fp16" and accelerator["software"] is software
    # A software device is never starred or ranked, but it is no emulated CPU.
    assert record["emulated"] is False


def test_a_benchncnn_without_vulkan_is_a_fallback_without_latency(phone_cell):
    # A build without NCNN_VULKAN echoes gpu_device = 0 and runs on the CPU.
    output = out.NCNN_CPU_BUILD_RUN
    record = phone_cell("ncnn", "vulkan", "benchncnn", expect=["0"], stderr=output)
    assert_not_measured(record, "fallback", "no Vulkan device line for gpu_device 0")


def test_mnn_runs_an_opencl_cell_and_catches_its_fallback(phone_cell):
    header = out.mnn_header("OpenCL", 1)
    record = phone_cell(
        "mnn", "opencl", "benchmark.out", expect=["3", "1"], stdout=header + out.MNN_RESULT
    )
    accelerator = accelerator_of(record)
    assert accelerator["api"] == "OpenCL" and accelerator["precision"] == "fp32"

    output = out.MNN_OPENCL_FALLBACK_RUN
    record = phone_cell("mnn", "opencl", "benchmark.out", expect=["3"], stdout=output)
    assert_not_measured(record, "fallback", "Can't Find type=3 backend, use 0 instead")


@pytest.mark.parametrize(
    ("backend", "flag", "output", "api", "delegated"),
    [
        ("gpu", "--use_gpu=true", out.TFLITE_GPU, "OpenCL", (25, 25)),
        ("nnapi", "--use_nnapi=true", out.TFLITE_NNAPI, "NNAPI", (31, 31)),
    ],
)
def test_benchmark_model_runs_delegate_cells(phone_cell, backend, flag, output, api, delegated):
    record = phone_cell("tflite", backend, "benchmark_model", expect=[flag], stderr=output)
    accelerator = accelerator_of(record)
    assert accelerator["api"] == api
    assert (accelerator["delegated_ops"], accelerator["total_ops"]) == delegated


def test_benchmark_model_delegate_fallback_and_refusal(phone_cell):
    nothing_taken = out.TFLITE_NNAPI_TAKES_NOTHING
    record = phone_cell(
        "tflite", "nnapi", "benchmark_model", expect=["--use_nnapi=true"], stderr=nothing_taken
    )
    assert_not_measured(record, "fallback", "the model graph will not be executed by the delegate")

    refused = out.TFLITE_GPU_REFUSED
    record = phone_cell(
        "tflite", "gpu", "benchmark_model", expect=["--use_gpu=true"], stderr=refused, exit_code=1
    )
    assert_not_measured(record, "unsupported", "Failed to apply GPU delegate")


def test_tnntest_runs_an_opencl_cell_or_says_opencl_is_missing(phone_cell):
    record = phone_cell("tnn", "opencl", "TNNTest", expect=["OPENCL"], stdout=out.TNN_OPENCL_RESULT)
    assert accelerator_of(record)["api"] == "OpenCL"

    missing = out.TNN_NO_OPENCL  # TNNTest exits 0 here
    record = phone_cell("tnn", "opencl", "TNNTest", expect=["OPENCL"], stderr=missing)
    assert_not_measured(record, "unsupported", "device is nil or unsupported")


def test_benchmark_app_without_an_intel_gpu_is_unsupported_in_its_own_words(phone_cell, tmp_path):
    beside = Path(sys.executable).with_name("benchmark_app")
    tool = str(beside) if beside.is_file() else shutil.which("benchmark_app")
    assert tool, "openvino's benchmark_app must be installed (edgebench[openvino])"
    (tmp_path / "bin").mkdir()
    shutil.copy(tool, tmp_path / "bin" / "benchmark_app")
    assert_not_measured(phone_cell("openvino", "gpu"), "unsupported", "[GPU]")


def test_nnapi_off_android_is_unsupported_before_the_tool_runs(
    run_cli, eb_env, ssh_lab, tmp_path, conv_model
):
    # benchmark_model built for Linux ignores --use_nnapi: the cell must not reach it.
    nnapi = out.TFLITE_NNAPI
    write_fake_tool(tmp_path / "bin", "benchmark_model", expect=["--use_nnapi=true"], stderr=nnapi)
    lab = ssh_lab.path
    native = f'runner = "framework-tools"\ntools_bin = "{tmp_path / "bin"}"\n'
    lab.write_text(lab.read_text() + native)
    where = ["--lab", str(lab), "--devices", "ssh-box", "--models", str(conv_model)]
    choice = ["--frameworks", "tflite", "--backends", "nnapi", "--format", "jsonl"]
    result = run_cli(["run", *where, *choice, *QUICK])
    assert result.returncode == 0, result.stderr
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert_not_measured(record, "unsupported", "NNAPI exists only on Android and ssh-box is not")
    # The method's availability gives the same verdict, for a planner that passes the backend.
    board = open_device(load_lab(lab).get("ssh-box"))
    status, kind, reason = FrameworkTools().availability(board, "tflite", "nnapi")
    assert (status, kind) == ("unsupported", "unsupported") and reason == record["error"]
    assert FrameworkTools().availability(board, "tflite", "gpu") is None
