"""trtexec: the command line per cell (precision x TensorRT version x CUDA graph, the engine
cache, quoting), its summary on captured output of TensorRT 8.6 and 10 and the lines TensorRT
11's source prints (tests/fakes/trtexec_outputs.py), the --exportTimes file, the version, and
the one-line reasons of a failed build and of a machine without a GPU."""

from __future__ import annotations

import shlex

import pytest
from fakes import trtexec_outputs as out

from edgebench.framework_tools import ADAPTERS, ToolCell
from edgebench.framework_tools.trtexec import (
    NOT_FOUND,
    TrtexecAdapter,
    engine_file_name,
    parse_export_times,
    read_summary,
    tensorrt_version,
)


def cell(**changes) -> ToolCell:
    fields = {
        "model_path": "/data/eb/models/m.onnx",
        "model_dir": "/data/eb/models",
        "threads": 1,
        "warmup": 5,
        "iterations": 50,
        "backend": "cuda",
    }
    return ToolCell(**(fields | changes))


def test_trtexec_is_tensorrts_tool():
    assert ADAPTERS["tensorrt"] is TrtexecAdapter
    assert "/usr/src/tensorrt/bin/trtexec" in NOT_FOUND and "tar package" in NOT_FOUND


@pytest.mark.parametrize(
    ("major", "precision", "graph", "present", "absent"),
    [
        # TensorRT 10 builds what edgebench builds: strongly typed, TF32 off, at every precision.
        (
            10,
            "fp32",
            False,
            ["--stronglyTyped", "--noTF32"],
            ["--fp16", "--useCudaGraph", "--noCudaGraph"],
        ),
        (10, "fp16", False, ["--stronglyTyped", "--noTF32"], ["--fp16", "--includeDataTransfers"]),
        (10, "fp32", True, ["--stronglyTyped", "--noTF32", "--useCudaGraph"], ["--noCudaGraph"]),
        (8, "fp16", True, ["--fp16", "--useCudaGraph"], ["--noTF32", "--stronglyTyped"]),
        (8, "fp32", False, ["--noTF32"], ["--fp16", "--stronglyTyped"]),
        (11, "fp32", False, ["--noTF32", "--noCudaGraph", "--includeDataTransfers"], []),
        (11, "fp16", False, ["--noTF32", "--noCudaGraph", "--includeDataTransfers"], ["--fp16"]),
        (
            11,
            "fp16",
            True,
            ["--includeDataTransfers"],
            ["--fp16", "--useCudaGraph", "--noCudaGraph"],
        ),
    ],
)
def test_the_flags_follow_precision_version_and_graph(major, precision, graph, present, absent):
    adapter = TrtexecAdapter(tensorrt_major=major, times_file="/data/eb/times.json")
    argv = adapter.command("trtexec", cell(precision=precision, cuda_graph=graph))
    assert argv[:2] == ["trtexec", "--onnx=/data/eb/models/m.onnx"]
    for flag in ["--iterations=50", "--duration=0", "--avgRuns=1", "--warmUp=200", *present]:
        assert flag in argv
    for flag in absent:
        assert flag not in argv
    assert "--exportTimes=/data/eb/times.json" in argv


def test_int8_takes_the_int8_flag_only_where_networks_are_weakly_typed():
    assert TrtexecAdapter(tensorrt_major=8)._precision_flags("int8") == ["--int8"]
    assert TrtexecAdapter(tensorrt_major=10)._precision_flags("int8") == [
        "--stronglyTyped",
        "--noTF32",
    ]
    assert TrtexecAdapter(tensorrt_major=11)._precision_flags("int8") == ["--noTF32"]


def test_open_inputs_get_shapes_and_hostile_names_are_quoted():
    adapter = TrtexecAdapter()
    hostile = cell(
        model_path="/data/eb/m; rm -rf ~ $(x).onnx",
        model_dir="/data/eb/it's here",
        input_shapes={"pixel values": [1, 3, 224, 224], "mask": [1, 16]},
    )
    argv = adapter.command("/usr/src/tensorrt/bin/trtexec", hostile)
    assert "--shapes=pixel values:1x3x224x224,mask:1x16" in argv
    line = adapter.shell_command("/usr/src/tensorrt/bin/trtexec", hostile)
    assert shlex.split(line)[:4] == ["cd", "/data/eb/it's here", "&&", argv[0]]
    assert shlex.split(line)[4:] == argv[1:]
    with pytest.raises(ValueError, match="dynamic dim"):
        adapter.command("trtexec", cell(input_shapes={"x": [-1, 3]}))


