"""The framework tools on accelerators: each adapter's switch for the cell's backend, and what it
reads from the tool's output (tests/fakes/tool_outputs.py says where each output comes from)."""

from __future__ import annotations

import pytest
from fakes import tool_outputs as out

from edgebench.compute_backends import ACCELERATORS
from edgebench.framework_tools import (
    ADAPTERS,
    BenchncnnAdapter,
    MnnBenchmarkAdapter,
    OpenvinoBenchmarkAppAdapter,
    TfliteBenchmarkAdapter,
    TnnTestAdapter,
    ToolCell,
)
from edgebench.framework_tools.accelerator import tool_refusal

MODEL = "/data/local/tmp/edgebench/m/model"


def cell(backend: str, model: str = MODEL + ".param", precision: str = "fp32") -> ToolCell:
    return ToolCell(
        model_path=model,
        model_dir="/data/local/tmp/edgebench/m",
        threads=1,
        warmup=1,
        iterations=8,
        precision=precision,
        input_shapes={"x": [1, 3, 32, 32]},
        backend=backend,
    )


def labelled(text: str, label: str) -> str:
    return text.replace("@MODEL@", label)


def test_every_tool_backend_names_its_switch_in_the_registry():
    for entry in ACCELERATORS:
        assert (entry.tool is None) == (entry.tool_arg is None), entry
        if entry.tool is not None:
            assert entry.tool_arg in entry.tool and entry.framework in ADAPTERS, entry


def test_a_cell_names_a_known_backend():
    with pytest.raises(ValueError, match="backend"):
        cell("metal")


@pytest.mark.parametrize(
    ("adapter", "backend", "model", "words"),
    [
        (BenchncnnAdapter(), "cpu", ".param", ["1", "0", "-1", "0"]),
        (BenchncnnAdapter(), "vulkan", ".param", ["1", "0", "0", "0"]),
        (BenchncnnAdapter(gpu_device=1), "vulkan", ".param", ["1", "0", "1", "0"]),
        (MnnBenchmarkAdapter(), "cpu", ".mnn", ["1", "0", "1", "0"]),
        (MnnBenchmarkAdapter(), "opencl", ".mnn", ["1", "3", "1", "1"]),
        (MnnBenchmarkAdapter(), "vulkan", ".mnn", ["1", "7", "1", "1"]),
        (MnnBenchmarkAdapter(), "cuda", ".mnn", ["1", "2", "1", "1"]),
    ],
)
def test_positional_tools_put_the_backend_in_its_place(adapter, backend, model, words):
    argv = adapter.command("/bin/tool", cell(backend, MODEL + model))
    # benchncnn: loops threads powersave gpu_device cooling_down; benchmark.out: warmup
    # forward threads precision.
    assert argv[2:6] == words if adapter.binary == "benchncnn" else argv[3:7] == words


@pytest.mark.parametrize(
    ("backend", "precision", "flags"),
    [
        ("gpu", "fp32", ["--use_gpu=true", "--gpu_precision_loss_allowed=false"]),
        ("gpu", "fp16", ["--use_gpu=true", "--gpu_precision_loss_allowed=true"]),
        ("nnapi", "fp32", ["--use_nnapi=true"]),
        ("nnapi", "fp16", ["--use_nnapi=true", "--nnapi_allow_fp16=true"]),
    ],
)
def test_benchmark_model_adds_the_delegates_flags(backend, precision, flags):
    argv = TfliteBenchmarkAdapter().command("/bin/bm", cell(backend, MODEL + ".tflite", precision))
    assert argv[-len(flags) :] == flags
    assert not any("use_gpu" in a or "use_nnapi" in a for a in argv[: -len(flags)])


def test_tnntest_and_benchmark_app_take_the_backends_device():
    tnn = TnnTestAdapter(device_type="ARM").command("/bin/t", cell("opencl", MODEL + ".tnnproto"))
    assert tnn[tnn.index("-dt") + 1] == "OPENCL"
    assert TnnTestAdapter().command("/bin/t", cell("cpu", MODEL + ".tnnproto"))[6] == "ARM"
    ov = OpenvinoBenchmarkAppAdapter().command("/bin/b", cell("npu", MODEL + ".xml"))
    assert ov[ov.index("-d") + 1] == "NPU"


def test_a_backend_a_tool_cannot_select_raises_the_registrys_reason():
    with pytest.raises(
        ValueError, match=r"ncnn has no opencl backend \(its accelerators: vulkan\)"
    ):
        BenchncnnAdapter().command("/bin/b", cell("opencl"))
    assert tool_refusal("tflite", "nnapi", android=True, device="phone") is None
    reason = tool_refusal("tflite", "nnapi", android=False, device="ssh-box")
    assert reason is not None and "only on Android" in reason and "ssh-box" in reason


def report(adapter, backend, text, model=MODEL + ".param", label=None, stream="stderr"):
    text = labelled(text, label if label is not None else model)
    streams = {"stdout": text, "stderr": ""} if stream == "stdout" else {"stderr": text}
    return adapter.backend_report(
        cell(backend, model), streams.get("stdout", ""), streams["stderr"]
    )


@pytest.mark.parametrize(
    "output",
    [out.NCNN_LAVAPIPE_RUN, out.NCNN_LLVMPIPE_DEVICE + out.ncnn_header(0) + out.NCNN_RESULT],
)
def test_benchncnn_reads_the_device_and_its_fp16_support(output):
    on_lavapipe = report(BenchncnnAdapter(), "vulkan", output)
    assert on_lavapipe.run is not None and on_lavapipe.fallback is None
    assert on_lavapipe.run["device"] == "llvmpipe (LLVM 15.0.6, 256 bits)"
    assert on_lavapipe.run["software"] and on_lavapipe.run["precision"] == "fp16"
    result = BenchncnnAdapter().parse("", labelled(output, MODEL + ".param"))
    assert result.avg_ms is not None and result.avg_ms > 0


