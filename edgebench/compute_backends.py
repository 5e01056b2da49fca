"""The compute backends a framework can run a cell on: ``cpu`` for every framework, and the
accelerators (GPU and NPU APIs) each one offers, with how each is selected by every runner.

A backend is the second half of what a team ships: not "ncnn" but "ncnn on Vulkan". Each
framework folder (edgebench/frameworks/<name>/) is the one place that says which backends that
framework has, which API each drives, and how the Python runner, edgebench-native and the
framework's own benchmark tool select it (None: that runner cannot); this module answers
questions across them. ``provides`` names what a device needs for the backend, for the one-line
reason of a cell that cannot run it.

docs/accelerators.md describes each entry; a test keeps the Python runner's backend modules
(their ``ACCELERATORS``) in step with the ``python`` column here.
"""

from __future__ import annotations

from collections.abc import Iterable

from edgebench.frameworks import FRAMEWORKS, all_accelerators
from edgebench.frameworks.rows import CPU, ComputeBackend
from edgebench.runners.protocol.backend_options import BackendOptions

#: The usual backends' display order; a backend only a framework folder names comes after them.
_USUAL_ORDER = ("cpu", "vulkan", "opencl", "gpu", "cuda", "tensorrt", "nnapi", "qnn", "npu")
#: Every backend name, in display order (the ``--backends`` choices).
BACKEND_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys([*_USUAL_ORDER, *(b.name for b in all_accelerators())])
)

#: Frameworks that have no CPU backend, with the backend a cell takes when a run names none
#: (TensorRT builds engines for NVIDIA GPUs only). Every other framework defaults to ``cpu``.
DEFAULT_BACKENDS = {f.name: f.default_backend for f in FRAMEWORKS if f.default_backend != CPU}


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


#: The accelerator backends, per framework in display order (``cpu`` is implicit for all);
#: each framework folder (edgebench/frameworks/<name>/) states its own.
ACCELERATORS: tuple[ComputeBackend, ...] = all_accelerators()


def captures_cuda_graphs(framework: str, backend: str) -> bool:
    """Whether cells of (framework, backend) have a CUDA Graphs variant (--cuda-graphs): its
    options take ``cuda_graph``, a configuration a team can ship of its own. MNN's and TNN's
    CUDA backends do not expose graph capture."""
    kind = options_type(framework, backend)
    return kind is not None and kind.declares("cuda_graph")


def options_type(framework: str, backend: str) -> type[BackendOptions] | None:
    """The options type cells of (framework, backend) send the runner; None: they send none."""
    entry = find_backend(framework, backend)
    return entry.options if entry is not None else None


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
