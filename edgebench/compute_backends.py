"""The compute backends a framework can run a cell on: ``cpu`` for every framework, and the
accelerators (GPU and NPU APIs) each one offers, with how each is selected by every runner.

A backend is the second half of what a team ships: not "ncnn" but "ncnn on Vulkan". The
registry is the one place that says which (framework, backend) pairs exist, which API each
drives, and how the Python runner, edgebench-native and the framework's own benchmark tool
select it (None: that runner cannot). ``provides`` names what a device needs for the backend,
for the one-line reason of a cell that cannot run it.

docs/accelerators.md describes each entry; a test keeps the Python runner's backend modules
(their ``ACCELERATORS``) in step with the ``python`` column here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CPU = "cpu"

#: Every backend name, in display order (the ``--backends`` choices).
BACKEND_NAMES = ("cpu", "vulkan", "opencl", "gpu", "cuda", "tensorrt", "nnapi", "qnn", "npu")

#: Frameworks that have no CPU backend, with the backend a cell takes when a run names none
#: (TensorRT builds engines for NVIDIA GPUs only). Every other framework defaults to ``cpu``.
DEFAULT_BACKENDS = {"tensorrt": "cuda"}

#: The packages that give a Debian device a Vulkan or OpenCL device, software or real.
VULKAN_PACKAGES = "mesa-vulkan-drivers libvulkan1 (software: lavapipe), or the GPU vendor's driver"
OPENCL_PACKAGES = "ocl-icd-libopencl1 pocl-opencl-icd (software: pocl), or the GPU vendor's ICD"
#: What every CUDA backend needs beside its framework.
NVIDIA_DRIVER = "an NVIDIA GPU with its driver (libcuda.so.1; on Jetson, JetPack)"


@dataclass(frozen=True)
class ComputeBackend:
    framework: str
    name: str
    #: The API the framework drives (``Vulkan``, ``OpenCL``, ``NNAPI``, ...).
    api: str
    #: How each runner selects it; None: that runner cannot.
    python: str | None
    native: str | None
    tool: str | None
    #: What the device needs for it (a driver, a package, a build of the framework).
    provides: str
    #: The value the framework's own tool takes to select it (``--use_gpu=true``, ``3``,
    #: ``OPENCL``); where it goes on the command line is the tool adapter's business
    #: (edgebench/framework_tools). None: the tool cannot select it.
    tool_arg: str | None = None
    #: The artifact format an fp16 cell on this backend runs (``onnx-fp16``: an ONNX model
    #: with fp16 weights and casts, since TensorRT 11 takes precision only from the graph);
    #: None: the framework computes fp16 from the fp32 artifact, or not at all.
    fp16_format: str | None = None

    @property
    def label(self) -> str:
        """``ncnn·vulkan``: the matrix column and the record's ``engine``."""
        return engine_label(self.framework, self.name)


#: What a CUDA Graphs variant adds to its engine's label.
CUDA_GRAPHS_MARK = "+graphs"


def engine_label(framework: str, backend: str, cuda_graph: bool = False) -> str:
    """The column a (framework, backend) pair takes: the framework alone on its default
    backend (the CPU; TensorRT's CUDA); ``+graphs`` for its CUDA Graphs variant, which a
    team can ship as a configuration of its own."""
    label = framework if backend == default_backend(framework) else f"{framework}·{backend}"
    return label + (CUDA_GRAPHS_MARK if cuda_graph else "")


def default_backend(framework: str) -> str:
    """The backend ``framework`` runs on when a run names none: ``cpu`` but for GPU-only ones."""
    return DEFAULT_BACKENDS.get(framework, CPU)


