"""The runner's input: one JSON object, read into a ``RunSpec``.

This is the protocol's one definition of the spec. The runner reads it with
``RunSpec.from_json``; the host (``edgebench.runners.protocol.spec``) builds one and sends
``to_json()``.
Field names are the JSON keys and carry their units (``min_time_s``); a key left out of the JSON
takes the default below. Keys the runner does not know are ignored, but in ``options``, which
the backend's options type reads strictly (backend_options.py).

Standard library only, Python 3.8, imports nothing from the host package.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Dict, List, Optional, Type

from . import SPEC_SCHEMA
from .backend_options import BackendOptions, OptionsError
from .generation_spec import GenerationSpec, GenerationSpecError

#: (framework, compute backend) -> the options type its backend reads there, None for a framework
#: no backend module declares: the runner passes its backends' ``options_type``.
OptionsLookup = Callable[[str, str], Optional[Type[BackendOptions]]]


class SpecError(ValueError):
    """The spec is malformed; the runner reports it as a ``bad_spec`` error."""


@dataclass
class TelemetrySpec:
    """Energy, frequency and temperature sampling beside the timed window, and the conditions
    set up before it (cool-down, governor)."""

    #: ``auto``, a kind of ``telemetry.SOURCE_KINDS``, or ``none``.
    energy_source: str = "auto"
    period_s: float = 0.05
    #: Idle power measured before the model loads, for this long (0: no baseline).
    baseline_s: float = 0.0
    #: Thermal zone types to read (empty: every zone).
    zones: List[str] = field(default_factory=list)
    #: The sysfs root (None: ``$EDGEBENCH_SYSFS_ROOT`` on the device, else ``/``).
    root: Optional[str] = None
    #: A file created while the timed window runs (for an external power meter).
    sync_marker: Optional[str] = None
    #: Before the cell, wait until the hottest zone is below this...
    cooldown_temp_c: Optional[float] = None
    #: ... but no longer than this.
    cooldown_max_wait_s: float = 0.0
    #: A governor (e.g. ``performance``) for the pinned cores, restored after the cell.
    set_governor: Optional[str] = None

    @classmethod
    def from_json(cls, raw: Any) -> TelemetrySpec:
        if not isinstance(raw, dict):
            raise SpecError("spec field 'telemetry' must be an object or null")
        defaults = cls()
        spec = cls(
            energy_source=raw.get("energy_source") or defaults.energy_source,
            period_s=_number(raw, "period_s", defaults.period_s, "telemetry."),
            baseline_s=_number(raw, "baseline_s", defaults.baseline_s, "telemetry."),
            zones=list(raw.get("zones") or []),
            root=raw.get("root") or None,
            sync_marker=raw.get("sync_marker") or None,
            cooldown_temp_c=raw.get("cooldown_temp_c"),
            cooldown_max_wait_s=_number(
                raw, "cooldown_max_wait_s", defaults.cooldown_max_wait_s, "telemetry."
            ),
            set_governor=raw.get("set_governor") or None,
        )
        if not isinstance(spec.energy_source, str):
            raise SpecError("spec field 'telemetry.energy_source' must be a string")
        if spec.cooldown_temp_c is not None and not _is_number(spec.cooldown_temp_c):
            raise SpecError("spec field 'telemetry.cooldown_temp_c' must be a number or null")
        return spec

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


#: Integer fields that must be >= 0 (the first four of ``_AT_LEAST_ONE`` also >= 1).
_COUNTS = (
    "threads",
    "warmup",
    "iterations",
    "max_iterations",
    "concurrency",
    "seed",
    "instances",
    "profile_ops",
)
_AT_LEAST_ONE = ("threads", "concurrency", "max_iterations", "instances")
_DURATIONS = ("min_time_s", "max_time_s")


@dataclass
class RunSpec:
    """One cell, as the runner measures it."""

    model: str
    framework: str
    #: The compute backend: ``cpu``, or an accelerator the framework offers (``vulkan``, ...;
    #: edgebench/compute_backends.py lists them).
    backend: str = "cpu"
    precision: str = "fp32"
    threads: int = 1
    #: CPU ids to pin to (None: the process's affinity as it is).
    cores: Optional[List[int]] = None
    warmup: int = 10
    iterations: int = 100
    #: The timed window lasts at least ``iterations`` samples and this long...
    min_time_s: float = 2.0
    #: ... and at most this many samples and this long.
    max_iterations: int = 100000
    max_time_s: float = 120.0
    #: Streams run at once (one thread each); with ``instances`` > 1, equal to them.
    concurrency: int = 1
    #: ``[{"name", "shape", "dtype"?}]`` for inputs whose shape the model leaves open or that
    #: the host fixed; None: the model's own.
    inputs: Optional[List[Dict[str, Any]]] = None
    seed: int = 0
    #: Backend options: the JSON of the options type the framework's backend module declares
    #: for ``backend`` (runners/backend_options.py), checked strictly; the runner adds
    #: ``streams`` where the host left it out.
    options: Dict[str, Any] = field(default_factory=dict)
    #: Path of an .npz to write the full outputs to (for the output check).
    save_outputs: Optional[str] = None
    #: Path of an .npz with one array per input name (the host's --input), fed instead of the
    #: seeded inputs.
    input_file: Optional[str] = None
    #: Quantized cells: an .npz whose arrays stack evaluation samples on a leading axis; after
    #: the timed window each sample runs once and the stacked outputs go to
    #: ``save_eval_outputs`` (the host compares them with fp32 ONNX Runtime).
    eval_file: Optional[str] = None
    save_eval_outputs: Optional[str] = None
    #: Sampling and conditions beside the timed window, or None for none.
    telemetry: Optional[TelemetrySpec] = None
    #: Keep sampling until the 95% CI of the median is within +-target_ci (a fraction), or the
    #: maxima stop it; None: ``iterations`` and ``min_time_s`` decide.
    target_ci: Optional[float] = None
    #: Time copy-in, compute and copy-out of each iteration separately (one stream only).
    stages: bool = True
    #: After the timed window: this many inferences of a separate profiling instance.
    profile_ops: int = 0
    #: N instances of the model in this process, ``separate`` loads or ``shared`` weights.
    instances: int = 1
    instance_mode: str = "separate"
    #: Inputs of another shape: one inference at those first, then the resize to ``inputs`` is
    #: timed (dynamic-shape artifacts).
    shape_change_from: Optional[List[Dict[str, Any]]] = None
    #: A generative cell's workload (generation_spec.py): ``model`` is then a .gguf file (or a
    #: runtime's own model folder) and ``framework`` a generative runtime.
    generation: Optional[GenerationSpec] = None

    @classmethod
    def from_json(cls, raw: Any, options_type: Optional[OptionsLookup] = None) -> RunSpec:
        """The spec in ``raw`` (a decoded JSON object), checked; SpecError when malformed.
        With ``options_type``, ``options`` is read strictly with the type it gives for the
        cell's framework and backend (the runner passes its backend modules' declarations)."""
        if not isinstance(raw, dict):
            raise SpecError("the spec must be a JSON object")
        if raw.get("schema") != SPEC_SCHEMA:
            raise SpecError("spec schema %r is not %r" % (raw.get("schema"), SPEC_SCHEMA))
        for key in ("model", "framework"):
            if not isinstance(raw.get(key), str) or not raw.get(key):
                raise SpecError("spec field %r must be a non-empty string" % key)
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in raw.items() if key in known}
        spec = cls(**values)
        for key in _COUNTS:
            value = getattr(spec, key)
            if not isinstance(value, int) or value < 0:
                raise SpecError("spec field %r must be a non-negative integer" % key)
        if min(getattr(spec, key) for key in _AT_LEAST_ONE) < 1:
            raise SpecError("threads, concurrency, max_iterations and instances must be >= 1")
        if spec.instances > 1 and spec.concurrency != spec.instances:
            raise SpecError("with several instances, concurrency must equal them")
        for key in _DURATIONS:
            value = getattr(spec, key)
            if not _is_number(value) or value < 0:
                raise SpecError("spec field %r must be a non-negative number" % key)
        if spec.options is None:
            spec.options = {}
        elif not isinstance(spec.options, dict):
            raise SpecError("spec field 'options' must be an object")
        if options_type is not None:
            _check_options(spec, options_type)
        spec.telemetry = TelemetrySpec.from_json(spec.telemetry) if spec.telemetry else None
        if spec.generation is not None:
            try:
                spec.generation = GenerationSpec.from_json(spec.generation)
            except GenerationSpecError as exc:
                raise SpecError(str(exc)) from None
        return spec

    def to_json(self) -> Dict[str, Any]:
        """The JSON object the runner reads back into an equal ``RunSpec``."""
        out: Dict[str, Any] = {"schema": SPEC_SCHEMA}
        for f in fields(self):
            out[f.name] = getattr(self, f.name)
        out["options"] = dict(self.options)
        out["telemetry"] = self.telemetry.to_json() if self.telemetry is not None else None
        out["generation"] = self.generation.to_json() if self.generation is not None else None
        return out


def _check_options(spec: RunSpec, options_type: OptionsLookup) -> None:
    """Read the options with the type the framework's backend module declares for the cell's
    backend; a framework no module declares is the backend loader's to refuse."""
    kind = options_type(spec.framework, spec.backend)
    if kind is None:
        return
    try:
        kind.from_json(spec.options, "%s on %s" % (spec.framework, spec.backend))
    except OptionsError as exc:
        raise SpecError(str(exc)) from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _number(raw: Dict[str, Any], key: str, default: float, prefix: str = "") -> float:
    """``raw[key]`` as a float; missing, null or 0 take ``default`` (as the runner always has)."""
    value = raw.get(key)
    if not value:
        return default
    if not _is_number(value) or value < 0:
        raise SpecError("spec field '%s%s' must be a non-negative number" % (prefix, key))
    return float(value)
