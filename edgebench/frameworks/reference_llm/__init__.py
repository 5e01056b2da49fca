"""edgebench's numpy implementation of the GGUF decoders it measures: the reference every
generative runtime's first logits and greedy tokens are checked against, as ONNX Runtime on the
CPU is for tensor models. Slow by design; never in a run that names no frameworks."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "reference-llm",
    order=190,
    backend="reference_llm_backend",
    artifact_format="gguf",
    workload="generative",
    reference=True,
)
