"""LiteRT-LM: Google's on-device LLM runtime (``litert-lm-api``). Its cells are ``unsupported``
with the reason: no ``.litertlm`` model can be made here (runners/backends/litert_lm_backend.py
says why)."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "litert-lm",
    order=250,
    backend="litert_lm_backend",
    artifact_format="gguf",
    workload="generative",
)
