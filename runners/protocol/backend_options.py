"""The options a backend takes: one typed dataclass per backend family, read strictly from the
spec's ``options`` object and written back into it with the same keys.

The host names a backend's type in its row (``ComputeBackend.options``, in
edgebench/frameworks/<name>/), builds a cell's options from it and sends ``to_json()``. The
runner finds the type a backend module declares (its ``OPTIONS``, runners/backends/) and reads
the spec's object with ``from_json``, which refuses a key the type does not declare, or a value
of the wrong type, with one line naming the key (the runner's ``bad_spec`` error). A field
shared by several families (``streams``, ``cuda_graph``, ``shape_profile``) is declared once,
in the class those families extend.

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, fields
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar

from .typed_json import hints_of, read_value, write_value

Opts = TypeVar("Opts", bound="BackendOptions")


class OptionsError(ValueError):
    """An option the backend does not take, or a value of the wrong type."""


@dataclass
class BackendOptions:
    """What every backend takes, and all that one without options of its own reads."""

    #: How many streams one load serves at once. The runner sets it (1 for each of separate
    #: instances, else the cell's concurrency); the host leaves it out.
    streams: int = 1

    @classmethod
    def from_json(cls: Type[Opts], raw: Any, owner: str = "this backend") -> Opts:
        """The options in ``raw`` (the spec's decoded ``options`` object); OptionsError naming
        the first key ``owner`` does not take or whose value has the wrong type."""
        if not isinstance(raw, dict):
            raise OptionsError("spec field 'options' must be an object")
        hints = hints_of(cls)
        names = [f.name for f in fields(cls)]
        unknown = sorted(key for key in raw if key not in names)
        if unknown:
            raise OptionsError(
                "spec option %s is not one %s takes (it takes %s)"
                % (unknown[0], owner, ", ".join(names))
            )
        values: Dict[str, Any] = {}
        for key, value in raw.items():
            try:
                values[key] = read_value(hints[key], value, "spec option %s" % key)
            except ValueError as exc:
                raise OptionsError(str(exc)) from None
        options = cls(**values)
        options.check()
        return options

    def check(self) -> None:
        """Refuse values of the right type that still make no sense (OptionsError)."""
        if self.streams < 1:
            raise OptionsError("spec option streams must be at least 1")

    def to_json(self) -> Dict[str, Any]:
        """The options set away from their defaults: a key left out takes its default when
        read back, and ``streams`` stays the runner's to fill."""
        out: Dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != _default(f):
                out[f.name] = write_value(value)
        return out

    @classmethod
    def taking(cls: Type[Opts], settings: Mapping[str, Any]) -> Opts:
        """The options from those of ``settings`` (a cell's: field name -> value) this type
        declares; a setting it does not declare is not this backend's (a CPU backend has no
        shape profile)."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in settings.items() if key in names})

    @classmethod
    def declares(cls, name: str) -> bool:
        return any(f.name == name for f in fields(cls))


def _default(f: Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


#: {input: {"min": shape, "opt": shape, "max": shape}}
ShapeProfile = Dict[str, Dict[str, List[int]]]


@dataclass
class NvidiaOptions(BackendOptions):
    """What the backends on NVIDIA GPUs share (TensorRT's own, ONNX Runtime's CUDA and
    TensorRT providers)."""

    #: Capture one inference into a CUDA graph and replay it (the --cuda-graphs variant).
    cuda_graph: bool = False
    #: The shapes an engine is built for, per input (a dynamic-shape cell: the sweep's smallest
    #: and largest, the cell's own as ``opt``); None: the model's or the feeds' fixed shapes.
    shape_profile: Optional[ShapeProfile] = None
    #: The device folder of TensorRT engines; None: $EDGEBENCH_TRT_CACHE, else
    #: ~/.cache/edgebench/tensorrt (runners/backends/trt_engine_cache.py).
    engine_cache_dir: Optional[str] = None


@dataclass
class OrtGpuOptions(NvidiaOptions):
    """ONNX Runtime's CUDA and TensorRT providers: the NVIDIA options and nothing of their own
    (the TensorRT provider always keeps its engines, in ``engine_cache_dir``/onnxruntime)."""


@dataclass
class TensorRTOptions(NvidiaOptions):
    """TensorRT's own backend (docs/tensorrt.md)."""

    #: False: the engine is built every time and nothing is stored.
    engine_cache: bool = True
    #: A cap on the builder's workspace pool (MiB; part of the cache key); None: TensorRT's.
    workspace_mb: Optional[int] = None

    def check(self) -> None:
        super().check()
        if self.workspace_mb is not None and self.workspace_mb < 1:
            raise OptionsError("spec option workspace_mb must be at least 1")