#: The accelerator backends, per framework in display order (``cpu`` is implicit for all).
ACCELERATORS: tuple[ComputeBackend, ...] = (
    ComputeBackend(
        "onnxruntime",
        "nnapi",
        "NNAPI",
        python="providers=['NnapiExecutionProvider'] (an Android build of onnxruntime)",
        native=None,
        tool=None,
        provides="an onnxruntime build with the NNAPI execution provider (Android)",
    ),
    ComputeBackend(
        "onnxruntime",
        "qnn",
        "QNN",
        python="providers=['QNNExecutionProvider'] (the onnxruntime-qnn package)",
        native=None,
        tool=None,
        provides="onnxruntime-qnn and a Qualcomm Hexagon NPU",
    ),
    ComputeBackend(
        "onnxruntime",
        "cuda",
        "CUDA",
        python="providers=['CUDAExecutionProvider'] (the onnxruntime-gpu package)",
        native=None,
        tool=None,
        provides=f"onnxruntime-gpu (in place of onnxruntime) and {NVIDIA_DRIVER}",
        fp16_format="onnx-fp16",
    ),
    ComputeBackend(
        "onnxruntime",
        "tensorrt",
        "TensorRT",
        python="providers=['TensorrtExecutionProvider'] (onnxruntime-gpu, TensorRT's libraries)",
        native=None,
        tool=None,
        provides=(
            f"onnxruntime-gpu (in place of onnxruntime), TensorRT's libraries and {NVIDIA_DRIVER}"
        ),
        fp16_format="onnx-fp16",
    ),
    ComputeBackend(
        "mnn",
        "opencl",
        "OpenCL",
        python="createSession backend 'OPENCL' (a wheel built with MNN_OPENCL)",
        native="MNN_FORWARD_OPENCL in a build with MNN_OPENCL=ON",
        tool="benchmark.out forward type 3",
        provides=f"an MNN build with MNN_OPENCL=ON and an OpenCL GPU ({OPENCL_PACKAGES})",
        tool_arg="3",
    ),
    ComputeBackend(
        "mnn",
        "vulkan",
        "Vulkan",
        python="createSession backend 'VULKAN' (a wheel built with MNN_VULKAN)",
        native="MNN_FORWARD_VULKAN in a build with MNN_VULKAN=ON",
        tool="benchmark.out forward type 7",
        provides=f"an MNN build with MNN_VULKAN=ON and a Vulkan device ({VULKAN_PACKAGES})",
        tool_arg="7",
    ),
    ComputeBackend(
        "mnn",
        "cuda",
        "CUDA",
        python="createSession backend 'CUDA' (a wheel built with MNN_CUDA)",
        native="MNN_FORWARD_CUDA in a build with MNN_CUDA=ON",
        tool="benchmark.out forward type 2",
        provides="an MNN build with MNN_CUDA=ON and an NVIDIA GPU with its driver",
        tool_arg="2",
    ),
    ComputeBackend(
        "ncnn",
        "vulkan",
        "Vulkan",
        python="net.opt.use_vulkan_compute (the ncnn wheel has Vulkan compiled in)",
        native="opt.use_vulkan_compute in a build with NCNN_VULKAN=ON",
        tool="benchncnn gpu_device 0",
        provides=f"a Vulkan device ({VULKAN_PACKAGES})",
        tool_arg="0",
    ),
    ComputeBackend(
        "tflite",
        "gpu",
        "LiteRT GPU",
        python="CompiledModel with HardwareAccelerator.GPU (ai-edge-litert; WebGPU over Vulkan)",
        native=None,
        tool="benchmark_model --use_gpu=true",
        provides="a GPU that LiteRT's GPU accelerator finds (on phones: the GPU delegate)",
        tool_arg="--use_gpu=true",
    ),
    ComputeBackend(
        "tflite",
        "nnapi",
        "NNAPI",
        python=None,
        native=None,
        tool="benchmark_model --use_nnapi=true",
        provides="Android's NNAPI (benchmark_model on the phone)",
        tool_arg="--use_nnapi=true",
    ),
    ComputeBackend(
        "openvino",
        "gpu",
        "OpenVINO GPU",
        python="core.compile_model(model, 'GPU')",
        native=None,
        tool="benchmark_app -d GPU",
        provides="an Intel GPU with its OpenCL driver (intel-opencl-icd)",
        tool_arg="GPU",
    ),
    ComputeBackend(
        "openvino",
        "npu",
        "OpenVINO NPU",
        python="core.compile_model(model, 'NPU')",
        native=None,
        tool="benchmark_app -d NPU",
        provides="an Intel NPU with its driver",
        tool_arg="NPU",
    ),
    ComputeBackend(
        "tnn",
        "opencl",
        "OpenCL",
        python=None,
        native="DEVICE_OPENCL in a build with TNN_OPENCL_ENABLE=ON",
        tool="TNNTest -dt OPENCL",
        provides=f"a TNN build with TNN_OPENCL_ENABLE=ON and an OpenCL GPU ({OPENCL_PACKAGES})",
        tool_arg="OPENCL",
    ),
    ComputeBackend(
        "tnn",
        "cuda",
        "CUDA",
        python=None,
        native="DEVICE_CUDA in a build with TNN_CUDA_ENABLE=ON",
        tool="TNNTest -dt CUDA",
        provides="a TNN build with TNN_CUDA_ENABLE=ON and an NVIDIA GPU with TensorRT",
        tool_arg="CUDA",
    ),
    ComputeBackend(
        "tensorrt",
        "cuda",
        "CUDA",
        python="an engine built by the tensorrt package, run through libcudart (ctypes)",
        native=None,
        tool="trtexec --onnx",
        provides=f"the tensorrt package (TensorRT 10 on JetPack 6) and {NVIDIA_DRIVER}",
        tool_arg="",
        fp16_format="onnx-fp16",
    ),
)


