"""The frameworks edgebench benchmarks, found by listing this folder: one sub-folder each.

A framework folder (``edgebench/frameworks/mnn/``) declares ``FRAMEWORK``, a
:class:`~edgebench.frameworks.rows.Framework` row: the runner backend module that runs it on the
device, the artifact format it executes and the converters that write it, its accelerator
backends, and its benchmark tool's adapter. Adding a framework is adding a folder; folders
outside edgebench are listed too when ``EDGEBENCH_FRAMEWORKS_PATH`` names the folders that hold
them (``os.pathsep``-separated), so a lab can add an in-house framework without editing edgebench.

What the device needs to know (the modules whose presence means the framework is installed,
the pip extra, why a framework has no Python runtime) is declared in the runner backend module,
because the runner works without the host package; the row reads it from there (``modules``,
``pip_extra``, ``native_only``), so each fact is stated once.
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
from collections.abc import Iterable

from edgebench.frameworks.rows import ComputeBackend, ConverterRow, Framework, folder_name
from edgebench.runners.protocol import install_hint as _pip_install_hint

log = logging.getLogger(__name__)

#: Folders beside edgebench's own that hold framework folders (``os.pathsep``-separated).
PATH_VARIABLE = "EDGEBENCH_FRAMEWORKS_PATH"

__path__.extend(folder for folder in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if folder)


def _discover() -> tuple[Framework, ...]:
    found: dict[str, Framework] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg or info.name.startswith(("_", ".")):
            continue
        where = os.path.join(getattr(info.module_finder, "path", "?"), info.name)
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except Exception as exc:
            log.warning("framework folder %s is skipped: it does not import (%s)", where, exc)
            continue
        framework = getattr(module, "FRAMEWORK", None)
        if not isinstance(framework, Framework) or folder_name(framework.name) != info.name:
            log.warning(
                "framework folder %s is skipped: it must declare FRAMEWORK = Framework(%r, ...)",
                where,
                info.name,
            )
            continue
        found.setdefault(framework.name, framework)
    return tuple(sorted(found.values(), key=lambda f: (f.order, f.name)))


#: Every framework, in display order (tables, reports, --frameworks choices).
FRAMEWORKS: tuple[Framework, ...] = _discover()


def framework_names() -> list[str]:
    """Framework names in display order."""
    return [f.name for f in FRAMEWORKS]


def find_framework(name: str) -> Framework | None:
    return next((f for f in FRAMEWORKS if f.name == name), None)


def framework_for_format(fmt: str) -> Framework | None:
    """The framework that executes artifacts of format ``fmt``."""
    return next((f for f in FRAMEWORKS if f.artifact_format == fmt), None)


def python_frameworks() -> list[str]:
    """Frameworks with a Python runtime (a runner backend), in display order."""
    return [f.name for f in FRAMEWORKS if f.native_only is None]


def default_frameworks() -> list[str]:
    """What a run that names no frameworks measures: every framework with a Python runtime
    but the references (each model's cells then take those of its workload)."""
    return [f.name for f in FRAMEWORKS if f.native_only is None and not f.reference]


def workload_of(name: str) -> str:
    """``tensor`` or ``generative`` (``Framework.workload``); an unknown name is ``tensor``."""
    framework = find_framework(name)
    return framework.workload if framework else "tensor"


def install_hint(name: str) -> str:
    """How to install framework ``name`` (``pip install 'edgebench[mnn]'``)."""
    framework = find_framework(name)
    return framework.install_hint if framework else _pip_install_hint(name)


def display_order(present: Iterable[str]) -> list[str]:
    """``present`` framework names once each: registered ones in display order, then the
    others as they first appear."""
    present = list(dict.fromkeys(present))
    known = [n for n in framework_names() if n in present]
    return known + [n for n in present if n not in known]


def all_accelerators() -> tuple[ComputeBackend, ...]:
    """Every framework's accelerator backends: frameworks in display order, each one's in its
    own order."""
    return tuple(b for f in FRAMEWORKS for b in f.accelerators)


def all_converters() -> tuple[ConverterRow, ...]:
    """Every framework's converter rows, frameworks in display order."""
    return tuple(c for f in FRAMEWORKS for c in f.converters)


def load_target(target: str) -> object:
    """The object a ``"module:Name"`` pointer of a framework row names, imported now."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


__all__ = [
    "FRAMEWORKS",
    "PATH_VARIABLE",
    "ComputeBackend",
    "ConverterRow",
    "Framework",
    "all_accelerators",
    "all_converters",
    "default_frameworks",
    "display_order",
    "find_framework",
    "folder_name",
    "framework_for_format",
    "framework_names",
    "install_hint",
    "load_target",
    "python_frameworks",
    "workload_of",
]
