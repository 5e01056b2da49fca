# ruff: noqa: E501  (trtexec's lines are kept as it prints them)
"""trtexec's output as TensorRT 8.6, 10 and 11 print it, for the adapter's tests.

Sources (lines kept as printed; the long "Trace details" and option listings are cut):

- ``TRT10_BUILD_RUN``: TensorRT 10.9.0's trtexec building resnet50 (ONNX model zoo) on an
  NVIDIA GeForce RTX 3070, from a public README's log (``trtexec --onnx=resnet50/model.onnx
  --saveEngine=resnet50/model.trt``).
- ``TRT86_FP16_RUN``: TensorRT 8.6.1's trtexec with ``--fp16`` on an A100, from a public
  README's log (its summary and PASSED line; the header lines of a TensorRT 8.6.3 log from
  NVIDIA/TensorRT issue 3747 on an RTX 2080).
- ``TRT10_BUILD_FAILED``: TensorRT 10.8's failing build, NVIDIA/TensorRT issue 4572.
- ``TRT86_HELP_FIRST_LINE``: the first line of TensorRT 8.6.1's ``trtexec --help`` (a public
  environment check log); ``TRT10_RUNNING_LINE``: NVIDIA/TensorRT issue 4036 (10.2.0).
- ``TRT11_RUN``: no TensorRT 11 log was found; these are the lines TensorRT 11.1's
  samples/common/sampleReporting.cpp and trtexec.cpp print (the OSS release's source), with
  the figures of the 10.9 run.
- ``NO_DRIVER``: what trtexec's cudaCheck prints when cudaGetDeviceCount fails for want of a
  driver (cudaErrorInsufficientDriver's message, as libcudart.so.13 gives it here).
"""

from __future__ import annotations

