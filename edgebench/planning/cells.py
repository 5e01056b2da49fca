"""Expand the user's choices into cells: one cell is one measurement on one device."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgebench.compute_backends import CPU, engine_label, find_backend, options_type
from edgebench.converters import CONVERTERS, Artifact
from edgebench.errors import UserError
from edgebench.frameworks import (
    default_frameworks,
    find_framework,
    framework_for_format,
    framework_names,
)
from edgebench.lab.cores import resolve_cores
from edgebench.lab.device import Device
from edgebench.lab.device_snapshot import DeviceSnapshot
from edgebench.planning.backend_cells import (
    Verdict,
    backend_verdict,
    defaulted_pairs,
    device_api_verdict,
    existing_pairs,
    software_device_timing,
    software_only,
)
from edgebench.planning.config import TelemetryConfig, TimingConfig
from edgebench.planning.generative_workload import (
    GenerativeWorkload,
    generation_spec,
    prompt_ids,
)
from edgebench.planning.modelref import (
    ModelRef,
    ShapeOverride,
    check_shape_overrides,
    input_shapes,
)
from edgebench.planning.tflite_origin import cell_model
from edgebench.quantization.calibration import PreparedSets
from edgebench.runners.protocol.generation_spec import GenerationSpec
from edgebench.runners.protocol.spec import RunSpec, TelemetrySpec
from edgebench.statuses import ErrorKind, Status

log = logging.getLogger(__name__)

#: Whether a device can run a framework: None, or the verdict of the cells that cannot.
Availability = Callable[[Device, str], Verdict | None]
#: What `edgebench run` measures when --frameworks is not given.
DEFAULT_FRAMEWORKS = default_frameworks()


#: A sustained window ends early (stop_reason max_iterations) rather than hold more samples:
#: a sub-millisecond model would otherwise fill the device's memory and the record.
SUSTAINED_MAX_SAMPLES = 2_000_000


def sustained_timing(timing: TimingConfig) -> TimingConfig:
    """--sustained: one long continuous window per cell, the way an app session loads the
    phone (its length is both the minimum time and, with a second's slack, the maximum)."""
    seconds = timing.sustained_s
    if not seconds:
        return timing
    return replace(
        timing,
        iterations=1,
        min_time_s=seconds,
        max_time_s=seconds + 1.0,
        timeout_s=timing.timeout_s + seconds,
        target_ci_pct=None,
    )


def max_iterations(timing: TimingConfig, correctness_only: bool = False) -> int:
    """The most samples the runner takes: one when only the outputs count."""
    if correctness_only:
        return 1
    if timing.sustained_s:
        return SUSTAINED_MAX_SAMPLES
    return max(RunSpec.max_iterations, timing.iterations)


def target_ci_fraction(timing: TimingConfig) -> float | None:
    """--target-ci as the runner takes it: a fraction (0.01 for +-1%)."""
    return timing.target_ci_pct / 100 if timing.target_ci_pct else None


def correctness_timing(timing: TimingConfig) -> TimingConfig:
    """The least timing that still yields checked outputs: no warm-up, one inference. Used
    on an emulated CPU, where latency says nothing about a chip and each inference takes
    seconds (the timeout stays)."""
    return replace(
        timing,
        warmup=0,
        iterations=1,
        min_time_s=0.0,
        sustained_s=None,
        target_ci_pct=None,
    )


@dataclass(frozen=True)
class Cell:
    """One measurement planned on one device: a value (the live device is handed to the
    measurement method beside it, ``measure/methods``)."""

    device: DeviceSnapshot
    model: ModelRef
    framework: str
    #: The precision the cell runs at; once the file it runs is known, the file's own
    #: (``planning/prepare.py``, ``settle_precisions``).
    precision: str
    threads: int
    cores_selection: str
    cores: list[int] | None
    concurrency: int
    inputs: list[dict[str, Any]]
    #: The cell's own timing: the run's, made a sustained window or a correctness-only one.
    timing: TimingConfig
    #: (status, error kind, reason) when the cell is decided without running it.
    verdict: Verdict | None = None
    #: The artifact format the framework needs, when the model must be converted first.
    convert_to: str | None = None
    artifact: Artifact | None = None
    telemetry: TelemetryConfig | None = None
    #: Timed once, for the output check only (``correctness_timing``: an emulated CPU).
    correctness_only: bool = False
    #: Quantized precisions: the calibration and evaluation sets the cell is judged with.
    quantization: PreparedSets | None = None
    #: Time copy-in, compute and copy-out separately (one stream only).
    stages: bool = True
    #: --profile ops: this many profiled inferences after the timed window (0: none).
    profile_ops: int = 0
    #: --instances: N instances of the model in one process (concurrency is N too), either
    #: ``separate`` loads or ``shared`` weights.
    instances: int = 1
    instance_mode: str = "separate"
    #: --shapes: ``fixed`` (an artifact converted for this shape) or ``dynamic`` (one artifact
    #: for every shape, resized at run time from ``shape_from``); None outside a shape sweep.
    shape_mode: str | None = None
    shape_from: list[dict[str, Any]] | None = None
    #: Dynamic cells: the sweep's first shape, the one a converter may need as an example.
    shape_base: list[dict[str, Any]] | None = None
    #: Dynamic-shape cells: per input, the smallest and largest shape of the sweep, so an
    #: engine built for this cell (TensorRT) covers every shape the sweep resizes to.
    shape_range: dict[str, tuple[list[int], list[int]]] | None = None
    #: The CUDA Graphs variant (--cuda-graphs): the inference captured once and replayed.
    cuda_graph: bool = False
    #: The compute backend: ``cpu`` or an accelerator (edgebench/compute_backends.py).
    backend: str = CPU
    #: The backend's devices here are all software ones (``software_device_timing``): one
    #: visit, never split into interleaved rounds.
    software_device: bool = False
    #: The precision the run asked for, where the file the cell runs holds another one.
    precision_requested: str | None = None
    #: A generative cell's workload (planning/generative.py); None: a tensor cell.
    generation: GenerativeWorkload | None = None

    @property
    def engine(self) -> str:
        """The matrix column: ``ncnn``, or ``ncnn·vulkan`` on an accelerator."""
        return engine_label(self.framework, self.backend, self.cuda_graph)

    @property
    def cell_id(self) -> str:
        return "/".join(
            [
                self.device.name,
                self.model.name,
                self.framework,
                self.precision,
                f"t{self.threads}",
                f"c{self.cores_selection}",
                f"s{self.concurrency}",
            ]
            + ([f"i{self.instances}-{self.instance_mode}"] if self.instances > 1 else [])
            + ([f"shape-{self.shape_label}-{self.shape_mode}"] if self.shape_mode else [])
            + ([f"b{self.backend}"] if self.backend != CPU else [])
            + (["graph"] if self.cuda_graph else [])
        )

    @property
    def shape_label(self) -> str:
        """The inputs' shapes as ``1x3x224x224`` (``+`` between several inputs)."""
        return "+".join("x".join(str(d) for d in i["shape"]) for i in self.inputs)

    @property
    def run_path(self) -> Path | None:
        """The file the runner loads: the converted artifact, or the model as given."""
        if self.artifact is not None:
            return self.artifact.primary
        return self.model.path

    def spec(
        self, seed: int = 0, save_outputs: str | None = None, input_file: str | None = None
    ) -> dict[str, Any]:
        """The runner's JSON spec (``RunSpec`` documents each field). ``input_file`` is the
        device path of a prepared inputs .npz (--input), fed instead of seeded inputs."""
        timing = self.timing
        return RunSpec(
            model=str(self.run_path),
            framework=self.framework,
            backend=self.backend,
            precision=self.precision,
            threads=self.threads,
            cores=self.cores,
            warmup=timing.warmup,
            iterations=timing.iterations,
            min_time_s=timing.min_time_s,
            max_time_s=timing.max_time_s,
            max_iterations=max_iterations(timing, self.correctness_only),
            target_ci=target_ci_fraction(timing),
            concurrency=self.concurrency,
            inputs=self.inputs,
            seed=seed,
            input_file=input_file,
            save_outputs=save_outputs,
            telemetry=self.telemetry_spec(),
            stages=self.stages,
            profile_ops=self.profile_ops,
            instances=self.instances,
            instance_mode=self.instance_mode,
            shape_change_from=self.shape_from,
            options=self.runner_options(),
            generation=self.generation_spec(seed),
        ).to_json()

    def generation_spec(self, seed: int) -> GenerationSpec | None:
        """A generative cell's ``generation`` part: its workload and the seeded prompt."""
        if self.generation is None:
            return None
        if self.model.llm is None:
            raise ValueError(f"{self.model.name} is no generative model: it has no vocabulary")
        ordinary = self.model.llm.ordinary_ids()
        prompt = prompt_ids(ordinary, self.generation.prompt_length, seed)
        return generation_spec(self.generation, prompt)

    def runner_options(self) -> dict[str, Any]:
        """The spec's ``options``: the cell's settings that the options type of its backend's
        row takes (runners/protocol/backend_options.py), as JSON; none for a backend that takes
        none."""
        kind = options_type(self.framework, self.backend)
        if kind is None:
            return {}
        profile = None
        if self.shape_range:
            current = {i["name"]: list(i["shape"]) for i in self.inputs}
            profile = {
                name: {"min": low, "opt": current.get(name, high), "max": high}
                for name, (low, high) in self.shape_range.items()
            }
        settings = {"cuda_graph": self.cuda_graph, "shape_profile": profile}
        return kind.taking(settings).to_json()

    def telemetry_spec(self) -> TelemetrySpec | None:
        """The telemetry settings as the runner takes them, with the device profile's energy
        source and thermal zones; None when nothing is sampled."""
        settings = self.telemetry
        if settings is None:
            return None
        profile = self.device.profile
        source = settings.energy_source or (profile.energy_source if profile else "auto")
        return TelemetrySpec(
            energy_source=source,
            period_s=settings.period_s,
            baseline_s=settings.baseline_s if source != "none" else 0.0,
            zones=list(profile.thermal_zones) if profile else [],
            sync_marker=settings.sync_marker,
            cooldown_temp_c=settings.cooldown_temp_c,
            cooldown_max_wait_s=settings.cooldown_max_wait_s,
            set_governor=settings.set_governor,
        )

    @property
    def timeout_s(self) -> float:
        """The cell's own timeout plus the waiting the runner does before it."""
        extra = 0.0
        if self.telemetry is not None:
            extra = self.telemetry.baseline_s
            if self.telemetry.cooldown_temp_c is not None:
                extra += self.telemetry.cooldown_max_wait_s
        return self.timing.timeout_s + extra


def check_frameworks(names: Sequence[str]) -> list[str]:
    known = framework_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown framework {', '.join(unknown)}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def resolve_inputs(
    models: Sequence[ModelRef], shapes: Sequence[ShapeOverride]
) -> dict[str, list[dict[str, Any]]]:
    """Concrete input shapes per usable model, by model name.

    Called before any device is contacted, so a missing --shape fails the plan at once
    instead of after an hour of measurements.
    """
    check_shape_overrides(models, shapes)
    return {m.name: input_shapes(m, shapes) for m in models if m.error is None}


def _model_route(
    model: ModelRef, framework: str, precision: str, backend: str = CPU
) -> tuple[str | None, Verdict | None]:
    """(format to convert to, or a verdict) for running ``model`` with ``framework``."""
    entry = find_framework(framework)
    fmt = entry.artifact_format if entry else None
    if model.format == "onnx":
        if entry is not None and precision == "int8" and entry.int8_format:
            fmt = entry.int8_format
        accelerator = find_backend(framework, backend)
        if precision == "fp16" and accelerator is not None and accelerator.fp16_format:
            fmt = accelerator.fp16_format
        # No artifact format: the framework runs the ONNX file itself (fmt None, no verdict).
        if entry is None or (fmt is not None and fmt not in CONVERTERS):
            return None, (
                Status.UNSUPPORTED,
                ErrorKind.UNSUPPORTED,
                f"edgebench has no ONNX -> {framework} converter",
            )
        return fmt, None
    if fmt == model.format:
        return None, None
    owner = framework_for_format(model.format)
    return None, (
        Status.SKIPPED,
        ErrorKind.OTHER_FORMAT,
        f"{model.name} is a pre-converted {model.format} model; only "
        f"{owner.name if owner else model.format} runs it",
    )


#: Devices already warned about thread counts (build_cells runs once per precision).
_WARNED_THREADS: weakref.WeakKeyDictionary[Device, set[int]] = weakref.WeakKeyDictionary()
#: Devices already warned about more threads than pinned cores: (core selection, threads).
_WARNED_CORES: weakref.WeakKeyDictionary[Device, set[tuple[str, int]]] = weakref.WeakKeyDictionary()


def _warn_oversubscribed(device: Device, threads: Sequence[int], n_cpus: int) -> None:
    """One warning line per device when a thread count exceeds its cpus: such a cell can run
    far slower than expected (threads that spin-wait share the cores) until its timeout."""
    over = [t for t in threads if n_cpus and t > n_cpus]
    warned = _WARNED_THREADS.setdefault(device, set())
    if not over or set(over) <= warned:
        return
    warned.update(over)
    log.warning(
        "warning: device %s has %d cpus; --threads %s oversubscribes them, so those cells "
        "may run very slowly or hit --timeout",
        device.name,
        n_cpus,
        ",".join(str(t) for t in over),
    )


def _warn_shared_cores(
    device: Device, threads: Sequence[int], core_sets: Sequence[tuple[str, list[int] | None]]
) -> None:
    """One warning line per device, thread count and core selection that pins more threads
    than cores (``--threads 4 --cores 0``): the threads take turns on the pinned cores, so the
    cells measure that, not the speed of that many threads."""
    warned = _WARNED_CORES.setdefault(device, set())
    for selection, cpu_ids in core_sets:
        if cpu_ids is None:
            continue  # all cores: _warn_oversubscribed
        for n_threads in threads:
            if n_threads <= len(cpu_ids) or (selection, n_threads) in warned:
                continue
            warned.add((selection, n_threads))
            share = "one core" if len(cpu_ids) == 1 else f"{len(cpu_ids)} cores"
            log.warning(
                "warning: --threads %d with --cores %s on device %s: the %d threads share %s, "
                "so those cells measure threads taking turns, not %d-thread speed",
                n_threads,
                selection,
                device.name,
                n_threads,
                share,
                n_threads,
            )


def build_cells(
    devices: Sequence[Device],
    models: Sequence[ModelRef],
    frameworks: Sequence[str],
    *,
    inputs: dict[str, list[dict[str, Any]]],
    threads: Sequence[int],
    cores: Sequence[str],
    concurrency: int,
    precision: str,
    timing: TimingConfig,
    availability: Availability,
    telemetry: TelemetryConfig | None = None,
    backends: Sequence[str] = (),
    frameworks_chosen: bool = True,
) -> list[Cell]:
    """Every combination, in device > model > framework > backend > threads > cores order.
    ``backends`` empty: each device's lab list, else each framework's default backend (the
    CPU; TensorRT's CUDA). With ``frameworks_chosen`` false (the run named none), a framework
    that has no CPU backend gets cells only on devices that have its accelerator."""
    cells = []
    for device in devices:
        unreachable = device.unreachable
        if unreachable:
            # Its cells still exist, each failed with the reason the device was not reached.
            core_sets: list[tuple[str, list[int] | None]] = [(sel, None) for sel in cores]
        else:
            cpus = device.facts().cpus
            _warn_oversubscribed(device, threads, len(cpus))
            core_sets = [
                (sel, resolve_cores(sel, cpus, device.core_names(), device.name)) for sel in cores
            ]
            _warn_shared_cores(device, threads, core_sets)
        emulated = not unreachable and device.facts().emulated
        snapshot = DeviceSnapshot.of(device)
        device_timing = correctness_timing(timing) if emulated else timing
        device_backends = list(backends or device.lab_backends or [])
        if device_backends:
            pairs = existing_pairs(device, frameworks, device_backends)
        else:
            pairs = defaulted_pairs(device, frameworks, frameworks_chosen)
        for model in models:
            for framework, backend in pairs:
                ran = cell_model(model, framework, precision)  # a .tflite's twin or original
                convert_to, verdict = _model_route(ran, framework, precision, backend)
                if model.error:
                    verdict = (Status.FAILED, ErrorKind.MODEL_LOAD, model.error)
                if unreachable:
                    convert_to, verdict = None, (Status.FAILED, ErrorKind.TRANSPORT, unreachable)
                verdict = (
                    verdict
                    # No GPU at all says more than a framework not installed for it.
                    or device_api_verdict(device, framework, backend)
                    or availability(device, framework)
                    or backend_verdict(device, framework, backend)
                )
                software = verdict is None and software_only(device, framework, backend)
                cell_timing = software_device_timing(device_timing) if software else device_timing
                for n_threads in threads:
                    for selection, cpu_ids in core_sets:
                        cells.append(
                            Cell(
                                device=snapshot,
                                model=ran,
                                framework=framework,
                                precision=precision,
                                threads=n_threads,
                                cores_selection=selection,
                                cores=cpu_ids,
                                concurrency=concurrency,
                                inputs=inputs.get(model.name, []),
                                timing=cell_timing,
                                correctness_only=emulated,
                                verdict=verdict,
                                convert_to=convert_to,
                                telemetry=telemetry,
                                backend=backend,
                                software_device=software,
                            )
                        )
    return cells


#: Rounds used when several frameworks share a device and --rounds is not given.
DEFAULT_ROUNDS = 3


def auto_rounds(cells: Sequence[Cell]) -> int:
    """How many interleaved rounds a plan gets by default: ``DEFAULT_ROUNDS`` when one device
    measures the same model under several frameworks (so drift cannot favour whichever runs
    first), else 1. Long continuous windows (--sustained) and adaptive sampling (--target-ci)
    stay in one visit: splitting them would change what they measure."""
    frameworks: dict[tuple[str, str], set[str]] = {}
    for cell in cells:
        timing = cell.timing
        if cell.verdict is not None or timing.sustained_s or timing.target_ci_pct:
            continue
        if cell.correctness_only or cell.software_device:
            continue
        frameworks.setdefault((cell.device.name, cell.model.name), set()).add(cell.engine)
    return DEFAULT_ROUNDS if any(len(f) > 1 for f in frameworks.values()) else 1
