"""ncnn (Tencent): .param and .bin, written by pnnx from the pip package."""

from edgebench.frameworks.rows import VULKAN_PACKAGES, ComputeBackend, ConverterRow, Framework

FRAMEWORK = Framework(
    "ncnn",
    order=30,
    backend="ncnn_backend",
    artifact_format="ncnn",
    converter="ncnn",
    artifact_suffixes=(".param", ".bin"),
    converters=(ConverterRow("ncnn", "edgebench.converters.ncnn_converter:NcnnConverter"),),
    tool="edgebench.framework_tools.benchncnn:BenchncnnAdapter",
    build="edgebench.frameworks.ncnn.build:BUILD",
    accelerators=(
        ComputeBackend(
            "ncnn",
            "vulkan",
            "Vulkan",
            python="net.opt.use_vulkan_compute (the ncnn wheel has Vulkan compiled in)",
            edgebench_native="opt.use_vulkan_compute in a build with NCNN_VULKAN=ON",
            tool="benchncnn gpu_device 0",
            provides=f"a Vulkan device ({VULKAN_PACKAGES})",
            tool_arg="0",
        ),
    ),
)