TRT10_BUILD_RUN = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v100900] [b34] # trtexec --onnx=resnet50/model.onnx --saveEngine=resnet50/model.trt
[04/07/2025-23:59:33] [I] TF32 is enabled by default. Add --noTF32 flag to further improve accuracy with some performance cost.
[04/07/2025-23:59:33] [I] === Model Options ===
[04/07/2025-23:59:33] [I] Format: ONNX
[04/07/2025-23:59:33] [I] Model: resnet50/model.onnx
[04/07/2025-23:59:33] [I] === Device Information ===
[04/07/2025-23:59:33] [I] Available Devices:
[04/07/2025-23:59:33] [I]   Device 0: "NVIDIA GeForce RTX 3070" UUID: GPU-84a8068b-81a5-7df1-8d22-a523bb848827
[04/07/2025-23:59:33] [I] Selected Device: NVIDIA GeForce RTX 3070
[04/07/2025-23:59:33] [I] Selected Device ID: 0
[04/07/2025-23:59:33] [I] Compute Capability: 8.6
[04/07/2025-23:59:33] [I]
[04/07/2025-23:59:33] [I] TensorRT version: 10.9.0
[04/07/2025-23:59:33] [I] Loading standard plugins
[04/07/2025-23:59:46] [I] [TRT] Engine generation completed in 10.6392 seconds.
[04/07/2025-23:59:46] [I] Engine built in 10.7204 sec.
[04/07/2025-23:59:46] [I] Created engine with size: 101.811 MiB
[04/07/2025-23:59:47] [I] [TRT] Loaded engine size: 101 MiB
[04/07/2025-23:59:47] [I] Engine deserialized in 0.10331 sec.
[04/07/2025-23:59:47] [I] Starting inference
[04/07/2025-23:59:50] [I] Warmup completed 135 queries over 200 ms
[04/07/2025-23:59:50] [I] Timing trace has 2077 queries over 3.0039 s
[04/07/2025-23:59:50] [I]
[04/07/2025-23:59:50] [I] === Trace details ===
[04/07/2025-23:59:50] [I] Trace averages of 10 runs:
[04/07/2025-23:59:50] [I] Average on 10 runs - GPU latency: 1.4891 ms - Host latency: 1.52709 ms (enqueue 0.251123 ms)
[04/07/2025-23:59:50] [I]
[04/07/2025-23:59:50] [I] === Performance summary ===
[04/07/2025-23:59:50] [I] Throughput: 691.435 qps
[04/07/2025-23:59:50] [I] Latency: min = 1.4209 ms, max = 3.047 ms, mean = 1.48372 ms, median = 1.43823 ms, percentile(90%) = 1.45624 ms, percentile(95%) = 1.71796 ms, percentile(99%) = 2.61597 ms
[04/07/2025-23:59:50] [I] Enqueue Time: min = 0.208801 ms, max = 0.461304 ms, mean = 0.263621 ms, median = 0.259033 ms, percentile(90%) = 0.293823 ms, percentile(95%) = 0.311768 ms, percentile(99%) = 0.402832 ms
[04/07/2025-23:59:50] [I] H2D Latency: min = 0.0258789 ms, max = 0.0687256 ms, mean = 0.0362824 ms, median = 0.0361328 ms, percentile(90%) = 0.0378418 ms, percentile(95%) = 0.0385742 ms, percentile(99%) = 0.0616455 ms
[04/07/2025-23:59:50] [I] GPU Compute Time: min = 1.38855 ms, max = 3.00439 ms, mean = 1.44357 ms, median = 1.39775 ms, percentile(90%) = 1.40308 ms, percentile(95%) = 1.67834 ms, percentile(99%) = 2.57642 ms
[04/07/2025-23:59:50] [I] D2H Latency: min = 0.00286865 ms, max = 0.00561523 ms, mean = 0.00387057 ms, median = 0.00366211 ms, percentile(90%) = 0.00488281 ms, percentile(95%) = 0.00500488 ms, percentile(99%) = 0.00537109 ms
[04/07/2025-23:59:50] [I] Total Host Walltime: 3.0039 s
[04/07/2025-23:59:50] [I] Total GPU Compute Time: 2.9983 s
[04/07/2025-23:59:50] [W] * GPU compute time is unstable, with coefficient of variance = 13.1794%.
[04/07/2025-23:59:50] [W]   If not already in use, locking GPU clock frequency or adding --useSpinWait may improve the stability.
[04/07/2025-23:59:50] [I] Explanations of the performance metrics are printed in the verbose logs.
[04/07/2025-23:59:50] [I]
&&&& PASSED TensorRT.trtexec [TensorRT v100900] [b34] # trtexec --onnx=resnet50/model.onnx --saveEngine=resnet50/model.trt
"""

TRT86_FP16_RUN = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=./output/model.onnx --minShapes=input0:1x3x224x224 --optShapes=input0:1x3x224x224 --maxShapes=input0:64x3x224x224 --explicitBatch --fp16 --saveEngine=./output/model_fp16.plan
[03/28/2024-07:10:12] [I] === Device Information ===
[03/28/2024-07:10:12] [I] Selected Device: NVIDIA GeForce RTX 2080
[03/28/2024-07:10:12] [I] Compute Capability: 7.5
[07/12/2023-17:46:54] [I] === Performance summary ===
[07/12/2023-17:46:54] [I] Throughput: 912.045 qps
[07/12/2023-17:46:54] [I] Latency: min = 1.12524 ms, max = 1.15894 ms, mean = 1.13519 ms, median = 1.13501 ms, percentile(90%) = 1.14008 ms, percentile(95%) = 1.14148 ms, percentile(99%) = 1.14401 ms
[07/12/2023-17:46:54] [I] Enqueue Time: min = 0.289795 ms, max = 1.78421 ms, mean = 0.336158 ms, median = 0.314362 ms, percentile(90%) = 0.391113 ms, percentile(95%) = 0.4104 ms, percentile(99%) = 0.464111 ms
[07/12/2023-17:46:54] [I] H2D Latency: min = 0.032959 ms, max = 0.0605469 ms, mean = 0.0384768 ms, median = 0.0384521 ms, percentile(90%) = 0.0427856 ms, percentile(95%) = 0.0439148 ms, percentile(99%) = 0.04599 ms
[07/12/2023-17:46:54] [I] GPU Compute Time: min = 1.0824 ms, max = 1.09363 ms, mean = 1.08753 ms, median = 1.08752 ms, percentile(90%) = 1.0896 ms, percentile(95%) = 1.0896 ms, percentile(99%) = 1.09155 ms
[07/12/2023-17:46:54] [I] D2H Latency: min = 0.00634766 ms, max = 0.0114746 ms, mean = 0.00917772 ms, median = 0.00921631 ms, percentile(90%) = 0.010498 ms, percentile(95%) = 0.0107422 ms, percentile(99%) = 0.0112305 ms
[07/12/2023-17:46:54] [I] Total Host Walltime: 3.00314 s
[07/12/2023-17:46:54] [I] Total GPU Compute Time: 2.97874 s
[07/12/2023-17:46:54] [I] Explanations of the performance metrics are printed in the verbose logs.
[07/12/2023-17:46:54] [I]
&&&& PASSED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=./output/model.onnx --minShapes=input0:1x3x224x224 --optShapes=input0:1x3x224x224 --maxShapes=input0:64x3x224x224 --explicitBatch --fp16 --saveEngine=./output/model_fp16.plan
"""

TRT10_BUILD_FAILED = """\
[09/09/2025-10:24:51] [E] [TRT] [builder.cpp::nvinfer1::builder::createCaskKernelLibraryImpl::157] Error Code 2: Internal Error (Assertion validateCaskKLibSize(buffer.size) failed. )
[09/09/2025-10:24:51] [E] Builder creation failed
[09/09/2025-10:24:51] [E] Failed to create engine from model or file.
[09/09/2025-10:24:51] [E] Engine set up failed
&&&& FAILED TensorRT.trtexec [TensorRT v100800] [b43] # trtexec.exe --onnx=yolov8n.onnx --saveEngine=best.trt
"""

