"""Framework backends of the on-device runner, found by listing this folder.

Every ``*_backend.py`` here declares, at module level, what the runner needs to know about one
framework, so adding a framework is adding one file (plus its entry in the host's
``edgebench/frameworks/<name>/``):

    FRAMEWORK = "mnn"        # the framework name used in specs, results and on the command line
    REQUIRES = ("MNN",)      # importable modules; any one of them present means it is installed
    PIP_EXTRA = "mnn"        # optional: the edgebench extra that installs it (default FRAMEWORK)
    ACCELERATORS = ("opencl", "vulkan", "cuda")  # optional: the accelerator backends its
                             # Python binding can select (cpu is implicit; default none)
    BACKEND = MnnBackend     # the Backend subclass (base.py) that runs it, or for a generative
                             # runtime a GenerativeBackend subclass (generative.py): its cells
                             # are generative (a spec with ``generation``), and no others
    NO_CPU = "runs on NVIDIA GPUs only"  # optional: the framework has no cpu backend, and why
                             # (its default backend is then its first accelerator)
    DEVICE_CHECK = require_gpu  # optional: a callable run before the framework is imported,
                             # raising BackendError when the device lacks what it runs on (so
                             # a machine without the hardware is told that, not to install it)
    OPTIONS = TensorRTOptions  # optional: the options type (runners/protocol/backend_options.py) it
                             # reads, or {compute backend: type}; default BackendOptions
                             # (``streams`` only)
    WATCHES = (QueueWatch,)  # optional: device watches (device_watch.py: a window hook and a
                             # result part) its cells get, before the device's own

A framework without a Python runtime declares ``NATIVE_ONLY = "<why>"`` instead of ``BACKEND``:
the runner then reports it as unsupported with that reason (its cells run through the
framework's own benchmark binary, edgebench/framework_tools/). The runner refuses a cell on any
other backend than ``cpu`` and the module's ACCELERATORS before the framework is imported; the
host keeps ACCELERATORS in step with the ``python`` column of edgebench/compute_backends.py.
Backend modules import their
framework only when the Backend is constructed, so listing them is cheap and works with no
framework installed.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple, Type

from ..device_watch import DeviceWatch, checked_watch
from ..protocol.backend_options import BackendOptions
from ..protocol.errors import BackendError
from .base import Backend
from .generative import GenerativeBackend

MODULE_SUFFIX = "_backend"


class Declaration(NamedTuple):
    """What one backend module declares (see the module docs)."""

    module: str
    framework: str
    requires: Tuple[str, ...]
    pip_extra: Optional[str]
    accelerators: Tuple[str, ...]
    native_only: Optional[str]
    #: Its BACKEND: a ``Backend``, or a ``GenerativeBackend`` where ``generative``.
    backend: Optional[Callable[[], Any]]
    no_cpu: Optional[str] = None
    device_check: Optional[Callable[[], None]] = None
    #: The options type of each compute backend that has its own (others: BackendOptions).
    options: Mapping[str, Type[BackendOptions]] = {}
    #: Device watches its cells get (its ``WATCHES``).
    watches: Tuple[Type[DeviceWatch], ...] = ()
    #: Its BACKEND runs generative models (a ``GenerativeBackend``), and only those.
    generative: bool = False

    def options_type(self, compute_backend: str) -> Type[BackendOptions]:
        """The type the backend reads the spec's options with on ``compute_backend``."""
        return self.options.get(compute_backend, BackendOptions)


def backend_modules() -> List[str]:
    """The backend modules in this folder, by name (``mnn_backend``, ...)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    names = (os.path.splitext(n)[0] for n in os.listdir(folder) if n.endswith(".py"))
    return sorted(n for n in names if n.endswith(MODULE_SUFFIX))


def declaration(module_name: str) -> Declaration:
    """Import backend module ``module_name`` (not its framework) and read its declarations."""
    module = importlib.import_module("." + module_name, __name__)
    framework = module.FRAMEWORK
    accelerators = tuple(getattr(module, "ACCELERATORS", ()))
    backend = getattr(module, "BACKEND", None)
    return Declaration(
        module=module_name,
        framework=framework,
        requires=tuple(getattr(module, "REQUIRES", ())),
        pip_extra=getattr(module, "PIP_EXTRA", framework),
        accelerators=accelerators,
        native_only=getattr(module, "NATIVE_ONLY", None),
        backend=backend,
        no_cpu=getattr(module, "NO_CPU", None),
        device_check=getattr(module, "DEVICE_CHECK", None),
        options=_options_by_backend(getattr(module, "OPTIONS", {}), accelerators),
        watches=tuple(
            checked_watch(w, "%s.WATCHES" % module_name) for w in getattr(module, "WATCHES", ())
        ),
        generative=isinstance(backend, type) and issubclass(backend, GenerativeBackend),
    )


def _options_by_backend(
    declared: Any, accelerators: Tuple[str, ...]
) -> Mapping[str, Type[BackendOptions]]:
    """``OPTIONS`` as {compute backend: type}: one type stands for every backend."""
    if isinstance(declared, dict):
        return dict(declared)
    return {name: declared for name in ("cpu", *accelerators)}


def discover() -> Tuple[Dict[str, Declaration], Dict[str, str]]:
    """(framework -> declaration, backend module -> why it could not be read)."""
    found: Dict[str, Declaration] = {}
    broken: Dict[str, str] = {}
    for module_name in backend_modules():
        try:
            declared = declaration(module_name)
        except Exception as exc:  # one broken module must not hide the other frameworks
            broken[module_name] = "%s: %s" % (type(exc).__name__, exc)
            continue
        found[declared.framework] = declared
    return found, broken


def options_type(framework: str, compute_backend: str) -> Optional[Type[BackendOptions]]:
    """The options type ``framework``'s backend module reads on ``compute_backend``; None for
    a framework no module here declares."""
    declared = discover()[0].get(framework)
    return declared.options_type(compute_backend) if declared is not None else None


__all__ = [
    "MODULE_SUFFIX",
    "Backend",
    "BackendError",
    "Declaration",
    "GenerativeBackend",
    "backend_modules",
    "declaration",
    "discover",
    "options_type",
]
