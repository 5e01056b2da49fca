"""OpenVINO (Intel): IR .xml and .bin, written by ovc from the pip package."""

from edgebench.frameworks.rows import ComputeBackend, ConverterRow, Framework

FRAMEWORK = Framework(
    "openvino",
    order=50,
    backend="openvino_backend",
    artifact_format="openvino",
    converter="openvino",
    artifact_suffixes=(".xml", ".bin"),
    converters=(
        ConverterRow("openvino", "edgebench.converters.openvino_converter:OpenVinoConverter"),
    ),
    tool="edgebench.framework_tools.openvino_benchmark_app:OpenvinoBenchmarkAppAdapter",
    accelerators=(
        ComputeBackend(
            "openvino",
            "gpu",
            "OpenVINO GPU",
            python="core.compile_model(model, 'GPU')",
            edgebench_native=None,
            tool="benchmark_app -d GPU",
            provides="an Intel GPU with its OpenCL driver (intel-opencl-icd)",
            tool_arg="GPU",
        ),
        ComputeBackend(
            "openvino",
            "npu",
            "OpenVINO NPU",
            python="core.compile_model(model, 'NPU')",
            edgebench_native=None,
            tool="benchmark_app -d NPU",
            provides="an Intel NPU with its driver",
            tool_arg="NPU",
        ),
    ),
)