TRT86_HELP_FIRST_LINE = "&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --help\n"
TRT10_RUNNING_LINE = (
    "&&&& RUNNING TensorRT.trtexec [TensorRT v100200] # D:\\TensorRT-10.2.0.19\\bin\\trtexec.exe "
    "--loadEngine=FM_P_D_fp16.engine\n"
)

TRT11_RUN = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --loadEngine=cache/model.engine
[01/05/2026-10:00:00] [I] Selected Device: NVIDIA H100 80GB HBM3
[01/05/2026-10:00:00] [I] TensorRT version: 11.1.0
[01/05/2026-10:00:01] [I] Engine deserialized in 0.10331 sec.
[01/05/2026-10:00:04] [I] Timing trace has 2077 queries over 3.0039 s
[01/05/2026-10:00:04] [I] === Performance summary ===
[01/05/2026-10:00:04] [I] Throughput: 691.435 qps
[01/05/2026-10:00:04] [I] Latency: min = 1.4209 ms, max = 3.047 ms, mean = 1.48372 ms, median = 1.43823 ms, percentile(90%) = 1.45624 ms, percentile(95%) = 1.71796 ms, percentile(99%) = 2.61597 ms
[01/05/2026-10:00:04] [I] Enqueue Time: min = 0.208801 ms, max = 0.461304 ms, mean = 0.263621 ms, median = 0.259033 ms, percentile(90%) = 0.293823 ms, percentile(95%) = 0.311768 ms, percentile(99%) = 0.402832 ms
[01/05/2026-10:00:04] [I] H2D Latency: min = 0.0258789 ms, max = 0.0687256 ms, mean = 0.0362824 ms, median = 0.0361328 ms, percentile(90%) = 0.0378418 ms, percentile(95%) = 0.0385742 ms, percentile(99%) = 0.0616455 ms
[01/05/2026-10:00:04] [I] GPU Compute Time: min = 1.38855 ms, max = 3.00439 ms, mean = 1.44357 ms, median = 1.39775 ms, percentile(90%) = 1.40308 ms, percentile(95%) = 1.67834 ms, percentile(99%) = 2.57642 ms
[01/05/2026-10:00:04] [I] D2H Latency: min = 0.00286865 ms, max = 0.00561523 ms, mean = 0.00387057 ms, median = 0.00366211 ms, percentile(90%) = 0.00488281 ms, percentile(95%) = 0.00500488 ms, percentile(99%) = 0.00537109 ms
[01/05/2026-10:00:04] [I] Total Host Walltime: 3.0039 s
&&&& PASSED TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --loadEngine=cache/model.engine
"""

TRT11_UNKNOWN_FP16 = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --onnx=model.onnx --fp16
[01/05/2026-10:00:00] [E] Unknown option: --fp16
&&&& FAILED TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --onnx=model.onnx --fp16
"""

NO_DRIVER = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v100900] [b34] # trtexec --onnx=model.onnx
[04/07/2025-23:59:33] [I] === Device Information ===
Cuda failure: CUDA driver version is insufficient for CUDA runtime version
"""

#: TensorRT 10's samples name the file and line of the failed CUDA call.
NO_DRIVER_AT = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v101300] [b6] # trtexec --onnx=model.onnx
[09/02/2025-10:00:00] [I] === Device Information ===
Cuda failure at /_src/samples/common/sampleDevice.h:34: CUDA-capable device(s) is/are busy \
or unavailable
"""


def export_times(entries: list[tuple[float, float, float]], start_ms: float = 250.0) -> str:
    """An --exportTimes file as trtexec 10 writes it, for (h2d, compute, d2h) per query."""
    lines, clock, sep = ["["], start_ms, "  "
    for h2d, compute, d2h in entries:
        fields = {
            "startEnqMs": clock,
            "endEnqMs": clock + 0.25,
            "startH2dMs": clock,
            "endH2dMs": clock + h2d,
            "startComputeMs": clock + h2d,
            "endComputeMs": clock + h2d + compute,
            "startD2hMs": clock + h2d + compute,
            "endD2hMs": clock + h2d + compute + d2h,
            "h2dMs": h2d,
            "computeMs": compute,
            "d2hMs": d2h,
            "latencyMs": h2d + compute + d2h,
            "endToEndMs": h2d + compute + d2h,
        }
        lines.append(sep + "{ " + ", ".join(f'"{k}" : {v:g}' for k, v in fields.items()) + " }")
        sep, clock = ", ", clock + h2d + compute + d2h
    return "\n".join([*lines, "]", ""])
