"""ONNX Runtime: the CPU execution provider, or NNAPI's, QNN's, CUDA's or TensorRT's ahead of it."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .accelerator import CPU, accelerator_report, fallback
from .base import Backend, BackendError, InputSpec, Stream, check_precision, first_line

FRAMEWORK = "onnxruntime"
REQUIRES = ("onnxruntime",)
#: Execution providers of other onnxruntime builds than the PyPI wheel's.
ACCELERATORS = ("nnapi", "qnn", "cuda", "tensorrt")
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
    # int8: a QDQ model (edgebench converts to one), run by ORT's int8 kernels.
    precisions = ("fp32", "int8")

    def __init__(self) -> None:
        import onnxruntime as ort

        self._ort = ort
        # No usage events leave the process (Windows-only in practice, but explicit).
        if hasattr(ort, "disable_telemetry_events"):
            ort.disable_telemetry_events()
        self._session = None

    def version(self) -> str:
        return str(self._ort.__version__)

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        ort = self._ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        if self.compute_backend != CPU:
            providers.insert(0, self._provider())
        try:
            self._session = ort.InferenceSession(model_path, sess_options=so, providers=providers)
        except Exception as exc:  # ORT raises its own exception types per failure
            text = str(exc)
            kind = "unsupported" if "NOT_IMPLEMENTED" in text else "model_load"
            raise BackendError(
                kind, "onnxruntime could not load the model: %s" % first_line(text), text
            ) from exc
        if self.compute_backend != CPU and providers[0] not in self._session.get_providers():
            raise fallback(
                FRAMEWORK,
                self.compute_backend,
                "the session's providers are %s" % ", ".join(self._session.get_providers()),
            )

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
        return accelerator_report(
            _PROVIDERS[self.compute_backend][1],
            device_memory_unavailable="onnxruntime's Python API reports no device memory",
        )

    def model_inputs(self) -> List[InputSpec]:
        specs = []
        for node in self._session.get_inputs():
            shape = [d if isinstance(d, int) else -1 for d in node.shape]
            specs.append(InputSpec(node.name, shape, _ORT_DTYPES.get(node.type, node.type)))
        return specs

    def output_names(self) -> List[str]:
        return [o.name for o in self._session.get_outputs()]

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        # IOBinding separates what run() does in one call: binding the inputs (CPU arrays are
        # wrapped, not copied), the graph, and copying the outputs into new numpy arrays.
        # One session serves every stream: ORT sessions run concurrently and share weights.
        session = self._session
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


BACKEND = OnnxRuntimeBackend
