"""Building a TensorRT engine from the ONNX file (or taking it from the device's cache).

``Builder`` -> strongly typed network -> ``OnnxParser`` -> builder config (TF32 off, the
optimization profile, the shared timing cache) -> ``build_serialized_network`` ->
``Runtime.deserialize_cuda_engine``. Every network is strongly typed: the ONNX graph carries
its precision (an fp16 model with casts, a QDQ model for int8), which is the only way on
TensorRT 11 (no FP16/INT8 builder flags) and the same engine semantics on TensorRT 10.
TensorRT's errors reach the user as one line: the parser's first error names the node and
its operator; a failed build gives the logger's first error.

Runs on the device: Python 3.8+, the tensorrt module.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..protocol.errors import BackendError
from .base import first_line
from .trt_engine_cache import HIT, MISS, OFF, EngineCache, EngineKey
from .trt_profile import Profile

#: The oldest TensorRT major the backend drives (name-based tensors, execute_async_v3).
MIN_MAJOR = 10
#: Words in TensorRT's build errors that say a layer or type cannot run, not a broken model.
UNSUPPORTED_WORDS = ("unsupported", "not supported", "no implementation", "could not find any")


def major_version(trt: Any) -> int:
    return int(str(trt.__version__).split(".")[0])


def collecting_logger(trt: Any) -> Any:
    """A ``trt.ILogger`` that keeps the errors (for one-line messages) and passes warnings
    and errors on to stderr."""

    class CollectingLogger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: List[str] = []

        def log(self, severity: Any, msg: str) -> None:
            level = int(severity)
            if level <= int(trt.ILogger.ERROR):
                self.errors.append(msg)
            if level <= int(trt.ILogger.WARNING):
                sys.stderr.write("tensorrt: %s\n" % msg)

    return CollectingLogger()


@dataclass
class ParsedModel:
    """The ONNX model as a TensorRT network (the builder and parser stay with it: the
    network refers to weights the parser holds)."""

    builder: Any
    network: Any
    parser: Any
    #: (name, shape with -1 for dynamic dims, numpy dtype name)
    inputs: List[Tuple[str, List[int], str]]
    outputs: List[str]


def parse_model(trt: Any, logger: Any, model_path: str) -> ParsedModel:
    builder = trt.Builder(logger)
    flags = 0
    strongly_typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    if strongly_typed is not None:  # TensorRT 11 keeps the flag but always types strongly
        flags |= 1 << int(strongly_typed)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(model_path):
        raise parser_failure(parser, logger)
    inputs = []
    for index in range(network.num_inputs):
        tensor = network.get_input(index)
        dtype = trt.nptype(tensor.dtype)
        inputs.append((tensor.name, [int(d) for d in tensor.shape], _dtype_name(dtype)))
    outputs = [network.get_output(i).name for i in range(network.num_outputs)]
    return ParsedModel(builder, network, parser, inputs, outputs)


def parser_failure(parser: Any, logger: Any) -> BackendError:
    """The parser's first error as one line naming the node and operator."""
    if not parser.num_errors:
        reason = logger.errors[0] if logger.errors else "no reason given"
        return BackendError("model_load", "tensorrt could not parse the model: %s" % reason)
    error = parser.get_error(0)
    code = getattr(error.code(), "name", str(error.code()))
    name = error.node_name() if hasattr(error, "node_name") else ""
    operator = error.node_operator() if hasattr(error, "node_operator") else ""
    where = "node %d" % error.node()
    if name or operator:
        where = "node %r (%s)" % (name, operator or "operator unknown")
    kind = "unsupported" if "UNSUPPORTED" in code else "model_load"
    details = "; ".join(str(parser.get_error(i).desc()) for i in range(parser.num_errors))
    return BackendError(
        kind,
        "tensorrt's ONNX parser rejects %s: %s [%s]" % (where, first_line(error.desc()), code),
        details,
    )


