"""llama.cpp (ggml): runs a GGUF file as it is, through llama-cpp-python's binding; its own
tool is llama-bench (the framework-tools runner)."""

from edgebench.frameworks.rows import Framework

FRAMEWORK = Framework(
    "llama.cpp",
    order=200,
    backend="llama_cpp_backend",
    artifact_format="gguf",
    artifact_suffixes=(".gguf", None),
    workload="generative",
    tool="edgebench.framework_tools.llama_bench:LlamaBenchAdapter",
    build="edgebench.frameworks.llama_cpp.build:BUILD",
)
