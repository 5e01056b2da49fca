"""Which backend runs a framework: found by listing ``backends/``, instantiated once one of the
modules it requires imports.

Runs on the device: Python 3.8+, imports nothing from the host package.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict

from .backends import Backend, Declaration, GenerativeBackend, discover
from .backends.accelerator import CPU, refusal
from .protocol import install_hint
from .protocol.errors import BackendError


def load_backend(framework: str, compute_backend: str = CPU) -> Backend:
    """Instantiate the backend for ``framework``, set to run on ``compute_backend``, or raise
    BackendError with a clear kind (``unsupported`` for a compute backend its Python binding
    cannot select, before the framework is imported).

    Backends are found by listing backends/ (backends/__init__.py says what each declares).
    """
    declared = declared_for(framework, generative=False)
    if compute_backend == CPU and declared.no_cpu:
        raise BackendError(
            "unsupported",
            "%s %s (backend %s); it has no cpu backend"
            % (framework, declared.no_cpu, ", ".join(declared.accelerators)),
        )
    if compute_backend != CPU and compute_backend not in declared.accelerators:
        raise refusal(framework, compute_backend, declared.accelerators, not declared.no_cpu)
    backend = instantiate(declared)
    backend.compute_backend = compute_backend
    return backend


def load_generative(framework: str, compute_backend: str = CPU) -> GenerativeBackend:
    """Instantiate the generative runtime ``framework`` (for a cell with a generation spec),
    or raise BackendError: ``bad_spec`` for a framework that runs no generative models,
    ``unsupported`` for any compute backend but the CPU (none selects another yet)."""
    declared = declared_for(framework, generative=True)
    if compute_backend != CPU:
        raise refusal(framework, compute_backend, declared.accelerators, True)
    backend = instantiate(declared)
    if not isinstance(backend, GenerativeBackend):  # only a broken module gets here
        raise BackendError("internal", "%s's BACKEND is not a GenerativeBackend" % framework)
    return backend


def declared_for(framework: str, generative: bool) -> Declaration:
    """What ``framework``'s backend module declares, or BackendError ``bad_spec`` for a
    framework no module declares or one that runs the other kind of model."""
    found, broken = discover()
    declared = found.get(framework)
    if declared is None:
        message = "unknown framework %r" % framework
        if broken:
            message += " (unreadable backend modules: %s)" % "; ".join(
                "%s: %s" % item for item in sorted(broken.items())
            )
        raise BackendError("bad_spec", message)
    if declared.generative != generative:
        raise BackendError("bad_spec", mismatch(framework, generative, found))
    return declared


def mismatch(framework: str, generative: bool, found: Dict[str, Declaration]) -> str:
    """Why a cell cannot run on ``framework``: it asks for a generative run of a framework
    that runs none, or for a CNN run of a generative runtime."""
    if generative:
        runtimes = ", ".join(sorted(n for n, d in found.items() if d.generative)) or "none here"
        return "%s runs no generative models (a generation spec needs one of: %s)" % (
            framework,
            runtimes,
        )
    return (
        "%s runs generative models only: its cells need a generative model (.gguf) and a "
        "generation spec" % framework
    )


def instantiate(declared: Declaration) -> Any:
    """The backend a module declares (a ``Backend``, or a ``GenerativeBackend`` where it is
    generative), once the device has what it runs on (its DEVICE_CHECK)
    and one of the modules it requires imports."""
    framework = declared.framework
    if declared.native_only or declared.backend is None:
        raise BackendError("unsupported", declared.native_only or "%s has no backend" % framework)
    if declared.device_check is not None:
        declared.device_check()
    errors = []
    for candidate in declared.requires:
        try:
            importlib.import_module(candidate)
            break
        except ImportError as exc:
            errors.append(str(exc))
    else:
        hint = install_hint(declared.pip_extra) if declared.pip_extra else "no pip package"
        raise BackendError(
            "not_installed",
            "%s is not installed on this device (%s)" % (framework, hint),
            "; ".join(errors),
        )
    return declared.backend()
