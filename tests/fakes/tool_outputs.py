"""What the frameworks' own tools print on an accelerator, as they print it.

Sources, line by line (docs/accelerators-tools.md repeats them):
- benchncnn: ``NCNN_LAVAPIPE_RUN`` and ``NCNN_CPU_BUILD_RUN`` are real runs on this machine of
  ncnn 20250428's benchmark/benchncnn.cpp, built against edgebench-native's ncnn libraries
  with and without NCNN_VULKAN (``benchncnn 4 1 0 0 0 param=squeezenet.param
  shape=[227,227,3]`` on lavapipe; the CPU build echoes ``gpu_device = 0`` and runs on the CPU),
  and ``vkCreateInstance failed -9`` what the Vulkan build printed without a driver before it
  crashed (SIGSEGV). The Adreno 640 device lines are from Tencent/ncnn benchmark/README.md (a
  OnePlus 7T run with ``gpu_device`` 0); the 2026 llvmpipe lines are what ncnn 1.0.20261020
  (the PyPI wheel) prints at ``create_gpu_instance()`` here.
- benchmark_model: the NNAPI run is a Synaptics board's (TF 2.15, its NNAPI documentation), whose
  timing lines also follow the GPU lines; the GPU delegate's lines are from an Android GPU
  delegate sample's log and tensorflow/tensorflow issue #43541, the partial NNAPI delegation
  from an MT6899 phone's log, the NNAPI delegate taking no node from issue #56301; the GPU
  delegate's refusal lines from reports of TfLiteGpuDelegate failing to prepare, ending with
  benchmark_tflite_model.cc's "Failed to apply GPU delegate." and "Benchmarking failed.".
- MNN benchmark.out: ``MNN_OPENCL_FALLBACK_RUN`` is a real run here of MNN 3.6.1's
  benchmark/benchmark.cpp built against edgebench-native's CPU-only MNN library
  (``benchmark.out models 20 5 3 1 1``); ``mnn_header`` follows its header format.
- TNNTest: ``TNN_NO_OPENCL`` is a real run here of TNN f0cb081's test/ built against
  edgebench-native's TNN library (no OpenCL in it) with ``-dt OPENCL``: it exits 0 without a
  result. The OpenCL result line is the X86 build's real line with the device it names changed.
- benchmark_app: OpenVINO 2026.4.1's Python tool on this machine (``-d GPU`` without a GPU).

``@MODEL@`` stands for the model's label; the fake tools fill it in from their arguments.
"""

NCNN_ADRENO_DEVICE = """\
[0 Adreno (TM) 640]  queueC=0[3]  queueG=0[3]  queueT=0[3]
[0 Adreno (TM) 640]  bugsbn1=0  bugbilz=0  bugcopc=0  bugihfa=1
[0 Adreno (TM) 640]  fp16-p/s/a=1/0/1  int8-p/s/a=1/0/0
[0 Adreno (TM) 640]  subgroup=64  basic=1  vote=1  ballot=0  shuffle=0
"""

NCNN_LLVMPIPE_DEVICE = """\
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  queueC=0[1]  queueT=0[1]  prefer-slm=0  rebar=1  r-score=4
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  fp16-p/s/u/a=1/1/1/1  int8-p/s/u/a=1/1/1/1  bf16-p/s=1/0
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  subgroup=8(8~8)  ops=1/1/1/1/1/1/0/1/0/0
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  fp16-cm=0  int8-cm=0  bf16-cm=0  fp8-cm=0  fp6-cm=0  fp4-cm=0
"""

NCNN_NO_VULKAN_DRIVER = "vkCreateInstance failed -9\n"

NCNN_LAVAPIPE_RUN = """\
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  queueC=0[1]  queueG=0[1]  queueT=0[1]
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  bugsbn1=0  bugbilz=0  bugcopc=0  bugihfa=0
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  fp16-p/s/u/a=1/1/1/1  int8-p/s/u/a=1/1/1/1
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  subgroup=8(8~8)  ops=1/1/1/1/1/1/0/1/0/0
[0 llvmpipe (LLVM 15.0.6, 256 bits)]  fp16-8x8x16/16x8x8/16x8x16/16x16x16=0/0/0/0
loop_count = 4
num_threads = 1
powersave = 0
gpu_device = 0
cooling_down = 0
    @MODEL@  min =  107.53  max =  175.47  avg =  140.35
"""

NCNN_CPU_BUILD_RUN = """\
loop_count = 4
num_threads = 1
powersave = 0
gpu_device = 0
cooling_down = 0
    @MODEL@  min =    7.32  max =    7.64  avg =    7.42
"""


def ncnn_header(gpu_device: int) -> str:
    return (
        f"loop_count = 8\nnum_threads = 1\npowersave = 0\n"
        f"gpu_device = {gpu_device}\ncooling_down = 0\n"
    )


NCNN_RESULT = "@MODEL@  min =   10.68  max =   11.38  avg =   10.85\n"

TFLITE_TIMED = """\
INFO: The input model file size (MB): 0.497264
INFO: Initialized session in 66.002ms.
INFO: Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if exceeding 150 seconds.
INFO: count=1 curr=637079

INFO: Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
INFO: count=520 first=2531 curr=2793 min=1171 max=9925 avg=1885.74 std=870

INFO: Inference timings in us: Init: 66002, First inference: 637079, Warmup (avg): 637079, Inference (avg): 1885.74
INFO: Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to the actual memory footprint of the model at runtime. Take the information at your discretion.
INFO: Memory footprint delta from the start of the tool (MB): init=7.40234 overall=7.83203
"""  # noqa: E501

