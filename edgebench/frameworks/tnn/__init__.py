"""TNN (Tencent): .tnnproto and .tnnmodel, written by edgebench's own converter. It has no
Python runtime: its cells run through edgebench-native or TNNTest."""

from edgebench.frameworks.rows import OPENCL_PACKAGES, ComputeBackend, ConverterRow, Framework

FRAMEWORK = Framework(
    "tnn",
    order=60,
    backend="tnn_backend",
    artifact_format="tnn",
    converter="tnn",
    artifact_suffixes=(".tnnproto", ".tnnmodel"),
    converters=(ConverterRow("tnn", "edgebench.converters.tnn_converter:TnnConverter"),),
    tool="edgebench.framework_tools.tnn_test:TnnTestAdapter",
    build="edgebench.frameworks.tnn.build:BUILD",
    accelerators=(
        ComputeBackend(
            "tnn",
            "opencl",
            "OpenCL",
            python=None,
            edgebench_native="DEVICE_OPENCL in a build with TNN_OPENCL_ENABLE=ON",
            tool="TNNTest -dt OPENCL",
            provides=(
                f"a TNN build with TNN_OPENCL_ENABLE=ON and an OpenCL GPU ({OPENCL_PACKAGES})"
            ),
            tool_arg="OPENCL",
        ),
        ComputeBackend(
            "tnn",
            "cuda",
            "CUDA",
            python=None,
            edgebench_native="DEVICE_CUDA in a build with TNN_CUDA_ENABLE=ON",
            tool="TNNTest -dt CUDA",
            provides="a TNN build with TNN_CUDA_ENABLE=ON and an NVIDIA GPU with TensorRT",
            tool_arg="CUDA",
        ),
    ),
)
