"""The one result record that flows from a finished cell to the store, matrix and reports.

Field names listed in docs/results.md are stable; add fields, never rename them.
"""

from __future__ import annotations

import functools
import logging
import math
import typing
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

from edgebench.compute_backends import CPU, engine_label
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.results.breakdown_parts import Instances, OpProfile, ShapeVariant, Stages
from edgebench.results.energy_part import EnergyResult
from edgebench.results.generation_part import Generation
from edgebench.results.json_values import (
    json_kind,
    matches,
    merge_part,
    part_to_json,
    read_part,
    wrong_type,
)
from edgebench.results.measurement_kind import MeasurementKind
from edgebench.results.nvidia_part import NvidiaState
from edgebench.results.output_check_part import OutputCheck
from edgebench.results.provenance_parts import Artifact, ToolReport
from edgebench.results.quant_parts import Accuracy, Quant
from edgebench.results.record_warnings import (
    RecordWarning,
    warnings_from_json,
    warnings_to_json,
)
from edgebench.results.sustained_part import SustainedSummary
from edgebench.results.telemetry_part import TelemetryTrace
from edgebench.statuses import Status

RECORD_SCHEMA = "edgebench.record/1"
STATUSES = tuple(Status)

log = logging.getLogger(__name__)

#: The parts already left out, said once: a command may read a record twice (the results
#: index, then the run it shows).
_LEFT_OUT: set[tuple[str, str, str]] = set()


def forget_said_warnings() -> None:
    """Say every left-out part again: a process that runs many commands (a test session)
    calls it between them, as each command of the CLI is a process of its own."""
    _LEFT_OUT.clear()


#: The record's typed parts: field name -> the part stored under it (a ``RecordPart``, or a
#: plain dataclass whose fields are its JSON keys).
PARTS: dict[str, type] = {
    "quant": Quant,
    "accuracy": Accuracy,
    "stages": Stages,
    "op_profile": OpProfile,
    "instances": Instances,
    "shape": ShapeVariant,
    "energy": EnergyResult,
    "sustained": SustainedSummary,
    "artifact": Artifact,
    "native": ToolReport,
    "telemetry": TelemetryTrace,
    "output_check": OutputCheck,
    "accelerator": AcceleratorRun,
    "nvidia": NvidiaState,
    "generation": Generation,
}


