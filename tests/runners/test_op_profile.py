"""Per-operator profiles (--profile ops): runners/op_profile.py on the real frameworks with the
built-in mobilenetv2, and the op tables of the native tools (benchmark_app, benchmark_model)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from fakes.labs import write_phone_lab

from edgebench.analysis.breakdowns import op_sum_warning
from edgebench.converters import ConversionOptions, get_converter
from edgebench.framework_tools import (
    ADAPTERS,
    OpenvinoBenchmarkAppAdapter,
    TfliteBenchmarkAdapter,
    ToolCell,
    ToolParseError,
)
from edgebench.lab.runner_tree import write_runner_tree
from edgebench.models.registry import build_model
from edgebench.runners import op_profile

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")
pytest.importorskip("MNN")
pytestmark = pytest.mark.load_sensitive

ITERATIONS = 10
# total_ms / inference_ms, measured here (mobilenetv2, 1-2 threads): 0.90-0.97 for ONNX
# Runtime, OpenVINO and MNN on a quiet host, and 1.04-1.21 for benchmark_app, whose counters
# take in its first inference. On a loaded host it falls: the wall time of a call takes in the
# waits for a CPU between operators, which no operator's timer sees, and OpenVINO, which hands
# each inference to its stream's thread and back, waits most (25 profiles with two CPU hogs
# and a build on 2 cores: 0.53-0.85 for OpenVINO, 0.75-0.99 for ONNX Runtime; 0.5 was the
# bound, 3 the iterations). What the ratio must catch moves it by the iteration count: summing
# the profiled iterations instead of averaging them (x N) or keeping only one of them (x 1/N).
# So N is 10 and the bounds sit halfway between 1 and those errors on a log scale (1/sqrt(N),
# sqrt(N)): each error lands over 3x beyond its bound, and load has room down to 0.32.
RATIO = (ITERATIONS**-0.5, ITERATIONS**0.5)
CONV_TYPES = {"Conv", "Convolution", "ConvolutionDepthwise", "GroupConvolution"}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """mobilenetv2 as ONNX and converted by edgebench's converters to MNN and OpenVINO IR."""
    root = tmp_path_factory.mktemp("op-profile")
    onnx_path = root / "mobilenetv2.onnx"
    onnx.save(build_model("mobilenetv2"), str(onnx_path))
    paths = {"onnxruntime": onnx_path}
    for fmt, framework in (("mnn", "mnn"), ("openvino", "openvino")):
        out = root / fmt
        out.mkdir()
        files = get_converter(fmt).convert(onnx_path, out, ConversionOptions())
        paths[framework] = out / files[0]
    return paths


@pytest.fixture(scope="module")
def feeds(artifacts: dict[str, Path]) -> dict[str, np.ndarray]:
    model = onnx.load(str(artifacts["onnxruntime"]))
    rng = np.random.default_rng(7)
    out = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        out[value.name] = rng.standard_normal(shape).astype(np.float32)
    return out


@pytest.fixture(scope="module")
def profiles(
    artifacts: dict[str, Path], feeds: dict[str, np.ndarray], tmp_path_factory
) -> dict[str, tuple[dict, Path]]:
    """Each framework's profile, once, with the workdir it was given."""
    out = {}
    for framework, path in artifacts.items():
        workdir = tmp_path_factory.mktemp(f"work-{framework}")
        result = op_profile.profile_ops(
            framework, str(path), 1, "fp32", feeds, ITERATIONS, str(workdir)
        )
        out[framework] = (result, workdir)
    return out


