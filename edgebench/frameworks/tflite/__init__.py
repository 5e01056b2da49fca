"""LiteRT (TensorFlow Lite): .tflite, written by edgebench's own writer or by onnx2tf."""

from edgebench.frameworks.rows import ComputeBackend, ConverterRow, Framework

FRAMEWORK = Framework(
    "tflite",
    order=40,
    backend="tflite_backend",
    artifact_format="tflite",
    converter="tflite",
    artifact_suffixes=(".tflite", None),
    converters=(
        ConverterRow("tflite", "edgebench.converters.tflite_converter:TfliteConverter"),
        ConverterRow(
            "tflite", "edgebench.converters.onnx2tf_converter:Onnx2tfConverter", choice="onnx2tf"
        ),
    ),
    tool="edgebench.framework_tools.tflite_benchmark:TfliteBenchmarkAdapter",
    accelerators=(
        ComputeBackend(
            "tflite",
            "gpu",
            "LiteRT GPU",
            python=(
                "CompiledModel with HardwareAccelerator.GPU (ai-edge-litert; WebGPU over Vulkan)"
            ),
            edgebench_native=None,
            tool="benchmark_model --use_gpu=true",
            provides="a GPU that LiteRT's GPU accelerator finds (on phones: the GPU delegate)",
            tool_arg="--use_gpu=true",
        ),
        ComputeBackend(
            "tflite",
            "nnapi",
            "NNAPI",
            python=None,
            edgebench_native=None,
            tool="benchmark_model --use_nnapi=true",
            provides="Android's NNAPI (benchmark_model on the phone)",
            tool_arg="--use_nnapi=true",
        ),
    ),
)