@dataclass(frozen=True)
class Record:
    """A value: the measurement steps (measure/records.py, the checks, the scheduler) each
    return a new record (``dataclasses.replace``, ``with_part``); nothing writes into one."""

    run_id: str
    cell_id: str
    device: str
    model: str
    framework: str
    #: The precision of the file the cell ran, read from the file itself.
    precision: str
    threads: int
    cores: str
    status: str
    error: str | None = None
    error_kind: str | None = None
    latency_ms: dict[str, float] | None = None
    samples_ns: list[int] = field(default_factory=list)
    throughput_ips: float | None = None
    peak_rss_mb: float | None = None
    schema: str = RECORD_SCHEMA
    concurrency: int = 1
    #: The compute backend the cell asked for: ``cpu``, or an accelerator (``vulkan``, ...).
    backend: str = CPU
    #: The CUDA Graphs variant of a CUDA cell (--cuda-graphs).
    cuda_graph: bool = False
    model_path: str | None = None
    model_sha256: str | None = None
    framework_version: str | None = None
    cores_effective: list[int] | None = None
    inputs: list[dict[str, Any]] | None = None
    n_samples: int = 0
    warmup_samples_ns: list[int] = field(default_factory=list)
    stop_reason: str | None = None
    #: --target-ci: relative half-width of the 95% CI of the median when sampling stopped.
    median_ci: float | None = None
    measure_wall_s: float | None = None
    rss_before_load_mb: float | None = None
    load_ms: float | None = None
    first_inference_ms: float | None = None
    outputs: list[dict[str, Any]] | None = None
    #: Stored as messages, with each one's kind and figures under ``warning_details``.
    warnings: list[RecordWarning] = field(default_factory=list)
    device_info: dict[str, Any] = field(default_factory=dict)
    edgebench_version: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    stderr_tail: str | None = None
    #: The converted file the cell ran: format, converter and version, cache hit, time, sha256.
    artifact: Artifact | None = None
    #: Outputs vs ONNX Runtime on the same input (measure/output_check.py computes it).
    output_check: OutputCheck | None = None
    #: Energy per inference (mJ) after subtracting idle power; None when unavailable.
    energy_mj_per_inf: float | None = None
    #: Mean power over the timed window (W), idle included.
    avg_power_w: float | None = None
    #: Why the energy figure may mislead (charging, throttled, coarse sampling, ...).
    energy_flags: list[str] = field(default_factory=list)
    #: Baseline, power, temperatures, frequencies, unavailable reason.
    energy: EnergyResult | None = None
    #: --sustained: first 10% vs last 10% of the window (latency, power, temperature).
    sustained: SustainedSummary | None = None
    #: The raw telemetry trace sampled on the device (edgebench.telemetry/1).
    telemetry: TelemetryTrace | None = None
    #: --rounds: how many interleaved rounds the samples were pooled from, and each round's p50.
    rounds: int = 1
    round_p50_ms: list[float] | None = None
    #: For cells run by a native benchmark binary: tool, version, which statistics it printed.
    native: ToolReport | None = None
    #: Measured on an emulated CPU (qemu user mode, ...): the latency says nothing about the
    #: chip, so the cell is never ranked or recommended; ``emulation`` says how it was known.
    emulated: bool = False
    emulation: str | None = None
    #: Quantized precisions: how the artifact was quantized.
    quant: Quant | None = None
    #: Quantized precisions: outputs on the evaluation set vs fp32 ONNX Runtime.
    accuracy: Accuracy | None = None
    #: Per-stage times of each timed iteration, where the framework's API separates them.
    stages: Stages | None = None
    #: --profile ops (profiled iterations are separate from the timed ones).
    op_profile: OpProfile | None = None
    #: --instances: memory with N instances; latency and throughput are the record's own,
    #: measured with all instances running.
    instances: Instances | None = None
    #: --shapes: the cell's place in a shape sweep.
    shape: ShapeVariant | None = None
    #: Accelerator cells: the device the backend ran on, as the framework reported it.
    accelerator: AcceleratorRun | None = None
    #: Process CPU time (user + system) per inference over the timed window, every backend:
    #: what a GPU backend leaves of the CPU for the rest of the app.
    cpu_ms_per_inf: float | None = None
    #: Cells on CUDA backends and cells on a device with NVIDIA facts: the GPU, driver,
    #: libraries, clocks and load, and on a Jetson the power mode.
    nvidia: NvidiaState | None = None
    #: Android's fixed-performance mode while the cell ran: True when edgebench turned it on
    #: (--fixed-performance), False on an ADB device where it did not (the run did not ask,
    #: or the device refused), None elsewhere and in older records.
    fixed_performance: bool | None = None
    #: The precision the run asked for, where the file the cell ran holds another one
    #: (``precision``); None when they agree.
    precision_requested: str | None = None
    #: Generative cells: time to first token per prompt length and the decode test (their
    #: per-token decode latencies are ``samples_ns``).
    generation: Generation | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"record status {self.status!r} is not one of {STATUSES}")
        for name, part in PARTS.items():
            value = getattr(self, name)
            if isinstance(value, dict):  # the part as stored: read and checked
                object.__setattr__(self, name, self._read_part(name, part, value))
            elif value is not None and not isinstance(value, part):
                raise wrong_type(name, value)

    @property
    def measurement_kind(self) -> MeasurementKind:
        """A real chip's figures, or correctness only (an emulated CPU, a software device)."""
        return MeasurementKind.of(bool(self.emulated), self.software_device)

    @property
    def software_device(self) -> bool:
        """Measured on a software accelerator (lavapipe, pocl, ...): like an emulated CPU's,
        its latency is for correctness only, but its CPU is not emulated (``emulated`` is
        False unless it is; records written before the two were kept apart have it set:
        ``analysis.ranking.correctness_only`` reads the accelerator first)."""
        return self.accelerator is not None and self.accelerator.software

    @property
    def engine(self) -> str:
        """The matrix column: ``ncnn`` on the CPU, ``ncnn·vulkan`` on an accelerator,
        ``tensorrt+graphs`` for a CUDA Graphs variant."""
        return engine_label(self.framework, self.backend, self.cuda_graph)

    def with_part(self, name: str, value: dict[str, Any]) -> Record:
        """This record with the part ``name`` read from its JSON object (a runner's, say), or
        left out as ``__post_init__`` does."""
        return replace(self, **{name: self._read_part(name, PARTS[name], value)})

    def with_warnings(self, *added: RecordWarning) -> Record:
        """This record with ``added`` after its own warnings."""
        return replace(self, warnings=[*self.warnings, *added])

    def _read_part(self, name: str, part: type, value: dict[str, Any]) -> Any:
        """The part read from its JSON object, or None when a value inside it has the wrong
        type or a key it must have is missing: the record keeps its other fields (results
        already collected are never lost), and one warning names the cell and the field."""
        try:
            return read_part(part, value, name)
        except ValueError as exc:
            said = (self.run_id, self.cell_id, str(exc))
            if said not in _LEFT_OUT:
                _LEFT_OUT.add(said)
                log.warning("record %s: %s; its %s is left out", self.cell_id, exc, name)
            return None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values: a NaN or infinite float (an output check of NaN outputs,
        a summary of them) becomes None, so the store can always write the record."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in PARTS:
            if data[name] is not None:
                data[name] = part_to_json(data[name])
        data.update(warnings_to_json(self.warnings))
        return _finite(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """Tolerant of fields added by newer versions (they are dropped); a field of the wrong
        type is a ValueError, so readers never meet ``"latency_ms": "fast"`` downstream. A part
        holding a wrong type inside its object is left out of the record (``_read_part``)."""
        if not isinstance(data, dict):
            raise ValueError(f"a record is a JSON object, not a JSON {json_kind(data)}")
        hints, defaulted = _field_types(), _defaulted_fields()
        values: dict[str, Any] = {
            "warnings": warnings_from_json(data.get("warnings"), data.get("warning_details"))
        }
        for name, value in data.items():
            if name not in hints or name == "warnings":
                continue
            if name in PARTS and isinstance(value, dict):
                values[name] = value  # read and checked by the part, in __post_init__
                continue
            if not matches(value, hints[name]):
                if value is None and name in defaulted:
                    continue  # null where an older writer left a field out: its default
                raise ValueError(f"field {name} holds a JSON {json_kind(value)}")
            values[name] = value
        return cls(**values)


def merged_parts(rounds: Sequence[Record]) -> dict[str, Any]:
    """Each typed part of a cell's record pooled from its interleaved rounds: the part's own
    merge of the rounds' parts, by field name."""
    return {
        name: merge_part(part, [getattr(r, name) for r in rounds]) for name, part in PARTS.items()
    }


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@functools.cache
def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(Record)


@functools.cache
def _defaulted_fields() -> frozenset[str]:
    return frozenset(
        f.name
        for f in fields(Record)
        if f.default is not MISSING or f.default_factory is not MISSING
    )
