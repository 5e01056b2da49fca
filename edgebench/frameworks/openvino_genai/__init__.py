"""OpenVINO GenAI: its LLMPipeline reads a GGUF file (llama, qwen2, qwen3) as it is."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "openvino-genai",
    order=230,
    backend="openvino_genai_backend",
    artifact_format="gguf",
    workload="generative",
)
