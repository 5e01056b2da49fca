"""TensorRT: an engine built from the ONNX model for this GPU (or taken from the device's engine
cache), run with ``execute_async_v3`` on CUDA streams driven through libcudart (ctypes).

TensorRT has no CPU backend: its only backend is ``cuda`` (NO_CPU), and a device without a
usable NVIDIA GPU is told so before tensorrt is imported (DEVICE_CHECK). docs/tensorrt.md
says how engines are built and cached, what each option does and how the stages are timed.

Runs on the device: Python 3.8+, numpy, the tensorrt module and libcudart.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..cuda_runtime import CudaError, CudaUnavailable, open_cuda, version_text
from ..protocol.backend_options import TensorRTOptions
from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from .accelerator import accelerator_report
from .base import Backend, Stream, check_precision
from .trt_engine import (
    MIN_MAJOR,
    BuildRequest,
    Engine,
    ParsedModel,
    builder_settings,
    collecting_logger,
    major_version,
    obtain_engine,
    parse_model,
)
from .trt_engine_cache import EngineCache, EngineKey, cache_folder, file_sha256
from .trt_profile import Profile, context_profiles, covers, engine_profile
from .trt_stream import EngineStream

FRAMEWORK = "tensorrt"
REQUIRES = ("tensorrt",)
PIP_EXTRA = "tensorrt"
ACCELERATORS = ("cuda",)
NO_CPU = "runs on NVIDIA GPUs only"
OPTIONS = TensorRTOptions

MIB = 1024 * 1024
BOUNDARIES = {
    "copy_in": "the feed into pinned host memory, then cudaMemcpyAsync host to device per input",
    "compute": "IExecutionContext.execute_async_v3 (or cudaGraphLaunch of its captured graph)",
    "copy_out": "cudaMemcpyAsync device to host per output, the stream's wait, numpy copies",
}
STAGES_NOTE = (
    "stages are CUDA-event times on the GPU's stream (copy_in: the host-to-device copies; "
    "compute: the engine; copy_out: the device-to-host copies); each sample is the host's "
    "clock over the whole call"
)
UNIFIED_MEMORY = (
    "integrated GPU: cudaMemGetInfo counts the system's unified memory, which the CPU and "
    "every process share, so the cell's own share cannot be told apart"
)


def require_gpu() -> None:
    """Refuse, before tensorrt is imported, a device with no usable NVIDIA GPU."""
    try:
        open_cuda()
    except CudaUnavailable as exc:
        raise BackendError("unsupported", str(exc)) from exc


DEVICE_CHECK = require_gpu

#: One logger per process: TensorRT's objects keep the logger they were made with.
_LOGGERS: List[Any] = []


class TensorRTBackend(Backend):
    name = FRAMEWORK
    # fp16 and int8 arrive as ONNX graphs carrying their precision (casts, Q/DQ nodes).
    precisions = ("fp32", "fp16", "int8")

    def __init__(self) -> None:
        import tensorrt as trt

        if major_version(trt) < MIN_MAJOR:
            raise BackendError(
                "unsupported",
                "the TensorRT backend needs TensorRT %d or later (this is %s)"
                % (MIN_MAJOR, trt.__version__),
            )
        self._trt = trt
        if not _LOGGERS:
            _LOGGERS.append(collecting_logger(trt))
        self._logger = _LOGGERS[0]
        self._cuda = open_cuda()
        self._parsed: Optional[ParsedModel] = None
        self._engines: List[Tuple[Profile, Engine]] = []
        self._streams: List[EngineStream] = []
        #: The profile index of each concurrent context (context_profiles) and how many
        #: contexts each engine (by id) has made since the streams were last closed.
        self._plan: List[int] = [0]
        self._made: Dict[int, int] = {}
        self._options = TensorRTOptions()
        self._reuse = False
        self._used_before: Optional[int] = None

    def version(self) -> str:
        return str(self._trt.__version__)

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        cuda = self._cuda
        try:
            cuda.set_device(0)
            self._device = cuda.device_info(0)
        except CudaError as exc:
            raise BackendError("unsupported", "the GPU is not usable: %s" % exc) from exc
        self._used_before = self.device_memory_used_bytes()
        self._precision = precision
        self._options = self.read_options(TensorRTOptions, options)
        self._model_sha256 = file_sha256(model_path)
        folder = cache_folder(self._options)
        self._cache = EngineCache(folder) if folder is not None else None
        self._parsed = parse_model(self._trt, self._logger, model_path)
        model = [(name, shape) for name, shape, _ in self._parsed.inputs]
        self._plan = context_profiles(model, self._options.streams)
        profile = engine_profile(model, self._options.shape_profile)
        if profile is not None:  # else the shape is known with the feeds (make_stream)
            self._engine_for(profile)

    def _engine_for(self, profile: Profile) -> Engine:
        for built, engine in self._engines:
            if built == profile:
                return engine
        assert self._parsed is not None
        request = BuildRequest(
            profile, self._precision, max(self._plan) + 1, self._options.workspace_mb
        )
        key = EngineKey(
            model_sha256=self._model_sha256,
            profile=profile,
            precision=self._precision,
            tensorrt_version=self.version(),
            gpu_name=self._device.name,
            compute_capability=self._device.compute_capability,
            settings=builder_settings(self._trt, request),
        )
        engine = obtain_engine(self._trt, self._logger, self._parsed, request, key, self._cache)
        self._engines.append((profile, engine))
        return engine

    def model_inputs(self) -> List[InputSpec]:
        assert self._parsed is not None
        return [InputSpec(name, shape, dtype) for name, shape, dtype in self._parsed.inputs]

    def output_names(self) -> List[str]:
        assert self._parsed is not None
        return list(self._parsed.outputs)

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        assert self._parsed is not None
        shapes = {name: list(value.shape) for name, value in feeds.items()}
        given = self._options.shape_profile
        fitting = [e for p, e in self._engines if covers(p, shapes)]
        if fitting:
            engine = fitting[-1]
        elif given:
            raise BackendError(
                "bad_spec", "input shapes %s are outside options.shape_profile %s" % (shapes, given)
            )
        else:  # a fixed-shape engine for these shapes
            model = [(name, shape) for name, shape, _ in self._parsed.inputs]
            profile = engine_profile(model, None, shapes)
            assert profile is not None
            engine = self._engine_for(profile)
        if self._reuse:
            self._close_streams()
            self._reuse = False
        made = self._made.get(id(engine), 0)
        self._made[id(engine)] = made + 1
        stream = EngineStream(
            self._trt,
            self._cuda,
            engine.engine,
            feeds,
            self.output_names(),
            lambda: self._logger.errors,
            self._plan[made % len(self._plan)],
        )
        if self._options.cuda_graph:
            try:
                stream.capture_graph()
            except BaseException:
                stream.close()
                raise
        self._streams.append(stream)
        self._current = engine
        return Stream(
            stream.copy_in, stream.compute, stream.copy_out, BOUNDARIES, stream.device_stage_ns
        )

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        engine = self._current
        cuda = self._cuda
        used = self.device_memory_used_bytes()
        memory_mb: Optional[float] = None
        unavailable: Optional[str] = UNIFIED_MEMORY
        if not self._device.integrated:
            unavailable = "cudaMemGetInfo did not answer"
            if used is not None and self._used_before is not None:
                memory_mb, unavailable = round((used - self._used_before) / MIB, 3), None
        layers = getattr(engine.engine, "num_layers", None)
        return accelerator_report(
            "CUDA",
            device=self._device.name,
            device_type="integrated" if self._device.integrated else "discrete",
            driver="CUDA %s" % version_text(cuda.driver_version()),
            api_version=version_text(cuda.runtime_version()),
            precision=self._precision_label(),
            engine_build_ms=round(engine.build_ms, 3),
            engine_cache=engine.cache,
            cuda_graph=self._options.cuda_graph,
            stages_note=STAGES_NOTE,
            device_memory_mb=memory_mb,
            device_memory_unavailable=unavailable,
            placement={"GPU": int(layers)} if layers is not None else None,
        )

    def _precision_label(self) -> str:
        """What ran: the graph's own types; fp32 says when TF32 math was switched off."""
        if self._precision == "fp32" and hasattr(self._trt.BuilderFlag, "TF32"):
            return "fp32 (TF32 off)"
        return self._precision

    def device_memory_used_bytes(self) -> Optional[int]:
        """The GPU's memory in use (every process's: cudaMemGetInfo's total - free)."""
        try:
            free, total = self._cuda.memory_info()
        except CudaError:
            return None
        return total - free

    def reuse_streams(self) -> None:
        self._reuse = True

    # No window hook: every call ends waiting for its stream, so no work is left queued.

    def _close_streams(self) -> None:
        streams, self._streams = self._streams, []
        self._made = {}
        for stream in streams:
            stream.close()

    def close(self) -> None:
        self._close_streams()
        self._engines = []
        self._parsed = None


BACKEND = TensorRTBackend