def test_the_engine_cache_builds_once_then_loads():
    name = engine_file_name("ab" * 32, {"x": [1, 3, 224, 224]}, "fp16", "10.3.0")
    building = TrtexecAdapter(cache_dir="/data/eb/cache/tensorrt", engine_name=name)
    argv = building.command("trtexec", cell(precision="fp16"))
    assert f"--saveEngine=/data/eb/cache/tensorrt/{name}" in argv
    assert "--timingCacheFile=/data/eb/cache/tensorrt/timing.cache" in argv
    loading = TrtexecAdapter(
        cache_dir="/data/eb/cache/tensorrt", engine_name=name, engine_cached=True
    )
    argv = loading.command("trtexec", cell(precision="fp16"))
    assert argv[1] == f"--loadEngine=/data/eb/cache/tensorrt/{name}"
    assert not any(a.startswith(("--onnx", "--fp16", "--saveEngine")) for a in argv)


def test_the_engine_name_changes_with_everything_an_engine_is_specific_to():
    base = ("ab" * 32, {"x": [1, 3, 224, 224]}, "fp32", "10.3.0", "Orin")
    names = {engine_file_name(*base)}
    for i, other in enumerate(["cd" * 32, {"x": [2, 3, 224, 224]}, "fp16", "10.4.0", "Thor"]):
        changed = list(base)
        changed[i] = other
        names.add(engine_file_name(*changed))
    assert len(names) == 6
    assert engine_file_name(*base) == engine_file_name(*base)


def test_a_tensorrt_10_build_run():
    result = TrtexecAdapter().parse(out.TRT10_BUILD_RUN)
    assert result.tool_version == "10.9.0"
    assert (result.median_ms, result.avg_ms, result.p95_ms) == (1.43823, 1.48372, 1.71796)
    assert (result.min_ms, result.max_ms) == (1.4209, 3.047)
    assert result.count == 2077 and result.throughput_ips == 691.435
    # A build run deserializes what it built: the build is the load time.
    assert result.engine == "built" and result.init_ms == pytest.approx(10720.4)
    assert result.device == "NVIDIA GeForce RTX 3070"
    assert result.summary["GPU Compute Time"]["median"] == 1.39775
    assert result.summary["H2D Latency"]["p99"] == 0.0616455
    assert set(result.summary) == {
        "Latency",
        "Enqueue Time",
        "H2D Latency",
        "GPU Compute Time",
        "D2H Latency",
    }
    assert read_summary(result.raw_lines)["Latency"]["median"] == 1.43823


def test_a_tensorrt_8_6_fp16_run():
    result = TrtexecAdapter(tensorrt_major=8).parse("", out.TRT86_FP16_RUN)
    assert result.tool_version == "8.6.1"  # from the RUNNING line: 8601
    assert result.median_ms == 1.13501 and result.summary["GPU Compute Time"]["p90"] == 1.0896
    assert result.engine is None and result.init_ms is None


def test_a_tensorrt_11_run_from_a_cached_engine():
    adapter = TrtexecAdapter(tensorrt_major=11, cache_dir="/c", engine_name="e.engine")
    result = adapter.parse(out.TRT11_RUN)
    assert result.tool_version == "11.1.0" and result.engine == "cached"
    assert result.init_ms == pytest.approx(103.31)
    report = adapter.backend_report(cell(cuda_graph=True), out.TRT11_RUN)
    assert report.run["engine_cache"] == "hit" and report.run["cuda_graph"] is True
    assert report.run["device"] == "NVIDIA H100 80GB HBM3" and "engine_build_ms" not in report.run


