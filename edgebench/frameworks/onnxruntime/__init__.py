"""ONNX Runtime: runs the ONNX file itself, and is the reference every other cell's output is
checked against (on the host's CPU)."""

from edgebench.frameworks.rows import NVIDIA_DRIVER, ComputeBackend, Framework
from edgebench.runners.protocol.backend_options import OrtGpuOptions

FRAMEWORK = Framework(
    "onnxruntime",
    order=10,
    backend="onnxruntime_backend",
    int8_format="onnx-qdq",
    accelerators=(
        ComputeBackend(
            "onnxruntime",
            "nnapi",
            "NNAPI",
            python="providers=['NnapiExecutionProvider'] (an Android build of onnxruntime)",
            edgebench_native=None,
            tool=None,
            provides="an onnxruntime build with the NNAPI execution provider (Android)",
        ),
        ComputeBackend(
            "onnxruntime",
            "qnn",
            "QNN",
            python="providers=['QNNExecutionProvider'] (the onnxruntime-qnn package)",
            edgebench_native=None,
            tool=None,
            provides="onnxruntime-qnn and a Qualcomm Hexagon NPU",
        ),
        ComputeBackend(
            "onnxruntime",
            "cuda",
            "CUDA",
            python="providers=['CUDAExecutionProvider'] (the onnxruntime-gpu package)",
            edgebench_native=None,
            tool=None,
            provides=f"onnxruntime-gpu (in place of onnxruntime) and {NVIDIA_DRIVER}",
            fp16_format="onnx-fp16",
            options=OrtGpuOptions,
        ),
        ComputeBackend(
            "onnxruntime",
            "tensorrt",
            "TensorRT",
            python=(
                "providers=['TensorrtExecutionProvider'] (onnxruntime-gpu, TensorRT's libraries)"
            ),
            edgebench_native=None,
            tool=None,
            provides=(
                "onnxruntime-gpu (in place of onnxruntime), TensorRT's libraries and "
                f"{NVIDIA_DRIVER}"
            ),
            fp16_format="onnx-fp16",
            options=OrtGpuOptions,
        ),
    ),
)