@pytest.mark.parametrize("framework", ["onnxruntime", "openvino", "mnn"])
def test_profile_names_real_ops_with_positive_times(profiles, framework):
    profile, workdir = profiles[framework]
    assert "unavailable" not in profile, profile
    print(framework, {k: v for k, v in profile.items() if k != "ops"}, profile["ops"][:3])
    assert profile["iterations"] == ITERATIONS and profile["source"]
    ops = profile["ops"]
    assert len(ops) >= 20  # mobilenetv2 has 52 convolutions; fusion keeps most of them apart
    assert {op["type"] for op in ops} & CONV_TYPES
    assert all(op["time_ms"] > 0 and op["count"] >= 1 and op["name"] for op in ops)
    times = [op["time_ms"] for op in ops]
    assert times == sorted(times, reverse=True)
    assert profile["total_ms"] == pytest.approx(sum(times), abs=1e-5)
    low, high = RATIO
    assert low * profile["inference_ms"] <= profile["total_ms"] <= high * profile["inference_ms"]
    assert list(workdir.iterdir()) == []  # ORT's trace file is removed


def test_impl_is_what_ran_each_op(profiles):
    ort = profiles["onnxruntime"][0]["ops"]
    assert {op["impl"] for op in ort} == {"CPUExecutionProvider"}
    ov = profiles["openvino"][0]["ops"]
    conv_impls = {op["impl"] for op in ov if op["type"] in CONV_TYPES}
    # exec_type names the primitive and its precision, e.g. brgconv_avx2_f32, jit_avx2_dw_1x1_f32
    assert conv_impls and all(impl.endswith("f32") for impl in conv_impls)
    assert {op["impl"] for op in profiles["mnn"][0]["ops"]} == {"CPU"}


def test_op_names_come_from_the_model(artifacts, profiles):
    """ORT keeps the ONNX node name (plus a fusion suffix such as _nchwc); MNN's converter keeps
    the node names too. OpenVINO renames fused nodes (Multiply_1234), so it is not checked."""
    nodes = [n.name for n in onnx.load(str(artifacts["onnxruntime"])).graph.node]
    for framework in ("onnxruntime", "mnn"):
        ops = profiles[framework][0]["ops"]
        named = [op for op in ops if any(op["name"].startswith(n) for n in nodes)]
        assert len(named) >= 0.8 * len(ops), (framework, [op["name"] for op in ops])


@pytest.mark.parametrize(
    ("framework", "mention"),
    [
        ("ncnn", "NCNN_BENCHMARK"),
        ("tflite", "benchmark_model"),
        ("tnn", "TNNTest"),
        ("coreml", "coreml"),
    ],
)
def test_frameworks_without_a_python_profiler_say_why(framework, mention, feeds, tmp_path):
    result = op_profile.profile_ops(framework, "model", 1, "fp32", feeds, 2, str(tmp_path))
    assert set(result) == {"unavailable"}
    assert mention in result["unavailable"] and "\n" not in result["unavailable"]