def test_the_accelerator_part_of_a_build_run():
    adapter = TrtexecAdapter(cache_dir="/c", engine_name="e.engine")
    report = adapter.backend_report(cell(), out.TRT10_BUILD_RUN)
    assert report.fallback is None and report.refusal is None
    assert report.run["api"] == "TensorRT" and report.run["engine_cache"] == "miss"
    assert report.run["engine_build_ms"] == pytest.approx(10720.4)
    assert report.run["precision"] == "fp32" and report.run["cuda_graph"] is False
    assert TrtexecAdapter().backend_report(cell(), out.TRT10_BUILD_RUN).run["engine_cache"] == "off"


@pytest.mark.parametrize(
    ("text", "version", "major"),
    [
        (out.TRT86_HELP_FIRST_LINE, "8.6.1", 8),
        (out.TRT10_RUNNING_LINE, "10.2.0", 10),
        (out.TRT11_UNKNOWN_FP16, "11.1.0", 11),
        (out.TRT10_BUILD_RUN, "10.9.0", 10),
    ],
)
def test_the_version_from_the_first_line(text, version, major):
    assert tensorrt_version(text) == (version, major)
    assert tensorrt_version("trtexec: command not found") is None


def test_a_failed_build_names_trtexecs_error():
    adapter = TrtexecAdapter()
    with pytest.raises(ValueError, match="no '=== Performance summary ==="):
        adapter.parse(out.TRT10_BUILD_FAILED)
    reason = adapter.failure_reason(out.TRT10_BUILD_FAILED)
    assert reason.startswith('trtexec: "[builder.cpp::')
    assert "Error Code 2: Internal Error" in reason and "Builder creation failed" in reason
    assert adapter.backend_report(cell(), out.TRT10_BUILD_FAILED).refusal is None
    assert "Unknown option: --fp16" in adapter.failure_reason(out.TRT11_UNKNOWN_FP16)
    assert adapter.failure_reason(out.TRT10_BUILD_RUN) is None


def test_no_driver_is_a_refusal():
    report = TrtexecAdapter().backend_report(cell(), "", out.NO_DRIVER)
    assert report.run is None
    assert report.refusal == (
        'trtexec: "Cuda failure: CUDA driver version is insufficient for CUDA runtime version"'
    )


def test_a_cuda_failure_naming_its_file_and_line_is_recognised():
    # TensorRT 10 prints "Cuda failure at <file>:<line>: <error>".
    report = TrtexecAdapter().backend_report(cell(), "", out.NO_DRIVER_AT)
    assert report.run is None
    assert report.refusal is not None
    assert report.refusal.startswith('trtexec: "Cuda failure at /_src/samples/common/sampleDevice')
    assert report.refusal.endswith('busy or unavailable"')
    reason = TrtexecAdapter().failure_reason("", out.NO_DRIVER_AT)
    assert reason is not None and "sampleDevice.h:34" in reason


def test_export_times_are_the_samples_and_the_stage_split():
    text = out.export_times([(0.04, 1.4, 0.004), (0.03, 1.5, 0.005), (0.05, 1.3, 0.003)])
    times = parse_export_times(text)
    assert times.latency_ms == pytest.approx([1.444, 1.535, 1.353])
    assert times.stage_medians() == pytest.approx(
        {"copy_in": 0.04, "compute": 1.4, "copy_out": 0.004}
    )
    result = TrtexecAdapter().parse(out.TRT10_BUILD_RUN).add_times(times)
    assert result.samples_ms == pytest.approx([1.444, 1.535, 1.353]) and result.count == 3
    assert result.median_ms == 1.43823  # the tool's own figure stays beside the samples
    assert "samples" in result.stats_available


def test_export_times_before_8_6_drop_the_warm_up():
    text = out.export_times([(0.04, 1.4, 0.004)] * 4, start_ms=197.5)
    assert len(parse_export_times(text, warmup_ms=200.0).latency_ms) == 2


@pytest.mark.parametrize(
    ("text", "words"),
    [("{", "not JSON"), ("{}", "not a JSON list"), ('[{"h2dMs": 1}]', "without latencyMs")],
)
def test_a_broken_export_times_file_is_one_line(text, words):
    with pytest.raises(ValueError, match=words):
        parse_export_times(text)
