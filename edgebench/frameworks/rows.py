"""What a framework folder declares (edgebench/frameworks/<name>/__init__.py): its registry
row, its accelerator backends, its converters and its tool adapter.

This module imports nothing else of edgebench, so a framework folder (edgebench's own or one
on ``EDGEBENCH_FRAMEWORKS_PATH``) can import it without pulling in the registry that lists it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgebench.runners.backends import Declaration
    from edgebench.runners.protocol.backend_options import BackendOptions

CPU = "cpu"

#: The packages that give a Debian device a Vulkan or OpenCL device, software or real.
VULKAN_PACKAGES = "mesa-vulkan-drivers libvulkan1 (software: lavapipe), or the GPU vendor's driver"
OPENCL_PACKAGES = "ocl-icd-libopencl1 pocl-opencl-icd (software: pocl), or the GPU vendor's ICD"
#: What every CUDA backend needs beside its framework.
NVIDIA_DRIVER = "an NVIDIA GPU with its driver (libcuda.so.1; on Jetson, JetPack)"


@dataclass(frozen=True)
class ComputeBackend:
    """One accelerator a framework offers (``cpu`` is implicit for every framework that has
    a CPU backend)."""

    framework: str
    name: str
    #: The API the framework drives (``Vulkan``, ``OpenCL``, ``NNAPI``, ...).
    api: str
    #: How each runner selects it; None: that runner cannot.
    python: str | None
    edgebench_native: str | None
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
    #: The options its cells send the runner (runners/protocol/backend_options.py; the backend
    #: module declares the same type as its ``OPTIONS``); None: it takes none. A type with
    #: ``cuda_graph`` gives its cells a CUDA Graphs variant (``--cuda-graphs``).
    options: type[BackendOptions] | None = None


@dataclass(frozen=True)
class ConverterRow:
    """A converter that writes one of the framework's formats: ``target`` is
    ``"module:Class"`` (a ``converters.base.Converter``), imported when first used."""

    format: str
    target: str
    #: The name ``--converter`` picks it by, where a format has more than one converter;
    #: a format's first row is its default.
    choice: str = "edgebench"


@dataclass(frozen=True)
class Framework:
    """A framework's registry row, declared as ``FRAMEWORK`` by its folder."""

    name: str
    #: Runner backend module in runners/backends/ (``mnn_backend``): what the device runs;
    #: None: the framework has no Python runtime there and runs only through its own tool.
    backend: str | None = None
    #: Where it sorts in tables, reports and the --frameworks choices (lower first).
    order: int = 1000
    #: The artifact format it executes; None: it runs the ONNX file itself (onnxruntime).
    artifact_format: str | None = None
    #: The converter (a format of ``converters``) that produces ``artifact_format``.
    converter: str | None = None
    #: The format it executes at int8 when that differs (ONNX Runtime: a QDQ ONNX model).
    int8_format: str | None = None
    #: A pre-converted artifact given as a model: (suffix of its primary file, suffix of its
    #: companion file or None), e.g. (".param", ".bin").
    artifact_suffixes: tuple[str, str | None] | None = None
    #: The converters that write its formats.
    converters: tuple[ConverterRow, ...] = ()
    #: Its accelerator backends, in display order.
    accelerators: tuple[ComputeBackend, ...] = ()
    #: The backend a cell takes when a run names none; a framework whose default is not
    #: ``cpu`` has no CPU backend (TensorRT builds engines for NVIDIA GPUs only).
    default_backend: str = CPU
    #: Its own benchmark tool's adapter, ``"module:Class"`` (an
    #: ``edgebench.framework_tools.ToolAdapter``); None: it has none edgebench drives.
    tool: str | None = None
    #: How edgebench-native builds its static library, ``"module:NAME"`` of an
    #: ``edgebench.builds.recipe.LibraryRecipe``; None: edgebench-native does not link it.
    build: str | None = None
    #: What its cells measure: ``tensor`` (one inference on input tensors: the CNN side) or
    #: ``generative`` (a prompt's prefill and token-by-token decode, docs/generative.md). A
    #: cell pairs a model only with frameworks of the model's workload.
    workload: str = "tensor"
    #: The reference the output check compares other frameworks against, not a runtime to
    #: choose: left out of runs that name no frameworks.
    reference: bool = False

    @property
    def declaration(self) -> Declaration | None:
        """What the runner backend module declares for the device (runners/backends/)."""
        return _declaration(self.backend) if self.backend else None

    @property
    def modules(self) -> tuple[str, ...]:
        """Python modules whose presence means the framework is installed (any one of them)."""
        declared = self.declaration
        return declared.requires if declared else ()

    @property
    def pip_extra(self) -> str | None:
        """The edgebench extra that installs it (None: no pip package)."""
        declared = self.declaration
        return declared.pip_extra if declared else None

    @property
    def native_only(self) -> str | None:
        """Why the framework runs only through a native benchmark binary (no Python runtime)."""
        declared = self.declaration
        if declared is None:
            return f"{self.name} has no Python runtime in edgebench's runner (its tool runs it)"
        return declared.native_only

    @property
    def install_hint(self) -> str:
        from edgebench.runners.protocol import install_hint

        extra = self.pip_extra
        return install_hint(extra) if extra else (self.native_only or "no pip package")


def folder_name(framework: str) -> str:
    """The folder (a Python package name) of framework ``framework``: ``llama.cpp`` lives in
    ``llama_cpp/``, ``openvino-genai`` in ``openvino_genai/``."""
    return framework.replace(".", "_").replace("-", "_")


@functools.cache
def _declaration(module: str) -> Declaration:
    # The runner package is read only when a declaration is first asked for.
    from edgebench.runners import backends

    return backends.declaration(module)
