"""The framework tools' adapters: command lines, quoting, and output parsers.

The sample lines are real output (docs/framework-tools.md says where each comes from).
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fakes import trtexec_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.device_shell import taskset_mask
from edgebench.framework_tools import (
    ADAPTERS,
    BenchncnnAdapter,
    MnnBenchmarkAdapter,
    OpenvinoBenchmarkAppAdapter,
    TfliteBenchmarkAdapter,
    TnnTestAdapter,
    ToolAdapter,
    ToolCell,
    ToolParseError,
    clean_line,
    ncnn_shape,
    parse_number,
    parse_tnn_output_file,
)
from edgebench.frameworks import find_framework

# --------------------------------------------------------------------------- sample outputs

TFLITE_COUNT = "count=50 first=79449 curr=81350 min=77385 max=88213 avg=79732 std=1929"
TFLITE_TIMINGS = (
    "Inference timings in us: Init: 17187, First inference: 3512391, "
    "Warmup (avg): 3.51239e+06, Inference (avg): 2.95034e+06"
)
TFLITE_MEMORY = (
    "Memory footprint delta from the start of the tool (MB): init=39.4531 overall=40.8281"
)
TFLITE_OUT = f"""\
STARTING!
Log parameter values verbosely: [0]
Num threads: [1]
Graph: [/data/local/tmp/m/model.tflite]
#threads used for CPU inference: [1]
Loaded model /data/local/tmp/m/model.tflite
INFO: Initialized TensorFlow Lite runtime.
The input model file size (MB): 11.983
Initialized session in 17.187ms.
Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if exceeding 150 seconds.
count=2 first=339304 curr=266325 min=266325 max=339304 avg=302814 std=36489
Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
{TFLITE_COUNT}
{TFLITE_TIMINGS}
Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to the actual memory footprint of the model at runtime. Take the information at your discretion.
{TFLITE_MEMORY}
"""  # noqa: E501

NCNN_OUT = """\
loop_count = 4
num_threads = 1
powersave = 0
gpu_device = -1
cooling_down = 0
          squeezenet  min =   14.01  max =   14.28  avg =   14.16
        mobilenet_v2  min =   15.13  max =   15.79  avg =   15.49