def test_benchncnn_reads_older_fp16_lines():
    old = "[0 Mali-G72]  queueC=0[2]  queueG=0[2]  queueT=0[2]\n[0 Mali-G72]  fp16p=0  fp16s=0  fp16a=0  int8s=0  int8a=0\n"  # noqa: E501
    on_mali = report(BenchncnnAdapter(), "vulkan", old + out.ncnn_header(0) + out.NCNN_RESULT)
    assert on_mali.run is not None and on_mali.run["device"] == "Mali-G72"
    assert on_mali.run["precision"] == "fp32" and not on_mali.run["software"]


def test_benchncnn_without_a_device_line_fell_back_and_without_a_driver_refuses():
    silent = report(BenchncnnAdapter(), "vulkan", out.NCNN_CPU_BUILD_RUN)
    assert silent.run is None and "no Vulkan device line for gpu_device 0" in silent.fallback
    # Device 1 asked for, only device 0 there.
    other = report(
        BenchncnnAdapter(gpu_device=1),
        "vulkan",
        out.NCNN_ADRENO_DEVICE + out.ncnn_header(1) + out.NCNN_RESULT,
    )
    assert other.run is None and other.fallback is not None
    refused = report(BenchncnnAdapter(), "vulkan", out.NCNN_NO_VULKAN_DRIVER)
    assert refused.refusal == 'benchncnn: "vkCreateInstance failed -9"'


def test_benchmark_model_counts_only_the_cells_delegate():
    partial = report(TfliteBenchmarkAdapter(), "nnapi", out.TFLITE_NNAPI_PARTIAL + out.TFLITE_TIMED)
    assert partial.run is not None
    assert (partial.run["delegated_ops"], partial.run["total_ops"]) == (5, 64)
    nnapi = report(TfliteBenchmarkAdapter(), "nnapi", out.TFLITE_NNAPI)
    assert nnapi.run is not None and nnapi.run["device"] == "synap-npu"
    # The NNAPI run's lines say nothing of the GPU delegate: a gpu cell read from them fell back.
    assert report(TfliteBenchmarkAdapter(), "gpu", out.TFLITE_NNAPI).fallback is not None


def test_benchmark_model_fallbacks_and_refusals_quote_the_tool():
    unsupported = "WARN: GPU acceleration is unsupported on this platform.\n" + out.TFLITE_TIMED
    fallback = report(TfliteBenchmarkAdapter(), "gpu", unsupported).fallback
    assert fallback == 'benchmark_model: "GPU acceleration is unsupported on this platform."'
    refused = report(TfliteBenchmarkAdapter(), "gpu", out.TFLITE_GPU_REFUSED).refusal
    assert refused is not None and refused.startswith('benchmark_model: "Failed to apply GPU')
    assert "Batch size != 1 is not supported" in refused


def test_mnn_reads_its_fallback_lines_from_any_stream():
    ok = report(
        MnnBenchmarkAdapter(),
        "vulkan",
        out.mnn_header("Vulkan", 1) + out.MNN_RESULT,
        model=MODEL + ".mnn",
        label="model.mnn",
        stream="stdout",
    )
    assert ok.run is not None and ok.run["api"] == "Vulkan" and ok.run["precision"] == "fp32"
    runtime_failed = "Can't create Runtime: OpenCL\n"
    fell_back = report(
        MnnBenchmarkAdapter(),
        "opencl",
        out.mnn_header("OpenCL", 1) + runtime_failed + out.MNN_RESULT,
        model=MODEL + ".mnn",
        label="model.mnn",
    )
    assert fell_back.fallback == 'benchmark.out: "Can\'t create Runtime: OpenCL"'


def test_tnntest_reads_the_device_of_its_result_line():
    ok = report(
        TnnTestAdapter(), "opencl", out.TNN_OPENCL_RESULT, model=MODEL + ".tnnproto",
        label="model.tnnproto", stream="stdout",
    )  # fmt: skip
    assert ok.run is not None and ok.run["api"] == "OpenCL"
    arm = out.TNN_OPENCL_RESULT.replace(" - OPENCL", " - ARM")
    ran_on_arm = report(
        TnnTestAdapter(), "opencl", arm, model=MODEL + ".tnnproto", label="model.tnnproto"
    )
    assert ran_on_arm.fallback == "TNNTest ran on ARM, not OPENCL"
    refused = report(TnnTestAdapter(), "opencl", out.TNN_NO_OPENCL, model=MODEL + ".tnnproto")
    assert refused.refusal is not None and "create instance failed" in refused.refusal
    assert "device is nil or unsupported for type: 4096" in refused.refusal


def test_benchmark_app_reads_the_execution_device_and_precision():
    gpu_run = """\
[ INFO ]   INFERENCE_PRECISION_HINT: <Type: 'float16'>
[ INFO ]   EXECUTION_DEVICES: ['GPU.0']
[ INFO ] Execution Devices:['GPU.0']
[ INFO ] Count:            50 iterations
[ INFO ] Latency:
[ INFO ]    Median:        6.05 ms
"""
    ok = report(
        OpenvinoBenchmarkAppAdapter(), "gpu", gpu_run, model=MODEL + ".xml", stream="stdout"
    )
    assert ok.run is not None and ok.run["device"] == "GPU.0" and ok.run["precision"] == "fp16"
    on_cpu = gpu_run.replace("GPU.0", "CPU")
    fell_back = report(OpenvinoBenchmarkAppAdapter(), "gpu", on_cpu, model=MODEL + ".xml")
    assert fell_back.fallback == "benchmark_app ran on CPU, not GPU"
