"""ExecuTorch: PyTorch's on-device runtime and its LLM runner (``executorch``). Its cells are
``unsupported`` with the reason: no ``.pte`` program can be made here
(runners/backends/executorch_backend.py says why)."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "executorch",
    order=260,
    backend="executorch_backend",
    artifact_format="gguf",
    workload="generative",
)