@pytest.mark.parametrize(
    ("framework", "model", "reason"),
    [
        ("onnxruntime", "missing.onnx", "NO_SUCHFILE"),
        ("openvino", "missing.xml", "Could not open the file"),
        ("mnn", "missing.mnn", "createFromFile failed"),
    ],
)
def test_a_framework_failure_becomes_one_line(framework, model, reason, feeds, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = op_profile.profile_ops(
        framework, str(tmp_path / model), 1, "fp32", feeds, 2, str(workdir)
    )
    assert set(result) == {"unavailable"}
    text = result["unavailable"]
    assert text.startswith(f"{framework} profiling failed: ") and reason in text
    assert "\n" not in text and "Exception from" not in text
    assert list(workdir.iterdir()) == []  # ORT writes its trace file even then; it is removed


def test_the_device_package_finds_its_backends(artifacts, feeds, tmp_path):
    """On the device the runner is the package edgebench_runner, and op_profile finds the
    backends in it."""
    np.savez(tmp_path / "feeds.npz", **feeds)
    pushed = write_runner_tree(tmp_path / "runner").parent
    script = (
        "import json, sys, numpy as np\n"
        "from edgebench_runner import op_profile\n"
        "feeds = dict(np.load(sys.argv[2]))\n"
        "print(json.dumps(op_profile.profile_ops('openvino', sys.argv[1], 1, 'fp32', feeds, 1, "
        "sys.argv[3])))\n"
    )
    args = [str(artifacts["openvino"]), str(tmp_path / "feeds.npz"), str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=pushed,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["iterations"] == 1 and result["ops"], result


# --------------------------------------------------------------------------- benchmark_app -pc


def benchmark_app() -> str:
    beside = Path(sys.executable).with_name("benchmark_app")
    tool = str(beside) if beside.is_file() else shutil.which("benchmark_app")
    assert tool, "openvino's benchmark_app must be installed (edgebench[openvino])"
    return tool


def ov_cell(path: Path, profile: bool) -> ToolCell:
    return ToolCell(
        model_path=str(path),
        model_dir=str(path.parent),
        threads=1,
        warmup=1,
        iterations=ITERATIONS,
        input_shapes={"input": [1, 3, 224, 224]},
        profile_ops=profile,
    )


def test_benchmark_app_counters_from_the_real_tool(artifacts):
    adapter = OpenvinoBenchmarkAppAdapter()
    xml = artifacts["openvino"]
    assert "-pc" not in adapter.command("benchmark_app", ov_cell(xml, False))
    argv = adapter.command(benchmark_app(), ov_cell(xml, True))
    assert argv[-1] == "-pc"
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    profile = adapter.parse_op_profile(proc.stdout, proc.stderr)
    print({k: v for k, v in profile.items() if k != "ops"}, profile["ops"][:3])
    # The counters' means cover the tool's first inference and its timed ones.
    assert (profile["iterations"], profile["source"]) == (ITERATIONS + 1, "benchmark_app -pc")
    ops = profile["ops"]
    assert len(ops) >= 20 and {op["type"] for op in ops} & CONV_TYPES
    assert all(op["time_ms"] > 0 and op["count"] == 1 for op in ops)
    assert all(op["impl"] not in ("undef", "") for op in ops)  # NOT_RUN rows are left out
    # The tool's own "Total time" line is the sum of the same rows.
    total_line = next(line for line in proc.stdout.splitlines() if line.startswith("Total time:"))
    assert profile["total_ms"] == pytest.approx(float(total_line.split()[2]), abs=0.06)
    assert adapter.parse(proc.stdout).avg_ms == profile["inference_ms"]
    low, high = RATIO
    assert low * profile["inference_ms"] <= profile["total_ms"] <= high * profile["inference_ms"]


# The C++ benchmark_app prints the status without "Status."; the row is the one OpenVINO's CPU
# device guide quotes (openvinotoolkit/openvino, docs/articles_en/.../cpu-device.rst, "sparse
# weights decompression").
OV_CPP_COUNTERS = """\
[ INFO ] Performance counts for 0-th infer request
MatMul_1800         EXECUTED         layerType: FullyConnected         execType: brgemm_avx512_amx_sparse_I8 realTime (ms): 0.050000  cpuTime (ms): 0.050000
Total time:              0.050 milliseconds
[ INFO ] Count:            10 iterations
[ INFO ] Latency:
[ INFO ]    Median:        0.06 ms
"""  # noqa: E501


def test_benchmark_app_cpp_rows_and_missing_counters():
    profile = OpenvinoBenchmarkAppAdapter().parse_op_profile(OV_CPP_COUNTERS)
    assert profile["ops"] == [
        {
            "name": "MatMul_1800",
            "type": "FullyConnected",
            "impl": "brgemm_avx512_amx_sparse_I8",
            "time_ms": 0.05,
            "count": 1,
        }
    ]
    assert profile["inference_ms"] == 0.06  # the median when no average is printed
    assert profile["iterations"] == 11  # the 10 counted and the first inference
    without = OV_CPP_COUNTERS.replace("Performance counts", "Counts")
    with pytest.raises(ToolParseError, match="benchmark_app: no 'Performance counts"):
        OpenvinoBenchmarkAppAdapter().parse_op_profile(without)


# --------------------------------------------------------------------------- benchmark_model

# tensorflow/tensorflow issue #27948 (benchmark_model of TF 1.x/2.0 on Android, rows after the
# header quoted in full up to the fifth node): tabs, a [start] column, one call per run.
TFLITE_TF27948 = """\
Initialized session in 253.8ms
Running benchmark for at least 1 iterations and at least 0.5 seconds
count=1 curr=980043

Running benchmark for at least 50 iterations and at least 1 seconds
count=50 first=948543 curr=944078 min=944078 max=955061 avg=947350 std=2060

============================== Run Order ==============================
\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t[times called]\t[Name]
\t       DEPTHWISE_CONV_2D\t            0.000\t  538.139\t  536.830\t 56.668%\t 56.668%\t     0.000\t        1\t[srnetwork/Conv/Relu]
\t                 CONV_2D\t          536.833\t   20.081\t   20.083\t  2.120%\t 58.788%\t     0.000\t        1\t[srnetwork/Conv_1/Relu]
\t                 CONV_2D\t          556.918\t   36.430\t   36.419\t  3.844%\t 62.632%\t     0.000\t        1\t[srnetwork/Conv_2/Relu]
\t                 CONV_2D\t          593.339\t   36.507\t   36.473\t  3.850%\t 66.482%\t     0.000\t        1\t[srnetwork/Conv_3/Relu]
\t                 CONV_2D\t          629.814\t   36.657\t   36.581\t  3.862%\t 70.344%\t     0.000\t        1\t[srnetwork/Conv_4/Relu]

"""  # noqa: E501

# Newer builds (TF >= 2.9.1) with XNNPACK: no [start] column, delegated operators by name,
# several calls per run. Quoted from public LiteRT benchmark notes on GitHub (x86-64
# `linux_x86-64_benchmark_model --graph=efficientdet-lite0 ... --enable_op_profiling=true`,
# the first rows of its "Operator-wise Profiling Info for Regular Benchmark Runs").
TFLITE_XNNPACK = """\
INFO: Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
INFO: count=64 first=16067 curr=15102 min=14661 max=17579 avg=15517.6 std=551

INFO: Inference timings in us: Init: 32163, First inference: 19834, Warmup (avg): 15997.4, Inference (avg): 15517.6
INFO: Profiling Info for Benchmark Initialization:
============================== Run Order ==============================
                                     [node type]          [first]        [avg ms]            [%]          [cdf%]          [mem KB]        [times called]  [Name]
                         ModifyGraphWithDelegate            6.348           6.348        55.640%         55.640%          7148.000                1       ModifyGraphWithDelegate/0

INFO: Operator-wise Profiling Info for Regular Benchmark Runs:
============================== Run Order ==============================
                                     [node type]          [first]        [avg ms]            [%]          [cdf%]          [mem KB]        [times called]  [Name]
                                        QUANTIZE            0.199           0.203         1.328%          1.328%             0.000                1       [tfl.quantize]:0
                   Convolution (NHWC, QC8) IGEMM            0.398           0.407         2.658%          3.986%             0.000                1       Delegate/Convolution (NHWC, QC8) IGEMM:0
                  Convolution (NHWC, QC8) DWConv            0.428           0.051         4.317%          8.304%             0.000               13       Delegate/Convolution (NHWC, QC8) DWConv:1
                    Convolution (NHWC, QC8) GEMM            0.125           0.023         1.944%         10.248%             0.000               13       Delegate/Convolution (NHWC, QC8) GEMM:2

============================== Top by Computation Time ==============================
"""  # noqa: E501


def test_benchmark_model_old_table_with_start_column():
    profile = TfliteBenchmarkAdapter().parse_op_profile("", TFLITE_TF27948)
    assert (profile["iterations"], profile["source"]) == (
        50,
        "benchmark_model --enable_op_profiling",
    )
    assert profile["inference_ms"] == 947.35
    ops = profile["ops"]
    assert [op["name"] for op in ops][:2] == ["[srnetwork/Conv/Relu]", "[srnetwork/Conv_4/Relu]"]
    assert ops[0] == {
        "name": "[srnetwork/Conv/Relu]",
        "type": "DEPTHWISE_CONV_2D",
        "impl": "builtin",
        "time_ms": 536.83,
        "count": 1,
    }
    assert len(ops) == 5
    assert profile["total_ms"] == pytest.approx(536.83 + 20.083 + 36.419 + 36.473 + 36.581)


def test_benchmark_model_xnnpack_rows_multiply_avg_by_calls():
    profile = TfliteBenchmarkAdapter().parse_op_profile(TFLITE_XNNPACK)
    assert profile["iterations"] == 64 and profile["inference_ms"] == 15.5176
    by_name = {op["name"]: op for op in profile["ops"]}
    assert "ModifyGraphWithDelegate/0" not in by_name  # initialisation, not a timed run
    dw = by_name["Delegate/Convolution (NHWC, QC8) DWConv:1"]
    assert (dw["type"], dw["impl"], dw["count"]) == (
        "Convolution (NHWC, QC8) DWConv",
        "delegate",
        13,
    )
    assert dw["time_ms"] == pytest.approx(0.051 * 13)
    assert by_name["[tfl.quantize]:0"]["impl"] == "builtin"
    # The tool's own share column agrees: 13 calls of 0.051 ms are 4.317% of the run.
    assert dw["time_ms"] / profile["inference_ms"] == pytest.approx(0.04317, rel=0.02)


def test_benchmark_model_flag_and_missing_table():
    adapter = TfliteBenchmarkAdapter()
    base = dict(model_path="/d/m.tflite", model_dir="/d", threads=1, warmup=1, iterations=5)
    assert "--enable_op_profiling=true" not in adapter.command("b", ToolCell(**base))
    assert adapter.command("b", ToolCell(**base, profile_ops=True))[-1] == (
        "--enable_op_profiling=true"
    )
    timed_only = TFLITE_XNNPACK.split("INFO: Profiling Info")[0]
    with pytest.raises(ToolParseError, match="Operator-wise Profiling Info"):
        adapter.parse_op_profile(timed_only)


# --------------------------------------------------------------------------- the native method


def test_every_native_tool_has_an_op_table_or_a_reason():
    for framework, adapter in ADAPTERS.items():
        has_parser = callable(getattr(adapter, "parse_op_profile", None))
        assert has_parser != (adapter.no_op_profile is not None), framework
        why = adapter.no_op_profile
        assert why is None or ("\n" not in why and adapter.binary in why), framework


def test_native_run_adds_the_profile_of_a_second_run(run_cli, emulated_phone, tmp_path):
    """--profile ops on a phone without Python: benchmark_app runs again with -pc; the timed
    record keeps its own iterations."""
    tools_bin = tmp_path / "native-bin"
    tools_bin.mkdir()
    shutil.copy(benchmark_app(), tools_bin / "benchmark_app")
    lab = write_phone_lab(
        tmp_path / "lab.toml",
        emulated_phone,
        ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'],
    )
    options = {
        "--lab": str(lab),
        "--devices": "emu-phone",
        "--models": "mobilenetv2",
        "--frameworks": "openvino",
        "--iterations": "5",
        "--profile": "ops",
        "--profile-iterations": "2",
        "--format": "jsonl",
    }
    result = run_cli(["run", *(word for pair in options.items() for word in pair)])
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    assert record["n_samples"] == 5
    profile = record["op_profile"]
    assert profile["source"] == "benchmark_app -pc" and profile["iterations"] == 3, profile
    assert {op["type"] for op in profile["ops"]} & CONV_TYPES
    # benchmark_app's counters take in its untimed first inference, which with 2 profiled
    # inferences can lift the ops past the timed inference: the record then says so, and only
    # then (the rule itself is tested on fixed figures in test_op_profile_sums.py).
    expected = op_sum_warning(profile)
    warned = [w for w in record["warnings"] if "--profile ops" in w]
    assert warned == ([expected.message] if expected else []), (warned, profile["inference_ms"])