"""

NCNN_SQUEEZENET = "          squeezenet  min =   14.01  max =   14.28  avg =   14.16\n"

MNN_OUT = """\
MNN benchmark
Forward type: CPU thread=1 precision=0 sparsity=0 sparseBlockOC=1 testQuantizedModel=0 enableKleidiAI=0
--------> Benchmarking... loop = 20, warmup = 5
[-INFO-]: precision!=2, use fp32 inference.
The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0
[ - ] tinyresnet.mnn              max =    2.871 ms  min =    1.973 ms  avg =    2.289 ms
"""  # noqa: E501

TNN_LINE = (
    "I/tnn: Print [File test/timer.cc][Line 59] tinyresnet.opt.tnnproto - X86"
    "                 TNN Benchmark time cost: min =  3.718   ms  |  max =  5.653   ms  |"
    "  avg =  4.725   ms"
)

OV_OUT = """\
[Step 1/11] Parsing and validating input arguments
[ INFO ] Parsing input parameters
[Step 2/11] Loading OpenVINO Runtime
[ INFO ] OpenVINO:
[ INFO ] Build ................................. 2026.4.1-22982-e213a147257-releases/2026/4
[ INFO ] 
[ INFO ] Device info:
[ INFO ] CPU
[ INFO ] Build ................................. 2026.4.1-22982-e213a147257-releases/2026/4
[Step 7/11] Loading the model to the device
[ INFO ] Compile model took 13.14 ms
[Step 10/11] Measuring performance (Start inference synchronously, limits: 50 iterations)
[ INFO ] Benchmarking in inference only mode (inputs filling are not included in measurement loop).
[ INFO ] First inference took 7.91 ms
[Step 11/11] Dumping statistics report
[ INFO ] Execution Devices:['CPU']
[ INFO ] Count:  50 iterations
[ INFO ] Duration:         315.60 ms
[ INFO ] Latency:
[ INFO ]    Median:  6.05 ms
[ INFO ]    Average:       6.31 ms
[ INFO ]    Min:           5.80 ms
[ INFO ]    Max:           9.02 ms
[ INFO ] Throughput:   158.43 FPS
"""  # noqa: W291


def cell(**kw) -> ToolCell:
    base = dict(
        model_path="/data/local/tmp/m/model.tflite",
        model_dir="/data/local/tmp/m",
        threads=2,
        warmup=5,
        iterations=50,
        cores=None,
        precision="fp32",
        input_shapes={"input": [1, 3, 224, 224]},
    )
    base.update(kw)
    return ToolCell(**base)


# --------------------------------------------------------------------------- shared helpers


@pytest.mark.parametrize(
    ("cores", "mask"),
    [([0], "1"), ([4, 5, 6, 7], "f0"), ([0, 2], "5"), ([1], "2"), ([8], "100"), ([3, 0], "9")],
)
def test_taskset_mask(cores, mask):
    assert taskset_mask(cores) == mask


@pytest.mark.parametrize("cores", [[], [-1], [True], ["1"]])
def test_taskset_mask_rejects(cores):
    with pytest.raises(ValueError):
        taskset_mask(cores)


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12.0), ("12.5", 12.5), (".5", 0.5), ("3.51239e+06", 3512390.0), ("1E-3", 0.001)],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "ms", "1.2.3", "0x10", "1e", "--1"])
def test_parse_number_rejects(text):
    with pytest.raises(ValueError):
        parse_number(text)


@pytest.mark.parametrize(
    "line",
    [
        "INFO: count=50",
        "11-30 09:12:01.123  1234  1234 I tflite  : count=50",
        "2024-11-30 09:12:01.123  1234  1234 I tflite  : count=50",
        "11-30 09:12:01.123 I/tflite  ( 1234): count=50",
        "I/tflite  ( 1234): count=50",
        "11-30 09:12:01.123  1234  1234 I tflite  : INFO: count=50",
        "\x1b[32mcount=50\x1b[0m\r",
    ],
)
def test_clean_line_strips_prefixes(line):
    assert clean_line(line) == "count=50"


def test_cell_validation():
    with pytest.raises(ValueError):
        cell(threads=0)
    with pytest.raises(ValueError):
        cell(precision="int8-weights")
    with pytest.raises(ValueError):
        cell(cores=[])
    with pytest.raises(ValueError):
        cell(iterations=0)


def test_registry():
    assert set(ADAPTERS) == {
        *("tflite", "ncnn", "mnn", "tnn", "openvino", "tensorrt", "llama.cpp", "mnn-llm"),
    }
    for framework, cls in ADAPTERS.items():
        adapter = cls()
        assert isinstance(adapter, ToolAdapter)
        assert adapter.framework == framework
        assert adapter.binary


# --------------------------------------------------------------------------- LiteRT benchmark_model


def test_tflite_parse_reference_sample():
    r = TfliteBenchmarkAdapter().parse(TFLITE_OUT)
    assert r.tool == "benchmark_model"
    assert r.count == 50
    assert (r.min_ms, r.max_ms, r.avg_ms, r.std_ms) == (77.385, 88.213, 79.732, 1.929)
    assert r.first_ms == 3512.391
    assert r.init_ms == 17.187
    assert r.memory_mb == 40.8281
    assert r.median_ms is None and r.p5_ms is None and r.p95_ms is None
    assert r.samples_ms is None and r.throughput_ips is None
    assert r.stats_available == ("count", "min", "max", "avg", "std", "first", "init", "memory")
    assert TFLITE_COUNT in r.raw_lines and TFLITE_MEMORY in r.raw_lines


def test_tflite_takes_the_timed_count_line_not_the_warmup_one():
    r = TfliteBenchmarkAdapter().parse(TFLITE_OUT)
    assert r.count == 50 and r.min_ms != 266.325


def test_tflite_percentiles_and_scientific_notation():
    out = TFLITE_OUT.replace(
        TFLITE_COUNT,
        "count=50 first=79449 curr=81350 min=77385 max=88213 avg=2.95034e+06 std=1929 "
        "p5=77500 median=79600 p95=85000",
    )
    r = TfliteBenchmarkAdapter().parse(out)
    assert r.avg_ms == pytest.approx(2950.34)
    assert (r.p5_ms, r.median_ms, r.p95_ms) == (77.5, 79.6, 85.0)
    assert r.stats_available[:7] == ("count", "min", "max", "avg", "median", "p5", "p95")


def test_tflite_info_and_logcat_prefixes():
    info = "\n".join("INFO: " + line for line in TFLITE_OUT.splitlines())
    logcat = "\n".join(
        f"11-30 09:12:01.{i:03d}  1234  1234 I tflite  : {line}"
        for i, line in enumerate(TFLITE_OUT.splitlines())
    )
    for text in (info, logcat):
        r = TfliteBenchmarkAdapter().parse("", "", text)
        assert (r.count, r.avg_ms, r.memory_mb) == (50, 79.732, 40.8281)


def test_tflite_older_timings_prefix_and_stderr():
    out = (
        "Running benchmark for 50 iterations:\n"
        "Timings (microseconds): count=50 first=79449 curr=81350 min=77385 max=88213 avg=79732 "
        "std=1929\n"
    )
    r = TfliteBenchmarkAdapter().parse("", out)
    assert (r.count, r.min_ms, r.avg_ms) == (50, 77.385, 79.732)
    assert r.first_ms is None and r.memory_mb is None


def test_tflite_op_profiling_count_lines_are_ignored():
    out = TFLITE_OUT + (
        "Operator-wise Profiling Info for Regular Benchmark Runs:\n"
        "Timings (microseconds): count=50 first=70000 curr=70000 min=60000 max=90000 avg=71000 "
        "std=10\nMemory (bytes): count=0\n"
    )
    r = TfliteBenchmarkAdapter().parse(out)
    assert (r.count, r.min_ms) == (50, 77.385)


def test_tflite_all_same_and_no_warmup():
    out = (
        "Running benchmark for at least 0 iterations and at least -1 seconds but terminate if "
        "exceeding 150 seconds.\ncount=0\n"
        "Running benchmark for at least 5 iterations and at least 0 seconds but terminate if "
        "exceeding 150 seconds.\ncount=5 curr=1200(all same) p5=1200 median=1200 p95=1200\n"
        "Inference timings in us: Init: 900, First inference: 0, Warmup (avg): -nan, "
        "Inference (avg): 1200\n"
    )
    r = TfliteBenchmarkAdapter().parse(out)
    assert (r.count, r.min_ms, r.max_ms, r.avg_ms, r.std_ms) == (5, 1.2, 1.2, 1.2, 0.0)
    assert r.median_ms == 1.2
    assert r.first_ms is None and r.init_ms == 0.9


def test_tflite_errors_name_the_tool():
    with pytest.raises(ToolParseError, match=r"benchmark_model.*count="):
        TfliteBenchmarkAdapter().parse("STARTING!\nLoaded model x.tflite\n")
    timed_zero = "Running benchmark for at least 50 iterations\ncount=0\n"
    with pytest.raises(ToolParseError, match="benchmark_model"):
        TfliteBenchmarkAdapter().parse(timed_zero)


def test_tflite_command():
    argv = TfliteBenchmarkAdapter().command("./benchmark_model", cell())
    assert argv == [
        "./benchmark_model",
        "--graph=/data/local/tmp/m/model.tflite",
        "--num_threads=2",
        "--warmup_runs=5",
        "--num_runs=50",
        "--min_secs=0",
        "--warmup_min_secs=0",
        "--use_xnnpack=true",
    ]
    fp16 = TfliteBenchmarkAdapter().command("bm", cell(precision="fp16"))
    assert fp16[-2:] == ["--allow_fp16=true", "--xnnpack_force_fp16=true"]
    plain = TfliteBenchmarkAdapter(use_xnnpack=None, exact_runs=False).command(
        "bm", cell(precision="fp16")
    )
    assert plain == [
        "bm",
        "--graph=/data/local/tmp/m/model.tflite",
        "--num_threads=2",
        "--warmup_runs=5",
        "--num_runs=50",
        "--allow_fp16=true",
    ]


# --------------------------------------------------------------------------- ncnn benchncnn


def test_ncnn_parse_reference_sample():
    r = BenchncnnAdapter().parse("", NCNN_OUT, model_path="/data/local/tmp/m/mobilenet_v2")
    assert (r.min_ms, r.max_ms, r.avg_ms, r.count) == (15.13, 15.79, 15.49, 4)
    assert r.samples_ms is None and r.median_ms is None and r.std_ms is None
    assert r.stats_available == ("count", "min", "max", "avg")
    assert r.raw_lines[-1].startswith("mobilenet_v2")


def test_ncnn_user_model_line_and_gpu_lines():
    out = (
        "[0 Adreno (TM) 640]  queueC=0[3]  queueG=0[3]  queueT=0[3]\n"
        "[0 Adreno (TM) 640]  buglssc=0  bugsbn1=0  buglbia=0  bugihfa=1\n"
        "[0 Adreno (TM) 640]  fp16p=1  fp16s=0  fp16a=1  int8s=0  int8a=0\n"
        + NCNN_OUT.split("          squeezenet")[0]
        + "/data/local/tmp/m/model.param  min =    2.50  max =    3.75  avg =    2.80\n"
    )
    r = BenchncnnAdapter().parse("", out)
    assert (r.min_ms, r.max_ms, r.avg_ms) == (2.5, 3.75, 2.8)
    r = BenchncnnAdapter().parse("", out, model_path="/data/local/tmp/m/model.param")
    assert r.avg_ms == 2.8


def test_ncnn_old_readme_output_without_gpu_fields():
    out = (
        "loop_count = 8\nnum_threads = 4\npowersave = 0\n"
        "      squeezenet  min =   36.25  max =   38.47  avg =   37.28\n"
    )
    r = BenchncnnAdapter().parse(out)
    assert (r.count, r.avg_ms) == (8, 37.28)


def test_ncnn_errors():
    with pytest.raises(ToolParseError, match="benchncnn"):
        BenchncnnAdapter().parse("loop_count = 4\nnum_threads = 1\n")
    with pytest.raises(ToolParseError, match=r"benchncnn.*2 models"):
        BenchncnnAdapter().parse(NCNN_OUT)
    with pytest.raises(ToolParseError, match=r"benchncnn.*resnet"):
        BenchncnnAdapter().parse(NCNN_OUT, model_path="resnet")


def test_ncnn_command_and_shapes():
    c = cell(
        model_path="/d/m/model.param",
        model_dir="/d/m",
        iterations=30,
        input_shapes={"in0": [1, 3, 224, 224], "in1": [1, 16, 64], "in2": [1, 10]},
    )
    assert BenchncnnAdapter().command("./benchncnn", c) == [
        "./benchncnn",
        "30",
        "2",
        "0",
        "-1",
        "0",
        "param=/d/m/model.param",
        "shape=[224,224,3],[64,16],[10]",
    ]
    assert ncnn_shape([1, 3, 8, 16, 16]) == [16, 16, 8, 3]
    with pytest.raises(ValueError):
        ncnn_shape([2, 3, 224, 224])
    with pytest.raises(ValueError):
        ncnn_shape([1, 3, -1, 224])
    with pytest.raises(ValueError):
        BenchncnnAdapter().command("b", cell(input_shapes={}))
    assert BenchncnnAdapter.controls_precision is False


# --------------------------------------------------------------------------- MNN benchmark.out


def test_mnn_parse_reference_sample():
    r = MnnBenchmarkAdapter().parse(MNN_OUT)
    assert r.tool == "benchmark.out"
    assert (r.max_ms, r.min_ms, r.avg_ms, r.count) == (2.871, 1.973, 2.289, 20)
    assert r.samples_ms is None and r.median_ms is None
    assert r.stats_available == ("count", "min", "max", "avg")


def test_mnn_older_format_without_space_before_ms():
    out = (
        "Forward type: **CPU** thread=4** precision=2\n"
        "--------> Benchmarking... loop = 50\n"
        'parsed /proc/cpuinfo Hardware = "Hisilicon Kirin990"\n'
        "[MNNInfo]:*************set armv82 backend*************\n"
        "[ - ] resnet-v2-50.mnn max = 45.885ms min = 39.539ms avg = 40.194ms\n"
        "[ - ] MobileNetV2_224.mnn max = 6.496ms min = 4.821ms avg = 5.192ms\n"
    )
    r = MnnBenchmarkAdapter().parse(out, model_path="/data/local/tmp/mv2/MobileNetV2_224.mnn")
    assert (r.max_ms, r.min_ms, r.avg_ms, r.count) == (6.496, 4.821, 5.192, 50)
    with pytest.raises(ToolParseError, match=r"benchmark\.out.*2 models"):
        MnnBenchmarkAdapter().parse(out)


def test_mnn_quant_line_is_not_the_model():
    out = MNN_OUT + (
        "[ - ] quant-tinyresnet.mnn        max =    1.000 ms  min =    0.500 ms  avg =    0.700 ms\n"  # noqa: E501
    )
    assert MnnBenchmarkAdapter().parse(out).avg_ms == 2.289
    assert MnnBenchmarkAdapter().parse(out, model_path="/x/tinyresnet.mnn").avg_ms == 2.289
    assert MnnBenchmarkAdapter().parse(out, model_path="quant-tinyresnet.mnn").avg_ms == 0.7


def test_mnn_missing_line():
    with pytest.raises(ToolParseError, match=r"benchmark\.out.*\[ - \]"):
        MnnBenchmarkAdapter().parse(MNN_OUT.rsplit("[ - ]", 1)[0])


def test_mnn_command():
    c = cell(model_path="/d/m/model.mnn", model_dir="/d/m", warmup=3, iterations=20)
    assert MnnBenchmarkAdapter().command("./benchmark.out", c) == [
        "./benchmark.out",
        "/d/m",
        "20",
        "3",
        "0",
        "2",
        "0",
    ]
    assert MnnBenchmarkAdapter().command("b", cell(precision="fp16"))[-1] == "2"


# --------------------------------------------------------------------------- TNN TNNTest


def test_tnn_parse_reference_line():
    r = TnnTestAdapter().parse(TNN_LINE + "\n")
    assert r.tool == "TNNTest"
    assert (r.min_ms, r.max_ms, r.avg_ms) == (3.718, 5.653, 4.725)
    assert r.count is None and r.samples_ms is None and r.median_ms is None
    assert r.stats_available == ("min", "max", "avg")
    assert r.raw_lines == [TNN_LINE.removeprefix("I/tnn: ")]  # cleaned lines
    assert TnnTestAdapter().parse(TNN_LINE, model_path="/d/tinyresnet.opt.tnnproto").avg_ms == 4.725


def test_tnn_parse_logcat_forms():
    msg = TNN_LINE.split("I/tnn: ", 1)[1].replace("Print ", "void tnn::test::Timer::Print() ")
    threadtime = (
        "--------- beginning of main\n"
        f"11-30 09:12:01.123  4321  4321 I tnn     : {msg.replace('X86', 'ARM')}\n"
    )
    brief = f"I/tnn     ( 4321): {msg}\n"
    adapter = TnnTestAdapter(android=True)
    for logcat in (threadtime, brief):
        r = adapter.parse("", "", logcat, model_path="/data/local/tmp/m/tinyresnet.opt.tnnproto")
        assert (r.min_ms, r.max_ms, r.avg_ms) == (3.718, 5.653, 4.725)


def test_tnn_older_build_prints_twice_without_device_suffix():
    body = (
        "tinyresnet.opt.tnnproto                       TNN Benchmark time cost: "
        "min = 3.718    ms  |  max = 5.653    ms  |  avg = 4.725    ms "
    )
    stderr = f"E/tnn: Print [File test/timer.cc][Line 50] {body}\n"
    r = TnnTestAdapter().parse(body + "\n", stderr, model_path="tinyresnet.opt.tnnproto")
    assert r.avg_ms == 4.725


def test_tnn_missing_line_and_logcat_commands():
    with pytest.raises(ToolParseError, match=r"TNNTest.*TNN Benchmark time cost"):
        TnnTestAdapter().parse("E/tnn: init tnn failed: model file error\n")
    with pytest.raises(ToolParseError, match="TNNTest"):
        TnnTestAdapter().parse(TNN_LINE, model_path="other.tnnproto")
    android = TnnTestAdapter(android=True)
    assert android.needs_logcat()
    assert android.logcat_command() == "logcat -d -v threadtime -s tnn"
    assert android.clear_logcat_command() == "logcat -c"
    assert not TnnTestAdapter().needs_logcat()
    assert TnnTestAdapter().logcat_command() is None
    assert TfliteBenchmarkAdapter().logcat_command() is None


def test_tnn_command():
    c = cell(
        model_path="/d/m/model.tnnproto",
        model_dir="/d/m",
        precision="fp16",
        output_file="/d/m/out.txt",
    )
    assert TnnTestAdapter().command("./TNNTest", c) == [
        "./TNNTest",
        "-mt",
        "TNN",
        "-mp",
        "/d/m/model.tnnproto",
        "-dt",
        "ARM",
        "-th",
        "2",
        "-wc",
        "5",
        "-ic",
        "50",
        "-pr",
        "LOW",
        "-is",
        "input[1,3,224,224]",
        "-op",
        "/d/m/out.txt",
    ]
    argv = TnnTestAdapter(device_type="X86").command(
        "t", cell(input_shapes={"a": [1, 3], "b": [1, 4]})
    )
    assert "-is" not in argv and "-op" not in argv
    colon = TnnTestAdapter(input_shape_syntax="colon").command(
        "t", cell(input_shapes={"a": [1, 3], "b": [1, 4]})
    )
    assert colon[colon.index("-is") + 1] == "a:1,3;b:1,4;"
    assert argv[argv.index("-dt") + 1] == "X86" and argv[argv.index("-pr") + 1] == "HIGH"


def test_tnn_output_file_current_format():
    text = textwrap.dedent(
        """\
        2
        logits mat_type: 32 dims: 2 1 3
        probs mat_type: 32 dims: 4 1 2 1 1
        0.100000
        -2.500000
        3.000000
        0.250000
        0.750000
        """
    )
    out = parse_tnn_output_file(text)
    assert list(out) == ["logits", "probs"]
    np.testing.assert_array_equal(out["logits"], np.array([[0.1, -2.5, 3.0]], dtype=np.float32))
    assert out["probs"].shape == (1, 2, 1, 1) and out["probs"].dtype == np.float32
    assert list(out.values())[1].ravel().tolist() == [0.25, 0.75]


def test_tnn_output_file_reference_header_older_format_and_int32():
    ref = "1\noutput mat_type: 32 dims: 2 1 10\n" + "".join(f"{i / 10:.6f}\n" for i in range(10))
    assert parse_tnn_output_file(ref)["output"].shape == (1, 10)
    old = "1\noutput 2 1 2\n1.500000\n2.500000\n"
    np.testing.assert_array_equal(parse_tnn_output_file(old)["output"], [[1.5, 2.5]])
    ints = "1\nidx mat_type: 33 dims: 1 3\n7\n-1\n2\n"
    out = parse_tnn_output_file(ints)["idx"]
    assert out.dtype == np.int32 and out.tolist() == [7, -1, 2]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x\n",
        "2\nout mat_type: 32 dims: 1 2\n1.0\n2.0\n",
        "1\nout mat_type: 32 dims: 1 3\n1.0\n2.0\n",
        "1\nout mat_type: 32 dims: 1 2\n1.0\nabc\n",
        "1\nout\n1.0\n",
        "2\nout 1 1\nout 1 1\n1\n2\n",
    ],
)
def test_tnn_output_file_errors(text):
    with pytest.raises(ToolParseError, match="TNNTest"):
        parse_tnn_output_file(text)


# --------------------------------------------------------------------------- OpenVINO benchmark_app


def test_openvino_parse_reference_sample():
    r = OpenvinoBenchmarkAppAdapter().parse(OV_OUT)
    assert r.tool == "benchmark_app"
    assert r.tool_version == "2026.4.1-22982-e213a147257-releases/2026/4"
    assert r.count == 50
    assert (r.median_ms, r.avg_ms, r.min_ms, r.max_ms) == (6.05, 6.31, 5.8, 9.02)
    assert r.throughput_ips == 158.43
    assert (r.first_ms, r.init_ms) == (7.91, 13.14)
    assert r.p5_ms is None and r.p95_ms is None and r.std_ms is None and r.samples_ms is None
    assert r.stats_available == (
        "count",
        "min",
        "max",
        "avg",
        "median",
        "first",
        "init",
        "throughput",
    )


def test_openvino_microseconds_percentile_and_groups():
    out = (
        "[ INFO ] Count:            20 iterations\n"
        "[ INFO ] Duration:         0.21 ms\n"
        "[ INFO ] Latency:\n"
        "[ INFO ]    95 percentile:     13.18 us\n"
        "[ INFO ]    Average:       5.44 us\n"
        "[ INFO ]    Min:           4.95 \u00b5s\n"
        "[ INFO ]    Max:           1.318e+01 us\n"
        "[ INFO ] Latency for each data shape group:\n"
        "[ INFO ] 1.x: [1,3,8,8]\n"
        "[ INFO ]    Median:     99.00 us\n"
        "[ INFO ] Throughput:   97183.15 FPS\n"
    )
    r = OpenvinoBenchmarkAppAdapter().parse(out)
    assert r.median_ms is None
    assert r.p95_ms == pytest.approx(0.01318)
    assert (r.avg_ms, r.min_ms, r.max_ms) == pytest.approx((0.00544, 0.00495, 0.01318))
    assert r.count == 20 and r.tool_version is None


def test_openvino_older_single_latency_line_and_tabs():
    out = (
        "[ INFO ] InferenceEngine:\n\tAPI version ............ 2.1\n"
        "\tBuild .................. 2021.4.0-3839-cd81789d294-releases/2021/4\n"
        "[ INFO ] Load network took 120.50 ms\n"
        "Count:      1000 iterations\nDuration:   10034.94 ms\nLatency:    9.87 ms\n"
        "Throughput: 99.65 FPS\n"
    )
    r = OpenvinoBenchmarkAppAdapter().parse(out)
    assert (r.count, r.median_ms, r.throughput_ips, r.init_ms) == (1000, 9.87, 99.65, 120.5)
    assert r.avg_ms is None
    assert r.tool_version == "2021.4.0-3839-cd81789d294-releases/2021/4"


def test_openvino_missing_latency():
    with pytest.raises(ToolParseError, match=r"benchmark_app.*Latency"):
        OpenvinoBenchmarkAppAdapter().parse(
            "[ INFO ] Count: 5 iterations\n[ INFO ] Throughput: 1 FPS"
        )


def test_openvino_command():
    c = cell(model_path="/d/m/model.xml", model_dir="/d/m", precision="fp16", iterations=50)
    assert OpenvinoBenchmarkAppAdapter().command("benchmark_app", c) == [
        "benchmark_app",
        "-m",
        "/d/m/model.xml",
        "-d",
        "CPU",
        "-hint",
        "none",
        "-nthreads",
        "2",
        "-nstreams",
        "1",
        "-api",
        "sync",
        "-niter",
        "50",
        "-infer_precision",
        "f16",
        "-shape",
        "input[1,3,224,224]",
        "-iop",
        "input:f32",
    ]
    argv = OpenvinoBenchmarkAppAdapter(set_infer_precision=False, report_folder="/d/r").command(
        "b", cell(input_shapes={"ids": [1, 16]})
    )
    assert "-infer_precision" not in argv and "-iop" not in argv
    assert argv[-5:] == ["-report_type", "no_counters", "-report_folder", "/d/r", "-json_stats"]


# --------------------------------------------------------------------------- quoting and running

EVIL_MODEL = "a b;rm -rf x.tflite"
EVIL_DIR = "m d;touch pwned;$(touch pwned2) `touch pwned3`"
#: The tools of tensor cells (their line-based output below); llama-bench, a generative cell's
#: tool, has its own tests (test_llama_bench_parse.py).
TENSOR_TOOLS = sorted(f for f in ADAPTERS if getattr(find_framework(f), "workload", "") == "tensor")

MODEL_FILES = {
    "tflite": EVIL_MODEL,
    "ncnn": EVIL_MODEL + ".param",
    "mnn": EVIL_MODEL + ".mnn",
    "tnn": EVIL_MODEL + ".tnnproto",
    "openvino": EVIL_MODEL + ".xml",
    "tensorrt": EVIL_MODEL + ".onnx",
}
FAKE_OUTPUT = {
    "tflite": (TFLITE_OUT, False),
    "ncnn": (NCNN_OUT.replace(NCNN_SQUEEZENET, ""), True),  # benchncnn prints to stderr
    "mnn": (MNN_OUT, False),
    "tnn": (TNN_LINE + "\n", False),
    "openvino": (OV_OUT, False),
    "tensorrt": (trtexec_outputs.TRT10_BUILD_RUN, False),
}


@pytest.mark.parametrize("framework", TENSOR_TOOLS)
def test_shell_command_quotes_every_word(framework):
    adapter = ADAPTERS[framework](env={"LD_LIBRARY_PATH": "/d/lib dir;x"})
    c = cell(
        model_path=f"/d/{EVIL_DIR}/{MODEL_FILES[framework]}",
        model_dir=f"/d/{EVIL_DIR}",
        cores=[4, 5, 6, 7],
        output_file="/d/o;ut.txt",
    )
    line = adapter.shell_command("/bin dir/tool", c)
    words = shlex.split(line)
    assert words[:3] == ["cd", c.model_dir, "&&"]
    assert words[3] == "LD_LIBRARY_PATH=/d/lib dir;x"
    assert words[4:6] == ["taskset", "f0"]
    assert words[6:] == adapter.command("/bin dir/tool", c)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    operators = [tok for tok in lexer if tok and set(tok) <= set("();<>|&`")]
    assert operators == ["&&"]
    no_cores = adapter.shell_command("tool", cell(cores=None))
    assert "taskset" not in no_cores


def _fake_binary(path: Path, output: str, to_stderr: bool) -> None:
    redirect = " >&2" if to_stderr else ""
    path.write_text(
        "#!/bin/sh\n"
        f"cat{redirect} <<'EOF_SAMPLE'\n{output}EOF_SAMPLE\n"
        'for a in "$@"; do printf \'ARG:%s\\n\' "$a"; done\n'
    )
    path.chmod(0o755)


@pytest.mark.skipif(
    shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"),
    reason="needs taskset (util-linux) and Linux CPU affinity",
)
@pytest.mark.parametrize("framework", TENSOR_TOOLS)
def test_shell_command_runs_with_a_fake_binary(framework, tmp_path):
    bindir = tmp_path / "bin dir"
    bindir.mkdir()
    binary = bindir / ADAPTERS[framework].binary
    output, to_stderr = FAKE_OUTPUT[framework]
    _fake_binary(binary, output, to_stderr)
    model_dir = tmp_path / EVIL_DIR
    model_dir.mkdir()
    (model_dir / "x.tflite").write_text("keep me")
    model = model_dir / MODEL_FILES[framework]
    model.write_text("model")
    core = min(os.sched_getaffinity(0))
    c = cell(
        model_path=str(model),
        model_dir=str(model_dir),
        cores=[core],
        input_shapes={"in 0;rm": [1, 3, 8, 8]},
        output_file=str(model_dir / "out;rm -rf x.tflite"),
    )
    adapter = ADAPTERS[framework]()
    proc = subprocess.run(
        ["/bin/sh", "-c", adapter.shell_command(str(binary), c)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    args = [line[4:] for line in proc.stdout.splitlines() if line.startswith("ARG:")]
    assert args == adapter.command(str(binary), c)[1:]
    assert (model_dir / "x.tflite").read_text() == "keep me"
    assert not list(tmp_path.rglob("pwned*"))
    stdout = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("ARG:"))
    result = adapter.parse(stdout, proc.stderr)
    assert result.avg_ms is not None or result.median_ms is not None


# --------------------------------------------------------------------------- property tests

KEYWORDS = {
    "tflite": ("count", "running benchmark", "inference timings", "memory footprint", "session"),
    "ncnn": ("min", "loop_count"),
    "mnn": ("max", "benchmarking"),
    "tnn": ("time cost",),
    "openvino": (
        "count",
        "median",
        "average",
        "min",
        "max",
        "percentile",
        "latency",
        "throughput",
        "build",
        "took",
    ),
    "tensorrt": (
        "latency",
        "time",
        "throughput",
        "summary",
        "engine",
        "device",
        "tensorrt",
    ),
}
VALID = {
    "tflite": TFLITE_OUT,
    "ncnn": NCNN_OUT.replace(NCNN_SQUEEZENET, ""),
    "mnn": MNN_OUT,
    "tnn": TNN_LINE + "\n",
    "openvino": OV_OUT,
    "tensorrt": trtexec_outputs.TRT10_BUILD_RUN,
}
EXPECTED = {
    "tflite": {"count": 50, "min_ms": 77.385, "avg_ms": 79.732, "memory_mb": 40.8281},
    "ncnn": {"count": 4, "min_ms": 15.13, "max_ms": 15.79, "avg_ms": 15.49},
    "mnn": {"count": 20, "min_ms": 1.973, "max_ms": 2.871, "avg_ms": 2.289},
    "tnn": {"min_ms": 3.718, "max_ms": 5.653, "avg_ms": 4.725},
    "openvino": {"count": 50, "median_ms": 6.05, "max_ms": 9.02, "throughput_ips": 158.43},
    "tensorrt": {"count": 2077, "median_ms": 1.43823, "max_ms": 3.047, "throughput_ips": 691.435},
}

_junk_line = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60).filter(
    lambda s: "\x1b" not in s and "\r" not in s
)


def _is_junk_for(framework: str):
    return lambda s: not any(k in s.lower() for k in KEYWORDS[framework])


PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("framework", TENSOR_TOOLS)
@PROPERTY
@given(data=st.data())
def test_junk_lines_do_not_change_the_result(framework, data):
    lines = VALID[framework].splitlines()
    junk = st.lists(_junk_line.filter(_is_junk_for(framework)), max_size=3)
    mixed = []
    for line in lines:
        mixed += data.draw(junk)
        mixed.append(line)
    mixed += data.draw(junk)
    result = ADAPTERS[framework]().parse("\n".join(mixed))
    for attr, value in EXPECTED[framework].items():
        assert getattr(result, attr) == value, attr


_number_formats = st.sampled_from(["{:.6g}", "{:e}", "{:E}", "{:.3f}", "{!r}", "{:.12g}"])
_values = st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False)

LINE_TEMPLATES = {
    # framework -> (output built from one number, attribute, expected from the number)
    "tflite": (
        lambda v: (
            f"Running benchmark for at least 5 iterations\ncount=5 first=1 curr=1 min={v} "
            f"max={v} avg={v} std=0\n"
        ),
        "avg_ms",
        lambda x: x / 1000.0,
    ),
    "ncnn": (lambda v: f"  m  min = {v}  max = {v}  avg = {v}\n", "avg_ms", lambda x: x),
    "mnn": (
        lambda v: f"[ - ] m.mnn    max = {v} ms  min = {v}ms  avg = {v} ms\n",
        "min_ms",
        lambda x: x,
    ),
    "tnn": (
        lambda v: f"m - ARM  TNN Benchmark time cost: min = {v} ms | max = {v} ms | avg = {v} ms\n",
        "max_ms",
        lambda x: x,
    ),
    "openvino": (
        lambda v: f"[ INFO ] Count: 3 iterations\n[ INFO ]    Median:  {v} ms\n",
        "median_ms",
        lambda x: x,
    ),
    "tensorrt": (
        lambda v: f"=== Performance summary ===\nLatency: min = 1 ms, median = {v} ms\n",
        "median_ms",
        lambda x: x,
    ),
}


@pytest.mark.parametrize("framework", TENSOR_TOOLS)
@PROPERTY
@given(value=_values, fmt=_number_formats)
def test_numbers_round_trip_in_plain_and_scientific_notation(framework, value, fmt):
    text = fmt.format(value)
    build, attr, expected = LINE_TEMPLATES[framework]
    result = ADAPTERS[framework]().parse(build(text))
    assert getattr(result, attr) == expected(float(text))


@given(st.floats(allow_nan=False, allow_infinity=False), _number_formats)
@PROPERTY
def test_parse_number_round_trips(value, fmt):
    text = fmt.format(value)
    assert parse_number(text) == float(text)
    assert math.isnan(parse_number("-nan")) and parse_number("inf") == math.inf


@pytest.mark.parametrize("framework", sorted(ADAPTERS))
@PROPERTY
@given(text=st.text())
def test_parsers_raise_only_native_parse_error(framework, text):
    adapter = ADAPTERS[framework]()
    for args in ((text,), ("", text), ("", "", text)):
        for model_path in (None, "m.x"):
            try:
                result = adapter.parse(*args, model_path=model_path)
            except ToolParseError as exc:
                assert adapter.tool in str(exc)
            else:
                assert result.tool == adapter.tool


@PROPERTY
@given(
    text=st.one_of(
        st.text(),
        st.lists(
            st.one_of(
                st.integers(-3, 12).map(str),
                st.sampled_from(["out mat_type: 32 dims: 2 1 2", "o 1 3", "1.5", "nan", "x"]),
            ),
            max_size=8,
        ).map("\n".join),
    )
)
def test_tnn_output_file_raises_only_native_parse_error(text):
    try:
        out = parse_tnn_output_file(text)
    except ToolParseError:
        return
    assert all(isinstance(v, np.ndarray) for v in out.values())


def test_shell_command_records_the_tools_own_pid(tmp_path):
    """With a PID file, the file names the tool itself (the recording shell exec()s it), and
    the environment assignments still reach it."""
    binary = tmp_path / "bin dir" / "benchmark_app"
    binary.parent.mkdir()
    binary.write_text('#!/bin/sh\necho "PID:$$"\necho "ENV:$LD_LIBRARY_PATH"\n')
    binary.chmod(0o755)
    pid_file = tmp_path / "run dir;x" / "run.pid"
    pid_file.parent.mkdir()
    adapter = ADAPTERS["openvino"](env={"LD_LIBRARY_PATH": "/d/lib dir;x"})
    c = cell(model_path=str(tmp_path / "m.xml"), model_dir=str(tmp_path), cores=None)
    line = adapter.shell_command(str(binary), c, pid_file=str(pid_file))
    proc = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    printed = dict(x.split(":", 1) for x in proc.stdout.splitlines() if x[:4] in ("PID:", "ENV:"))
    assert pid_file.read_text().strip() == printed["PID"]
    assert printed["ENV"] == "/d/lib dir;x"
