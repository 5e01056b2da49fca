"""TensorRT (NVIDIA): builds its engine from the ONNX file on the device, since engines are per
GPU and TensorRT version. It has no CPU backend."""

from edgebench.frameworks.rows import NVIDIA_DRIVER, ComputeBackend, Framework
from edgebench.runners.protocol.backend_options import TensorRTOptions

FRAMEWORK = Framework(
    "tensorrt",
    order=70,
    backend="tensorrt_backend",
    int8_format="onnx-qdq",
    default_backend="cuda",
    tool="edgebench.framework_tools.trtexec:TrtexecAdapter",
    accelerators=(
        ComputeBackend(
            "tensorrt",
            "cuda",
            "CUDA",
            python="an engine built by the tensorrt package, run through libcudart (ctypes)",
            edgebench_native=None,
            tool="trtexec --onnx",
            provides=f"the tensorrt package (TensorRT 10 on JetPack 6) and {NVIDIA_DRIVER}",
            tool_arg="",
            fp16_format="onnx-fp16",
            options=TensorRTOptions,
        ),
    ),
)
