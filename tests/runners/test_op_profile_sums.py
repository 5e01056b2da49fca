"""--profile ops: the operators of a profile add up to no more than the inference they ran in
(issue 26 item 9), and a profile whose ops do pass it carries a record warning."""

from __future__ import annotations

import json

import pytest
from fakes.quant_models import save_small_classifier

from edgebench.analysis.breakdowns import OP_SUM_TOLERANCE, op_sum_warning
from edgebench.framework_tools import OpenvinoBenchmarkAppAdapter
from edgebench.measure.breakdowns import with_op_profile
from edgebench.results.record_warnings import unclassified
from edgebench.results.records import Record

pytest.importorskip("openvino")

# The timed p50 and the profile come from two instances of the model (the profiled one with
# PERF_COUNT on), so the ops' sum is held to a multiple of the p50, not to the p50 itself.
# Measured on this 32x32 classifier with 10 profiled inferences (fresh processes, a loaded
# 2-core host): a right sum was 0.3-0.7 x p50, 1.45 x at worst when a preemption fell inside
# a node; averaging OpenVINO's counters with the first inference in gave 2.8-52 x (0.72 ms
# against a 0.105 ms p50 in the issue). 2 x p50 lies between the two.
P50_MULTIPLE = 2.0
# The ops run inside the profiled inferences, so their sum stays under their mean wall time
# but for the microsecond rounding of each op (the model has about 10 ops).
ROUNDING_MS = 0.01


