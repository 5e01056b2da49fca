"""ONNX Runtime GenAI: a model folder (genai_config.json and the ONNX decoder) that edgebench
writes from the GGUF itself (converters/ort_genai), since the runtime's own model builder needs
torch."""

from edgebench.frameworks.rows import ConverterRow, Framework

FRAMEWORK = Framework(
    "onnxruntime-genai",
    order=220,
    backend="onnxruntime_genai_backend",
    artifact_format="ort-genai",
    converter="ort-genai",
    converters=(
        ConverterRow("ort-genai", "edgebench.converters.ort_genai.converter:OrtGenAiConverter"),
    ),
    workload="generative",
)
