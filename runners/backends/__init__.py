"""Framework backends of the on-device runner, looked up by framework name.

Adding a framework means adding one module here and one line to ``BACKEND_MODULES``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Dict, Tuple

from .base import Backend, BackendError

# framework name -> (module in this package, class name, Python module that must be importable)
BACKEND_MODULES: Dict[str, Tuple[str, str, str]] = {
    "onnxruntime": ("onnxruntime_backend", "OnnxRuntimeBackend", "onnxruntime"),
    "mnn": ("mnn_backend", "MnnBackend", "MNN"),
    "ncnn": ("ncnn_backend", "NcnnBackend", "ncnn"),
    "tflite": ("tflite_backend", "TfliteBackend", "ai_edge_litert|tflite_runtime"),
    "openvino": ("openvino_backend", "OpenVinoBackend", "openvino"),
}

# Frameworks edgebench knows about, in display order: (pip extra, importable modules).
KNOWN_FRAMEWORKS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "onnxruntime": ("onnxruntime", ("onnxruntime",)),
    "mnn": ("mnn", ("MNN",)),
    "ncnn": ("ncnn", ("ncnn",)),
    "tflite": ("tflite", ("ai_edge_litert", "tflite_runtime")),
    "openvino": ("openvino", ("openvino",)),
    "tnn": ("", ()),
}

# Frameworks with no Python runtime: they run only through a native benchmark binary.
NATIVE_ONLY = {
    "tnn": "TNN has no Python runtime; it runs through its native TNNTest binary on devices "
    "that have one",
}


def install_hint(framework: str) -> str:
    extra = KNOWN_FRAMEWORKS.get(framework, (framework, ()))[0]
    return "pip install 'edgebench[%s]'" % extra


def is_importable(framework: str) -> bool:
    modules = KNOWN_FRAMEWORKS.get(framework, ("", ()))[1]
    return any(importlib.util.find_spec(m) is not None for m in modules)


def load_backend(framework: str) -> Backend:
    """Instantiate the backend for ``framework`` or raise BackendError with a clear kind."""
    if framework in NATIVE_ONLY:
        raise BackendError("unsupported", NATIVE_ONLY[framework])
    if framework not in BACKEND_MODULES:
        if framework not in KNOWN_FRAMEWORKS:
            raise BackendError("bad_spec", "unknown framework %r" % framework)
        if not is_importable(framework):
            raise BackendError(
                "not_installed",
                "%s is not installed on this device (%s)" % (framework, install_hint(framework)),
            )
        raise BackendError(
            "unsupported", "%s is installed but this runner has no backend for it yet" % framework
        )
    module_name, class_name, requirement = BACKEND_MODULES[framework]
    errors = []
    for candidate in requirement.split("|"):
        try:
            importlib.import_module(candidate)
            break
        except ImportError as exc:
            errors.append(str(exc))
    else:
        raise BackendError(
            "not_installed",
            "%s is not installed on this device (%s)" % (framework, install_hint(framework)),
            "; ".join(errors),
        )
    module = importlib.import_module("." + module_name, __name__)
    return getattr(module, class_name)()


__all__ = [
    "BACKEND_MODULES",
    "KNOWN_FRAMEWORKS",
    "NATIVE_ONLY",
    "Backend",
    "BackendError",
    "install_hint",
    "load_backend",
]