@dataclass
class BuildRequest:
    """What one engine is built from (the key's ingredients besides the model and GPU)."""

    profile: Profile
    precision: str
    #: Optimization profiles of the same ranges: one per concurrent execution context on a
    #: dynamic-shape network (trt_profile.context_profiles), else 1.
    profile_count: int = 1
    workspace_mb: Optional[int] = None
    settings: Dict[str, Any] = field(default_factory=dict)


def builder_settings(trt: Any, request: BuildRequest) -> Dict[str, Any]:
    """The builder settings that change the engine, for the cache key and the report."""
    return {
        "strongly_typed": True,
        "tf32": False if hasattr(trt.BuilderFlag, "TF32") else None,
        "profiles": request.profile_count,
        "workspace_mb": request.workspace_mb,
    }


def build_engine(
    trt: Any, logger: Any, parsed: ParsedModel, request: BuildRequest, timing_cache: bytes
) -> Tuple[bytes, bytes, float]:
    """(serialized engine, updated timing cache, build time in ms)."""
    config = parsed.builder.create_builder_config()
    if hasattr(trt.BuilderFlag, "TF32"):  # fp32 means fp32, not TF32 tensor-core math
        config.clear_flag(trt.BuilderFlag.TF32)
    if request.workspace_mb:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, request.workspace_mb << 20)
    for _ in range(request.profile_count):
        profile = parsed.builder.create_optimization_profile()
        for name, ranges in request.profile.items():
            profile.set_shape(name, ranges["min"], ranges["opt"], ranges["max"])
        config.add_optimization_profile(profile)
    cache = config.create_timing_cache(timing_cache)
    config.set_timing_cache(cache, False)
    del logger.errors[:]
    t0 = time.perf_counter()
    serialized = parsed.builder.build_serialized_network(parsed.network, config)
    build_ms = (time.perf_counter() - t0) * 1e3
    if serialized is None:
        reason = logger.errors[0] if logger.errors else "no error logged"
        lowered = reason.lower()
        kind = "unsupported" if any(w in lowered for w in UNSUPPORTED_WORDS) else "model_load"
        message = "tensorrt could not build an engine: %s" % first_line(reason)
        raise BackendError(kind, message, "\n".join(logger.errors))
    updated = bytes(memoryview(config.get_timing_cache().serialize()))
    return bytes(memoryview(serialized)), updated, build_ms


@dataclass
class Engine:
    engine: Any
    build_ms: float
    cache: str
    #: Kept while the engine lives: TensorRT wants the runtime to outlive its engines.
    runtime: Any = None


def obtain_engine(
    trt: Any,
    logger: Any,
    parsed: ParsedModel,
    request: BuildRequest,
    key: EngineKey,
    cache: Optional[EngineCache],
) -> Engine:
    """The engine for ``key``: deserialized from the cache, or built (and stored)."""
    runtime = trt.Runtime(logger)
    if cache is not None:
        cached = cache.lookup(key)
        if cached is not None:
            engine = runtime.deserialize_cuda_engine(cached.data)
            if engine is not None:
                return Engine(engine, cached.build_ms or 0.0, HIT, runtime)
            cache.discard(key, "TensorRT could not deserialize it")
    timing_path = None
    timing = b""
    if cache is not None:
        timing_path = cache.timing_cache_path(
            key.tensorrt_version, key.gpu_name, key.compute_capability
        )
        timing = cache.load_timing_cache(timing_path)
    data, timing, build_ms = build_engine(trt, logger, parsed, request, timing)
    engine = runtime.deserialize_cuda_engine(data)
    if engine is None:
        reason = logger.errors[-1] if logger.errors else "no error logged"
        raise BackendError("model_load", "tensorrt built an engine it cannot load: %s" % reason)
    if cache is None:
        return Engine(engine, build_ms, OFF, runtime)
    try:
        cache.store(key, data, build_ms)
        if timing_path is not None:
            cache.save_timing_cache(timing_path, timing)
    except OSError as exc:  # a full or read-only disk costs the cache, not the cell
        sys.stderr.write("edgebench tensorrt cache: not stored: %s\n" % exc)
    return Engine(engine, build_ms, MISS, runtime)


def _dtype_name(dtype: Any) -> str:
    import numpy as np

    return np.dtype(dtype).name
