"""ONNX Runtime: the CPU execution provider, or NNAPI's, QNN's, CUDA's or TensorRT's ahead of it
(the GPU providers' options, placement and streams: ort_gpu.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from ..protocol.backend_options import OrtGpuOptions
from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from . import ort_gpu, ort_gpu_streams
from .accelerator import CPU, accelerator_report, fallback
from .base import Backend, Stream, check_precision, first_line
from .trt_engine_cache import model_cache_folder

FRAMEWORK = "onnxruntime"
REQUIRES = ("onnxruntime",)
#: Execution providers of other onnxruntime builds than the PyPI wheel's.
ACCELERATORS = ("nnapi", "qnn", "cuda", "tensorrt")
#: The GPU providers take the NVIDIA options; the others only ``streams``, which they ignore.
OPTIONS = {"cuda": OrtGpuOptions, "tensorrt": OrtGpuOptions}
#: Per accelerator: its execution provider, its API and what provides it.
_PROVIDERS = {
    "nnapi": (
        "NnapiExecutionProvider",
        "NNAPI",
        "an onnxruntime build with the NNAPI execution provider (Android)",
    ),
    "qnn": ("QNNExecutionProvider", "QNN", "onnxruntime-qnn and a Qualcomm Hexagon NPU"),
    "cuda": (
        "CUDAExecutionProvider",
        "CUDA",
        "onnxruntime-gpu in place of onnxruntime, and an NVIDIA GPU with its driver",
    ),
    "tensorrt": (
        "TensorrtExecutionProvider",
        "TensorRT",
        "onnxruntime-gpu in place of onnxruntime, TensorRT's libraries, and an NVIDIA GPU",
    ),
}

_ORT_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


BOUNDARIES = {
    "copy_in": "IOBinding.bind_cpu_input per input (wraps the array) and bind_output",
    "compute": "InferenceSession.run_with_iobinding",
    "copy_out": "IOBinding.copy_outputs_to_cpu (new numpy arrays)",
}


class OnnxRuntimeBackend(Backend):
    name = FRAMEWORK
    # int8: a QDQ model (edgebench converts to one), run by ORT's int8 kernels. fp16 only on
    # the GPU providers (the fp16 ONNX artifact): ORT's CPU kernels are fp32.
    precisions: Tuple[str, ...] = ("fp32", "int8")
    gpu_precisions: Tuple[str, ...] = ("fp32", "fp16", "int8")

    def __init__(self) -> None:
        import onnxruntime as ort

        self._ort = ort
        # No usage events leave the process (Windows-only in practice, but explicit).
        if hasattr(ort, "disable_telemetry_events"):
            ort.disable_telemetry_events()
        self._session: Optional[Any] = None
        self._gpu: Dict[str, Any] = {}

    def version(self) -> str:
        return str(self._ort.__version__)

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        gpu = self.compute_backend in ort_gpu.GPU_PROVIDERS
        if gpu:
            self.precisions = self.gpu_precisions
        check_precision(self, precision)
        ort = self._ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        providers: List[Any] = ["CPUExecutionProvider"]
        if gpu:
            gpu_options = self.read_options(OrtGpuOptions, options)
            providers = self._gpu_providers(so, precision, gpu_options, model_path)
        elif self.compute_backend != CPU:
            providers.insert(0, self._provider())
        started = time.perf_counter()
        try:
            session = self._session = ort.InferenceSession(
                model_path, sess_options=so, providers=providers
            )
        except Exception as exc:  # ORT raises its own exception types per failure
            text = str(exc)
            kind = "unsupported" if "NOT_IMPLEMENTED" in text else "model_load"
            raise BackendError(
                kind, "onnxruntime could not load the model: %s" % first_line(text), text
            ) from exc
        self._gpu["session_ms"] = (time.perf_counter() - started) * 1e3
        asked = providers[0][0] if gpu else providers[0]
        if self.compute_backend != CPU and asked not in session.get_providers():
            raise fallback(
                FRAMEWORK,
                self.compute_backend,
                "the session's providers are %s" % ", ".join(session.get_providers()),
            )
        if gpu:
            make = ort_gpu_streams.session_maker(ort, model_path, so, providers)
            graph = self._gpu["cuda_graph"]
            self._gpu["streams"] = ort_gpu_streams.StreamSessions(ort, session, make, graph)
            self.no_shared_instances = ort_gpu_streams.GRAPHS_NOT_SHARED if graph else None

    def _gpu_providers(
        self, so: Any, precision: str, options: OrtGpuOptions, model_path: str
    ) -> List[Any]:
        """The CUDA or TensorRT provider chain, with the session profiled until the first
        inference (its node events say where each node ran: accelerator_report)."""
        ort = self._ort
        ort_gpu.preload_libraries(ort)
        available = list(ort.get_available_providers())
        if ort_gpu.GPU_PROVIDERS[self.compute_backend][0] not in available:
            raise ort_gpu.missing_provider(self.compute_backend, available)
        cache = ort_gpu.cache_dir(options)
        if self.compute_backend == "tensorrt":  # one folder per model content (model_cache_folder)
            cache = model_cache_folder(cache, model_path)
            os.makedirs(cache, exist_ok=True)
        self._gpu = {
            "cache": cache,
            "engines_before": ort_gpu.engine_files(cache),
            "cuda_graph": options.cuda_graph,
            "profile_dir": tempfile.mkdtemp(prefix="edgebench-ort-"),
        }
        so.enable_profiling = True
        so.profile_file_prefix = self._gpu["profile_dir"] + "/placement"
        return ort_gpu.provider_options(self.compute_backend, precision, options, cache)

    def _provider(self) -> str:
        """The accelerator's execution provider, when this onnxruntime build has it."""
        provider, _, provides = _PROVIDERS[self.compute_backend]
        available = list(self._ort.get_available_providers())
        if provider not in available:
            raise BackendError(
                "unsupported",
                "this onnxruntime has no %s (it has %s): it needs %s"
                % (provider, ", ".join(available), provides),
            )
        return provider

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        if self.compute_backend == CPU:
            return None
        api = _PROVIDERS[self.compute_backend][1]
        if self.compute_backend not in ort_gpu.GPU_PROVIDERS:
            return accelerator_report(
                api, device_memory_unavailable="onnxruntime's Python API reports no device memory"
            )
        return accelerator_report(api, **self._gpu_report())

    def _gpu_report(self) -> Dict[str, Any]:
        """Where the first inference's nodes ran (a fallback when none left the CPU), the
        TensorRT engine's build or cache, and the CUDA graph."""
        assert self._session is not None
        profile = self._session.end_profiling()
        try:
            placement = ort_gpu.placement_from_profile(profile) if profile else {}
        finally:
            shutil.rmtree(self._gpu["profile_dir"], ignore_errors=True)
        delegated, total = ort_gpu.check_placement(self.compute_backend, placement)
        known: Dict[str, Any] = {
            "placement": placement,
            "delegated_ops": delegated,
            "total_ops": total,
            "cuda_graph": self._gpu["cuda_graph"],
            "stages_note": "copy_in is H2D, copy_out D2H; compute runs with outputs on the GPU",
        }
        if self.compute_backend == "tensorrt":
            before = self._gpu["engines_before"]
            built = set(ort_gpu.engine_files(self._gpu["cache"])) - set(before)
            known["engine_cache"] = "miss" if built or not before else "hit"
            # The provider builds its engine when the session is created.
            known["engine_build_ms"] = self._gpu["session_ms"]
        return known

    def model_inputs(self) -> List[InputSpec]:
        assert self._session is not None
        specs = []
        for node in self._session.get_inputs():
            shape = [d if isinstance(d, int) else -1 for d in node.shape]
            specs.append(InputSpec(node.name, shape, _ORT_DTYPES.get(node.type, node.type)))
        return specs

    def output_names(self) -> List[str]:
        assert self._session is not None
        return [o.name for o in self._session.get_outputs()]

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        # IOBinding separates what run() does in one call: binding the inputs (CPU arrays are
        # wrapped, not copied), the graph, and copying the outputs into new numpy arrays.
        # One session serves every stream: ORT sessions run concurrently and share weights
        # (on the GPU with CUDA graphs, each stream has its own: ort_gpu_streams.py).
        session = self._session
        assert session is not None
        if self.compute_backend in ort_gpu.GPU_PROVIDERS:
            return self._gpu["streams"].stream(feeds)
        binding = session.io_binding()
        names = self.output_names()

        def copy_in() -> None:
            for name, value in feeds.items():
                binding.bind_cpu_input(name, value)
            for name in names:
                binding.bind_output(name)

        def compute() -> None:
            session.run_with_iobinding(binding)

        def copy_out() -> List[Any]:
            return binding.copy_outputs_to_cpu()

        return Stream(copy_in, compute, copy_out, BOUNDARIES)

    def close(self) -> None:
        self._session = None
        self._gpu.pop("streams", None)


BACKEND = OnnxRuntimeBackend
