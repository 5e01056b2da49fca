"""MNN (Alibaba): its own .mnn format, written by MNNConvert from the pip package."""

from edgebench.frameworks.rows import (
    OPENCL_PACKAGES,
    VULKAN_PACKAGES,
    ComputeBackend,
    ConverterRow,
    Framework,
)

FRAMEWORK = Framework(
    "mnn",
    order=20,
    backend="mnn_backend",
    artifact_format="mnn",
    converter="mnn",
    artifact_suffixes=(".mnn", None),
    converters=(ConverterRow("mnn", "edgebench.converters.mnn_converter:MnnConverter"),),
    tool="edgebench.framework_tools.mnn_benchmark:MnnBenchmarkAdapter",
    build="edgebench.frameworks.mnn.build:BUILD",
    accelerators=(
        ComputeBackend(
            "mnn",
            "opencl",
            "OpenCL",
            python="createSession backend 'OPENCL' (a wheel built with MNN_OPENCL)",
            edgebench_native="MNN_FORWARD_OPENCL in a build with MNN_OPENCL=ON",
            tool="benchmark.out forward type 3",
            provides=f"an MNN build with MNN_OPENCL=ON and an OpenCL GPU ({OPENCL_PACKAGES})",
            tool_arg="3",
        ),
        ComputeBackend(
            "mnn",
            "vulkan",
            "Vulkan",
            python="createSession backend 'VULKAN' (a wheel built with MNN_VULKAN)",
            edgebench_native="MNN_FORWARD_VULKAN in a build with MNN_VULKAN=ON",
            tool="benchmark.out forward type 7",
            provides=f"an MNN build with MNN_VULKAN=ON and a Vulkan device ({VULKAN_PACKAGES})",
            tool_arg="7",
        ),
        ComputeBackend(
            "mnn",
            "cuda",
            "CUDA",
            python="createSession backend 'CUDA' (a wheel built with MNN_CUDA)",
            edgebench_native="MNN_FORWARD_CUDA in a build with MNN_CUDA=ON",
            tool="benchmark.out forward type 2",
            provides="an MNN build with MNN_CUDA=ON and an NVIDIA GPU with its driver",
            tool_arg="2",
        ),
    ),
)
