"""Accelerator cells end to end, through `edgebench run` on the software Vulkan device
(Mesa lavapipe): outputs checked against ONNX Runtime on the CPU, the device recorded and
marked software (never starred), a GPU result broken by its fp16 storage caught as a mismatch,
a silent fallback to the CPU (MNN's PyPI wheel has no GPU backend) reported as such, and a
machine without a Vulkan driver told which packages provide one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.cli_checks import cli
from fakes.gpu_tools import driver_manifest
from fakes.models import save_conv_model
from onnx import TensorProto, helper, numpy_helper

from edgebench.frameworks.rows import VULKAN_PACKAGES

QUICK = ["--warmup", "0", "--iterations", "2", "--min-time", "0", "--rounds", "1"]


def vulkan_device() -> str:
    """The Vulkan device ncnn finds here (skips, naming the packages, without one)."""
    ncnn = pytest.importorskip("ncnn")
    if ncnn.get_gpu_count() == 0:
        pytest.skip(f"no Vulkan device for ncnn ({VULKAN_PACKAGES})")
    return ncnn.get_gpu_info(ncnn.get_default_gpu_index()).device_name()


def save_overflow_model(path: Path) -> Path:
    """y = x * 3000 * 100 * 1e-4: the middle tensor reaches ~3e5, past fp16's 65504, so a
    device that stores activations in fp16 gives inf where fp32 gives ~30 x."""
    scales = [("a", 3000.0), ("b", 100.0), ("c", 1e-4)]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in scales]
    names = ["x", "t1", "t2", "y"]
    nodes = [
        helper.make_node("Mul", [names[i], scale], [names[i + 1]])
        for i, (scale, _) in enumerate(scales)
    ]
    graph = helper.make_graph(
        nodes,
        "overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def records_of(stdout: str) -> dict[str, dict]:
    """The jsonl records by engine and precision (``ncnn·vulkan/fp16``)."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            engine = record["framework"]
            if record["backend"] != "cpu":
                engine += "·" + record["backend"]
            out[f"{engine}/{record['precision']}"] = record
    return out


def test_ncnn_on_software_vulkan_is_checked_recorded_and_never_starred(run_cli, tmp_path):
    device = vulkan_device()
    pytest.importorskip("MNN")
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 16, 16])
    args = ["run", "--models", str(model), "--frameworks", "ncnn,mnn", *QUICK]
    run = run_cli([*args, "--backends", "cpu,vulkan,opencl", "--format", "jsonl"])
    records = records_of(run.stdout)
    assert set(records) == {"ncnn/fp32", "ncnn·vulkan/fp32", "mnn/fp32"} | {
        "mnn·vulkan/fp32",
        "mnn·opencl/fp32",
    }, run.stderr
    assert "ncnn has no opencl backend (its accelerators: vulkan): no cell on local" in run.stderr
    gpu = records["ncnn·vulkan/fp32"]
    assert gpu["status"] == "ok", gpu["error"]
    assert gpu["cell_id"].endswith("/bvulkan")
    assert gpu["output_check"]["passed"] and gpu["output_check"]["reference"].startswith(
        "onnxruntime"
    )
    accelerator = gpu["accelerator"]
    assert (accelerator["api"], accelerator["device"], accelerator["software"]) == (
        "Vulkan",
        device,
        True,
    )
    assert accelerator["precision"] == "fp32" and accelerator["driver"]
    # A software GPU, not an emulated CPU: the record's emulated flag is qemu's alone.
    assert gpu["emulated"] is False and gpu["emulation"] is None
    assert gpu["first_inference_ms"] > 0 and gpu["cpu_ms_per_inf"] > 0
    assert (
        records["ncnn/fp32"]["cpu_ms_per_inf"] > 0 and records["ncnn/fp32"]["accelerator"] is None
    )
    # MNN's PyPI wheel has no GPU backend: it says so and runs on the CPU. Never a GPU figure.
    for backend in ("vulkan", "opencl"):
        fallback = records[f"mnn·{backend}/fp32"]
        assert (fallback["status"], fallback["error_kind"]) == ("unsupported", "fallback")
        assert "ran on the CPU" in fallback["error"] and fallback["latency_ms"] is None
    assert run.returncode == 0, run.stderr

    table = run_cli(["show", "--metric", "p50"])
    header = next(line for line in table.stdout.splitlines() if line.startswith("device "))
    row = next(line for line in table.stdout.splitlines() if line.startswith("local "))
    assert header.split() == ["device", "mnn", "mnn·vulkan", "mnn·opencl", "ncnn", "ncnn·vulkan"]
    gpu_cell = row.split()[-2:]  # the figure, then its mark: never a star or a tie
    assert gpu_cell[1] == "(software)" and gpu_cell[0].replace(".", "").isdigit()
    assert row.count("CPU fallback") == 2  # mnn·vulkan and mnn·opencl: never a figure
    assert "software: local · vulkan ran on a software device" in table.stdout
    assert "emulated" not in table.stdout

    # compare and recommend say "software device", never "emulated CPU".
    compare = run_cli(["compare", "latest", "latest"])
    verdict = next(line for line in compare.stdout.splitlines() if "/bvulkan " in line)
    assert "not_comparable" in verdict
    assert "software device (base and new): latency is for correctness only" in verdict
    chosen = run_cli(["recommend", "--devices", "local", "--model", "conv"])
    assert chosen.returncode == 0, chosen.stderr
    assert "ncnn·vulkan: ranked last: local: its only ok cells ran on a software device" in (
        chosen.stdout
    )
    for out in (compare.stdout, chosen.stdout):
        assert "emulated" not in out, out


def test_a_gpu_result_broken_by_fp16_storage_is_a_mismatch(run_cli, tmp_path):
    vulkan_device()
    model = save_overflow_model(tmp_path / "overflow.onnx")
    run = run_cli(
        [
            *("run", "--models", str(model), "--frameworks", "ncnn", *QUICK),
            *("--backends", "cpu,vulkan", "--precision", "fp32,fp16", "--format", "jsonl"),
        ]
    )
    records = records_of(run.stdout)
    assert records["ncnn·vulkan/fp32"]["status"] == "ok", run.stderr
    broken = records["ncnn·vulkan/fp16"]
    assert broken["status"] == "mismatch" and broken["accelerator"]["precision"] == "fp16"
    assert "max abs diff inf" in broken["error"]
    assert run.returncode == 1


def test_without_a_vulkan_driver_the_cell_names_the_packages(run_cli, eb_env, tmp_path):
    pytest.importorskip("ncnn")
    empty = driver_manifest(tmp_path / "no-driver.json")  # a driver found nowhere
    env = dict(eb_env, VK_ICD_FILENAMES=str(empty), VK_DRIVER_FILES=str(empty))
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 16, 16])
    run = cli(
        [
            *("run", "--models", str(model), "--frameworks", "ncnn", *QUICK),
            *("--backends", "vulkan", "--format", "jsonl"),
        ],
        env,
    )
    (record,) = records_of(run.stdout).values()
    assert record["status"] == "unsupported", record
    assert "mesa-vulkan-drivers libvulkan1" in record["error"]