#: The APIs whose cells can capture an inference into a CUDA graph and replay it.
CUDA_GRAPH_APIS = ("CUDA", "TensorRT")


def captures_cuda_graphs(framework: str, backend: str) -> bool:
    """Whether cells of (framework, backend) have a CUDA Graphs variant (--cuda-graphs). MNN's
    and TNN's CUDA backends do not expose graph capture."""
    entry = find_backend(framework, backend)
    return (
        entry is not None
        and entry.api in CUDA_GRAPH_APIS
        and framework
        in (
            "tensorrt",
            "onnxruntime",
        )
    )


def find_backend(framework: str, name: str) -> ComputeBackend | None:
    """The accelerator entry for (framework, name); None for ``cpu`` and unknown pairs."""
    return next((b for b in ACCELERATORS if b.framework == framework and b.name == name), None)


def backends_of(framework: str) -> list[str]:
    """The backends ``framework`` offers: ``cpu`` first (where it has one), then its
    accelerators."""
    cpu = [] if framework in DEFAULT_BACKENDS else [CPU]
    return [*cpu, *(b.name for b in ACCELERATORS if b.framework == framework)]


def missing_backend_reason(framework: str, name: str) -> str | None:
    """Why ``framework`` has no backend ``name`` at all (None: it has)."""
    offered = backends_of(framework)
    if name in offered:
        return None
    if CPU not in offered:
        return f"{framework} has no {name} backend (it runs on {', '.join(offered)} only)"
    others = [b for b in offered if b != CPU]
    offers = f"its accelerators: {', '.join(others)}" if others else "it runs on the CPU only"
    return f"{framework} has no {name} backend ({offers})"


def engine_order(
    engines: Iterable[tuple[str, str, bool]],
) -> list[tuple[str, str, bool]]:
    """(framework, backend, cuda_graph) once each, every framework's backends in registry
    order, each backend before its CUDA Graphs variant."""
    seen = list(dict.fromkeys(engines))
    rank = {name: i for i, name in enumerate(BACKEND_NAMES)}
    return sorted(seen, key=lambda e: (rank.get(e[1], len(rank)), e[2]))
