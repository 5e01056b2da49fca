"""ONNX Runtime on NVIDIA GPUs: the CUDA and TensorRT execution providers' options, the engine
cache folder and where the session placed each node (the streams, whose stages are the copies
to and from the GPU and the run in between: ort_gpu_streams.py).

Runs on the device: Python 3.8+, stdlib + numpy + onnxruntime(-gpu).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Dict, List, Tuple

from ..protocol.backend_options import OrtGpuOptions
from ..protocol.errors import BackendError
from .accelerator import fallback
from .trt_engine_cache import cache_root

FRAMEWORK = "onnxruntime"
CPU_PROVIDER = "CPUExecutionProvider"
CUDA_PROVIDER = "CUDAExecutionProvider"
TENSORRT_PROVIDER = "TensorrtExecutionProvider"
#: The profile's event per node run: ``<node>_kernel_time``.
KERNEL_SUFFIX = "_kernel_time"
#: The GPU backends and their provider, ahead of those a node falls back to.
GPU_PROVIDERS = {
    "cuda": (CUDA_PROVIDER, CPU_PROVIDER),
    "tensorrt": (TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER),
}
#: What to do on an NVIDIA device whose onnxruntime lacks the provider.
GPU_ENVIRONMENT = (
    "on an NVIDIA device the runner's environment needs onnxruntime-gpu in place of onnxruntime "
    "(they cannot live in one environment): pip uninstall -y onnxruntime && "
    "pip install 'edgebench[onnxruntime-gpu]'"
)
TENSORRT_LIBRARIES = (
    "; TensorRT's libraries must be found too (pip install tensorrt, or JetPack on Jetson)"
)


def missing_provider(backend: str, available: List[str]) -> BackendError:
    """The one-line refusal for a GPU backend this onnxruntime build cannot run."""
    provider = GPU_PROVIDERS[backend][0]
    fix = GPU_ENVIRONMENT + (TENSORRT_LIBRARIES if backend == "tensorrt" else "")
    return BackendError(
        "unsupported",
        "this onnxruntime has no %s (it has %s): %s" % (provider, ", ".join(available), fix),
    )


def cache_dir(options: OrtGpuOptions) -> str:
    """The folder of the TensorRT provider's engine and timing caches: the ``onnxruntime``
    sub-folder of the TensorRT backend's cache root."""
    return os.path.join(str(cache_root(options)), "onnxruntime")


def _shape_list(profile: Dict[str, Dict[str, List[int]]], which: str) -> str:
    return ",".join(
        "%s:%s" % (name, "x".join(str(int(d)) for d in shapes[which]))
        for name, shapes in sorted(profile.items())
    )


def provider_options(
    backend: str, precision: str, options: OrtGpuOptions, cache: str
) -> List[Tuple[str, Dict[str, Any]]]:
    """The session's providers with their options, the asked one first, then those its
    unsupported nodes fall back to (TensorRT -> CUDA -> CPU).

    fp16 cells arrive as an fp16 ONNX graph; the TensorRT provider builds a weakly typed
    network, which computes in fp32 without its FP16 flag, so ``trt_fp16_enable`` is on for
    them. cuDNN searches every convolution algorithm (``EXHAUSTIVE``, onnxruntime's default,
    named so that a change of default cannot move a result). The CUDA Graphs variant
    (``options.cuda_graph``) turns on the asked provider's graph capture.
    """
    if backend not in GPU_PROVIDERS:
        raise ValueError("not an onnxruntime GPU backend: %r" % backend)
    if precision not in ("fp32", "fp16", "int8"):
        raise ValueError("not a precision: %r" % precision)
    graph = options.cuda_graph
    cuda = {
        "device_id": 0,
        "cudnn_conv_algo_search": "EXHAUSTIVE",
        "enable_cuda_graph": graph and backend == "cuda",
    }
    providers: List[Tuple[str, Dict[str, Any]]] = [(CUDA_PROVIDER, cuda), (CPU_PROVIDER, {})]
    if backend == "tensorrt":
        tensorrt: Dict[str, Any] = {
            "device_id": 0,
            "trt_fp16_enable": precision == "fp16",
            "trt_int8_enable": precision == "int8",
            "trt_engine_cache_enable": True,
            "trt_engine_cache_path": cache,
            "trt_timing_cache_enable": True,
            "trt_timing_cache_path": cache,
            "trt_cuda_graph_enable": graph,
        }
        profile = options.shape_profile
        if profile:
            for which in ("min", "opt", "max"):
                tensorrt["trt_profile_%s_shapes" % which] = _shape_list(profile, which)
        providers.insert(0, (TENSORRT_PROVIDER, tensorrt))
    return providers


def engine_files(cache: str) -> List[str]:
    """The engines the TensorRT provider left in ``cache`` (``*.engine``)."""
    try:
        return sorted(name for name in os.listdir(cache) if name.endswith(".engine"))
    except OSError:
        return []


def placement_from_profile(path: str) -> Dict[str, int]:
    """{provider: node count} from onnxruntime's profile of one inference (the ``Node``
    events' ``args.provider``; a TensorRT or CUDA-graph subgraph is one fused node)."""
    with open(path, encoding="utf-8") as handle:
        events = json.load(handle)
    nodes: Dict[str, str] = {}
    for event in events:
        args = event.get("args") or {}
        name = str(event.get("name", ""))
        if event.get("cat") == "Node" and name.endswith(KERNEL_SUFFIX) and args.get("provider"):
            nodes.setdefault(name[: -len(KERNEL_SUFFIX)], str(args["provider"]))
    placement: Dict[str, int] = {}
    for provider in nodes.values():
        placement[provider] = placement.get(provider, 0) + 1
    return placement


def check_placement(backend: str, placement: Dict[str, int]) -> Tuple[int, int]:
    """(nodes off the CPU, all nodes); a ``fallback`` error when every node ran on the CPU."""
    total = sum(placement.values())
    on_gpu = total - placement.get(CPU_PROVIDER, 0)
    if total and on_gpu == 0:
        raise fallback(
            FRAMEWORK,
            backend,
            "the session placed all %d nodes on %s" % (total, CPU_PROVIDER),
        )
    return on_gpu, total


def preload_libraries(ort: Any) -> None:
    """onnxruntime >= 1.19 finds the pip-installed CUDA and cuDNN libraries this way."""
    preload = getattr(ort, "preload_dlls", None)
    if preload is not None:
        # A missing wheel only means the system's libraries are used.
        with contextlib.suppress(Exception):
            preload()
