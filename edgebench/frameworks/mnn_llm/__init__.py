"""MNN-LLM: MNN's LLM engine. Its cells are ``unsupported`` with the reason until edgebench can
make or run its model folder (runners/backends/mnn_llm_backend.py says why)."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "mnn-llm",
    order=240,
    backend="mnn_llm_backend",
    artifact_format="gguf",
    workload="generative",
)
