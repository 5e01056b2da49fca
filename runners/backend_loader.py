"""Which backend runs a framework: found by listing ``backends/``, instantiated once one of the
modules it requires imports.

Runs on the device: Python 3.8+, imports nothing from the host package.
"""

from __future__ import annotations

import importlib

from .backends import Backend, BackendError, Declaration, discover
from .backends.accelerator import CPU, refusal
from .protocol import install_hint


def load_backend(framework: str, compute_backend: str = CPU) -> Backend:
    """Instantiate the backend for ``framework``, set to run on ``compute_backend``, or raise
    BackendError with a clear kind (``unsupported`` for a compute backend its Python binding
    cannot select, before the framework is imported).

    Backends are found by listing backends/ (backends/__init__.py says what each declares).
    """
    found, broken = discover()
    declared = found.get(framework)
    if declared is None:
        message = "unknown framework %r" % framework
        if broken:
            message += " (unreadable backend modules: %s)" % "; ".join(
                "%s: %s" % item for item in sorted(broken.items())
            )
        raise BackendError("bad_spec", message)
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


def instantiate(declared: Declaration) -> Backend:
    """The backend a module declares, once the device has what it runs on (its DEVICE_CHECK)
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