TFLITE_NNAPI = (
    """\
INFO: STARTING!
INFO: Tensorflow Version : 2.15.0
INFO: Log parameter values verbosely: [0]
INFO: Graph: [/data/local/tmp/mobilenet_v1_0.25_224_quant.tflite]
INFO: Use NNAPI: [1]
INFO: NNAPI accelerator name: [synap-npu]
INFO: NNAPI accelerators available: [synap-npu,nnapi-reference]
INFO: Loaded model /data/local/tmp/mobilenet_v1_0.25_224_quant.tflite
INFO: Initialized TensorFlow Lite runtime.
INFO: Created TensorFlow Lite delegate for NNAPI.
INFO: NNAPI delegate created.
WARNING: NNAPI SL driver did not implement SL_ANeuralNetworksDiagnostic_registerCallbacks!
VERBOSE: Replacing 31 out of 31 node(s) with delegate (TfLiteNnapiDelegate) node, yielding 1 partitions for the whole graph.
INFO: Explicitly applied NNAPI delegate, and the model graph will be completely executed by the delegate.
"""  # noqa: E501
    + TFLITE_TIMED
)

TFLITE_GPU = (
    """\
INFO: Initialized TensorFlow Lite runtime.
INFO: Created TensorFlow Lite delegate for GPU.
INFO: GPU delegate created.
VERBOSE: Replacing 25 out of 25 node(s) with delegate (TfLiteGpuDelegateV2) node, yielding 1 partitions for the whole graph.
INFO: Initialized OpenCL-based API.
INFO: Created 1 GPU delegate kernels.
INFO: Explicitly applied GPU delegate, and the model graph will be completely executed by the delegate.
"""  # noqa: E501
    + TFLITE_TIMED
)

#: NNAPI took 5 of 64 nodes, XNNPACK 59 of the 62 left (an MT6899 phone).
TFLITE_NNAPI_PARTIAL = """\
VERBOSE: Replacing 5 out of 64 node(s) with delegate (TfLiteNnapiDelegate) node, yielding 5 partitions for the whole graph.
VERBOSE: Replacing 59 out of 62 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 5 partitions for the whole graph.
"""  # noqa: E501

TFLITE_NNAPI_TAKES_NOTHING = (
    """\
INFO: Use NNAPI: [1]
INFO: NNAPI accelerators available: [ipuadaptor,nnapi-reference]
INFO: Use xnnpack: [0]
INFO: Initialized TensorFlow Lite runtime.
INFO: Created TensorFlow Lite delegate for NNAPI.
INFO: NNAPI delegate created.
INFO: Though NNAPI delegate is explicitly applied, the model graph will not be executed by the delegate.
"""  # noqa: E501
    + TFLITE_TIMED
)

TFLITE_GPU_REFUSED = """\
INFO: Initialized TensorFlow Lite runtime.
INFO: Created TensorFlow Lite delegate for GPU.
INFO: GPU delegate created.
ERROR: TfLiteGpuDelegate Init: FromTensorConverter: Batch size != 1 is not supported.
ERROR: TfLiteGpuDelegate Prepare: delegate is not initialized
ERROR: Node number 230 (TfLiteGpuDelegateV2) failed to prepare.
ERROR: Restored original execution plan after delegate application failure.
ERROR: Failed to apply GPU delegate.
ERROR: Benchmarking failed.
"""

MNN_RESULT = (
    "[ - ] @MODEL@                  max =    9.871 ms  min =    8.973 ms  avg =    9.289 ms\n"
)


def mnn_header(forward: str, precision: int) -> str:
    return (
        "MNN benchmark\n"
        f"Forward type: {forward} thread=1 precision={precision} sparsity=0 sparseBlockOC=1 "
        "testQuantizedModel=0 enableKleidiAI=0\n"
        "--------> Benchmarking... loop = 20, warmup = 5\n"
        "[-INFO-]: precision!=2, use fp32 inference.\n"
    )


MNN_OPENCL_FALLBACK_RUN = """\
MNN benchmark
Forward type: OpenCL thread=1 precision=1 sparsity=0 sparseBlockOC=1 testQuantizedModel=0 enableKleidiAI=0
--------> Benchmarking... loop = 20, warmup = 5
[-INFO-]: precision!=2, use fp32 inference.
The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0
Can't Find type=3 backend, use 0 instead
Can't Find type=3 backend, use 0 instead
[ - ] @MODEL@                    max =    0.001 ms  min =    0.000 ms  avg =    0.000 ms
"""  # noqa: E501

TNN_OPENCL_RESULT = (
    "I/tnn: Print [File test/timer.cc][Line 59] @MODEL@ - OPENCL"
    "              TNN Benchmark time cost: min = 3.718    ms  |  max = 5.653    ms  |"
    "  avg = 4.725    ms \n"
)

TNN_NO_OPENCL = """\
E/tnn: Init [File source/tnn/core/instance.cc][Line 61] device is nil or unsupported for type: 4096
E/tnn: CheckResult [File /root/.cache/edgebench/native-runner/extracted/TNN-f0cb081-src-3049183c5e77/TNN-f0cb081/test/test.cc][Line 338] create instance failed: code: 0x9000 msg: device is nil or unsupported 
"""  # noqa: E501, W291