@pytest.mark.alone
def test_openvino_ops_add_up_to_less_than_the_inference(run_cli, tmp_path):
    model = save_small_classifier(tmp_path / "tiny.onnx")
    args = ["run", "--models", str(model), "--frameworks", "openvino", "--profile", "ops"]
    args += ["--iterations", "30", "--min-time", "0", "--warmup", "0", "--format", "jsonl"]
    result = run_cli(args)
    assert result.returncode == 0, result.stderr
    (record,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert record["status"] == "ok", record["error"]
    profile = record["op_profile"]
    assert profile["iterations"] == 10 and len(profile["ops"]) >= 3, profile
    print(record["latency_ms"]["p50"], {k: v for k, v in profile.items() if k != "ops"})
    assert profile["total_ms"] <= profile["inference_ms"] + ROUNDING_MS
    assert profile["total_ms"] <= P50_MULTIPLE * record["latency_ms"]["p50"]
    assert not [w for w in record["warnings"] if w.startswith("--profile ops")]


def profile(total_ms: float, inference_ms: float, source: str = "test", ops: int = 4) -> dict:
    share = total_ms / ops
    rows = [
        {"name": f"n{i}", "type": "Conv", "impl": "x", "time_ms": share, "count": 1}
        for i in range(ops)
    ]
    return {
        "iterations": 10,
        "source": source,
        "ops": rows,
        "total_ms": total_ms,
        "inference_ms": inference_ms,
    }


def bare_record() -> Record:
    return Record(
        "r", "c", "local", "tiny", "openvino", "fp32", 1, "", "ok", warnings=[unclassified("x")]
    )


@pytest.mark.parametrize(
    "source",
    [
        "onnxruntime SessionOptions.enable_profiling",
        "openvino PERF_COUNT get_profiling_info",
        "MNN runSessionWithCallBackInfo",
        "benchmark_model --enable_op_profiling",
    ],
)
def test_ops_past_the_inference_warn_for_every_source(source):
    record = with_op_profile(bare_record(), profile(0.72, 0.105, source))
    assert record.op_profile.total_ms == 0.72  # the profile itself is kept as it came
    assert record.warnings[0] == unclassified("x")
    (warning,) = (w.message for w in record.warnings[1:])
    assert warning.startswith("--profile ops: the ops add up to 0.72 ms, 6.9x the 0.105 ms")
    assert "not per inference" in warning and "\n" not in warning


def test_ops_within_the_tolerance_or_without_figures_do_not_warn():
    inference = 10.0
    inside = inference * (1 + OP_SUM_TOLERANCE)  # plus 4 x 0.001 ms of rounding to spare
    assert op_sum_warning(profile(inside, inference)) is None
    assert op_sum_warning(profile(inside + 0.01, inference)) is not None
    assert op_sum_warning(profile(5.0, inference)) is None
    assert op_sum_warning({"unavailable": "no profiler"}) is None
    assert op_sum_warning(None) is None
    assert op_sum_warning(profile(5.0, 0.0)) is None  # no inference time to hold them to
    assert op_sum_warning(dict(profile(5.0, 1.0), ops=[])) is None


# benchmark_app -pc -niter 3 on the 32x32 classifier (openvino 2026.4, the Python tool on x86),
# from "First inference" to the latency: the counters' means take in the 1.64 ms first
# inference, so the rows add up to 4.9 x the average of the 3 timed inferences.
BENCHMARK_APP_PC = """\
[ INFO ] First inference took 1.64 ms
[ INFO ] Performance counts for 0-th infer request
image                Status.NOT_RUN       layerType: Parameter            execType: unknown_f32          realTime (ms): 0.000      cpuTime (ms): 0.000
image_abcd_acdb_...  Status.EXECUTED      layerType: Reorder              execType: jit_uni_f32          realTime (ms): 0.011      cpuTime (ms): 0.011
c1/WithoutBiases     Status.EXECUTED      layerType: Convolution          execType: brgconv_avx512_f32   realTime (ms): 0.016      cpuTime (ms): 0.016
r1                   Status.NOT_RUN       layerType: Relu                 execType: undef                realTime (ms): 0.000      cpuTime (ms): 0.000
c2/WithoutBiases     Status.EXECUTED      layerType: GroupConvolution     execType: brgconv_avx512_dw_f32 realTime (ms): 0.005      cpuTime (ms): 0.005
r2                   Status.NOT_RUN       layerType: Relu                 execType: undef                realTime (ms): 0.000      cpuTime (ms): 0.000
c3/WithoutBiases     Status.EXECUTED      layerType: Convolution          execType: brgconv_avx512_1x1_f32 realTime (ms): 0.009      cpuTime (ms): 0.009
r3                   Status.NOT_RUN       layerType: Relu                 execType: undef                realTime (ms): 0.000      cpuTime (ms): 0.000
pool                 Status.EXECUTED      layerType: ReduceMean           execType: jit_avx512_f32       realTime (ms): 0.003      cpuTime (ms): 0.003
pool_acdb_abcd_flat  Status.NOT_RUN       layerType: Reorder              execType: reorder_f32          realTime (ms): 0.000      cpuTime (ms): 0.000
flat                 Status.NOT_RUN       layerType: Reshape              execType: unknown_f32          realTime (ms): 0.000      cpuTime (ms): 0.000
logits               Status.EXECUTED      layerType: FullyConnected       execType: gemm_mlas_f32        realTime (ms): 0.094      cpuTime (ms): 0.094
logits/sink_port_0   Status.NOT_RUN       layerType: Result               execType: unknown_f32          realTime (ms): 0.000      cpuTime (ms): 0.000
Total time:     0.138 milliseconds
Total CPU time: 0.138 milliseconds

[ INFO ] Execution Devices:['CPU']
[ INFO ] Count:            3 iterations
[ INFO ] Duration:         0.14 ms
[ INFO ] Latency:
[ INFO ]    Median:        19.00 us
[ INFO ]    Average:       28.34 us
[ INFO ]    Min:           16.80 us
[ INFO ]    Max:           49.23 us
[ INFO ] Throughput:   21678.49 FPS
"""  # noqa: E501


def test_benchmark_app_counters_count_the_first_inference_and_warn():
    parsed = OpenvinoBenchmarkAppAdapter().parse_op_profile(BENCHMARK_APP_PC)
    assert parsed["iterations"] == 4  # the first inference and the 3 timed ones
    assert parsed["inference_ms"] == pytest.approx(0.02834)
    assert parsed["total_ms"] == pytest.approx(0.138)
    record = with_op_profile(bare_record(), parsed)
    warning = record.warnings[-1].message
    assert "4.9x the 0.02834 ms inference" in warning
    assert "untimed first inference" in warning and "--profile-iterations" in warning
