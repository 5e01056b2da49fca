"""MNN-LLM: MNN's LLM engine, on a model folder (llm.mnn, config.json, embeddings, tokenizer)
that edgebench writes from the GGUF itself (converters/mnn_llm), since MNN's own exporter
(llmexport.py) needs torch. Its own tool is MNN's llm_bench (the framework-tools runner),
compiled against the same library (edgebench/builds/llm_bench.py)."""

from edgebench.frameworks.rows import ConverterRow, Framework

FRAMEWORK = Framework(
    "mnn-llm",
    order=240,
    backend="mnn_llm_backend",
    artifact_format="mnn-llm",
    converter="mnn-llm",
    converters=(ConverterRow("mnn-llm", "edgebench.converters.mnn_llm.converter:MnnLlmConverter"),),
    workload="generative",
    tool="edgebench.framework_tools.mnn_llm_bench:LlmBenchAdapter",
    build="edgebench.frameworks.mnn_llm.build:BUILD",
)
