"""The frameworks edgebench benchmarks: one registry entry each, in display order.

An entry says what the host needs to know: the name, the runner backend module that runs it
(runners/backends/<backend>.py), the artifact format it executes (None: the ONNX file itself)
and the converter that produces that format. What the device needs to know (the modules whose
presence means the framework is installed, the pip extra, why a framework has no Python
runtime) is declared in that backend module, because the runner must work without the host
package; the entry reads it from there (``modules``, ``pip_extra``, ``native_only``), so each
fact is stated once.

Adding a framework is adding its entry here and its backend module in runners/backends/
(and, for a new format, its converter in converters/).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from edgebench.runners import backends
from edgebench.runners.protocol import install_hint as _pip_install_hint


@dataclass(frozen=True)
class Framework:
    name: str
    #: Runner backend module in runners/backends/ (``mnn_backend``).
    backend: str
    #: The artifact format it executes; None: it runs the ONNX file itself (onnxruntime).
    artifact_format: str | None = None
    #: The converter (``CONVERTERS`` key in converters/) that produces ``artifact_format``.
    converter: str | None = None
    #: The format it executes at int8 when that differs (ONNX Runtime: a QDQ ONNX model).
    int8_format: str | None = None

    @property
    def declaration(self) -> backends.Declaration:
        """What the backend module declares for the device (runners/backends/__init__.py)."""
        return _declaration(self.backend)

    @property
    def modules(self) -> tuple[str, ...]:
        """Python modules whose presence means the framework is installed (any one of them)."""
        return self.declaration.requires

    @property
    def pip_extra(self) -> str | None:
        """The edgebench extra that installs it (None: no pip package)."""
        return self.declaration.pip_extra

    @property
    def native_only(self) -> str | None:
        """Why the framework runs only through a native benchmark binary (no Python runtime)."""
        return self.declaration.native_only

    @property
    def install_hint(self) -> str:
        extra = self.pip_extra
        return _pip_install_hint(extra) if extra else (self.native_only or "no pip package")


@functools.cache
def _declaration(module: str) -> backends.Declaration:
    return backends.declaration(module)


#: Every framework, in display order (tables, reports, --frameworks choices).
FRAMEWORKS: tuple[Framework, ...] = (
    Framework("onnxruntime", backend="onnxruntime_backend", int8_format="onnx-qdq"),
    Framework("mnn", backend="mnn_backend", artifact_format="mnn", converter="mnn"),
    Framework("ncnn", backend="ncnn_backend", artifact_format="ncnn", converter="ncnn"),
    Framework("tflite", backend="tflite_backend", artifact_format="tflite", converter="tflite"),
    Framework(
        "openvino", backend="openvino_backend", artifact_format="openvino", converter="openvino"
    ),
    Framework("tnn", backend="tnn_backend", artifact_format="tnn", converter="tnn"),
    # Builds its engine from the ONNX file on the device (engines are per GPU and version).
    Framework("tensorrt", backend="tensorrt_backend", int8_format="onnx-qdq"),
)


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
