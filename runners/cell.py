"""One cell, measured: pin -> load -> feeds -> streams and first inference -> warm-up -> timed
window -> outputs (-> evaluation, operator profile).

Each phase is a function that returns what it found. ``measure_cell`` calls them in order and
keeps each value in a ``CellFacts`` as it comes back, so a cell that fails part-way still
reports what it measured; the result line's fields are built from the facts once, at the end.

Runs on the device: Python 3.8+, numpy and the backends; imports nothing from the host package.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence

from .accelerator_run import DeviceMemory
from .backend_loader import load_backend
from .backends import Backend, discover
from .backends.base import Stream, inference_errors
from .device_watch import cell_watches, reports, window_hooks
from .evaluation import evaluate
from .feeds import Feeds, prepare_feeds, resolve_inputs
from .generation import measure_generation
from .instances import OpenedStreams, open_streams
from .op_profile import profile_ops
from .proc import PinningError, apply_affinity, effective_cores, peak_rss_kb, rss_kb
from .protocol.errors import BackendError
from .protocol.input_spec import InputSpec
from .protocol.result_parts import GenerationPart
from .protocol.spec import RunSpec
from .protocol.tensors import make_inputs, save_outputs, summarize_outputs
from .telemetry import CellTelemetry
from .timing import TimedWindow, WindowLimits, run_window

Hooks = Sequence[ContextManager[Any]]

ACCELERATOR_OP_PROFILE = (
    "the Python runner times operators on the CPU backend only: on %s the framework queues "
    "the operators to the device, so times taken around them on the host are not theirs"
)


@dataclass
class Started:
    """The streams open and one inference run at the cell's shape."""

    opened: OpenedStreams
    #: The first inference: at the cell's shape, or at the earlier shape of a shape change.
    first_inference_ns: int
    #: With a shape change: its ``from`` shape, the resize and the first inference after it.
    shape_change: Optional[Dict[str, Any]] = None
    #: Several instances: the resident memory once all are loaded and one has run.
    rss_one_running_kb: Optional[int] = None


@dataclass
class Ran:
    """What the streams gave once the window ended."""

    outputs: List[Any]
    #: Several instances: the resident memory with all of them having run.
    rss_running_kb: Optional[int] = None


@dataclass
class CellFacts:
    """What the phases of one cell returned, as far as the cell got."""

    cores_effective: Optional[List[int]] = None
    framework_version: Optional[str] = None
    rss_before_load_kb: Optional[int] = None
    load_ns: Optional[int] = None
    inputs: Optional[List[Dict[str, Any]]] = None
    started: Optional[Started] = None
    warmup_samples_ns: Optional[List[int]] = None
    telemetry: Optional[Dict[str, Any]] = None
    window: Optional[TimedWindow] = None
    stages: Optional[Dict[str, Any]] = None
    ran: Optional[Ran] = None
    outputs: Optional[List[Dict[str, Any]]] = None
    outputs_file: Optional[str] = None
    eval_samples: Optional[int] = None
    eval_outputs_file: Optional[str] = None
    peak_rss_kb: Optional[int] = None
    op_profile: Optional[Dict[str, Any]] = None
    #: On an accelerator: what ran there, as the backend said after the first inference.
    accelerator: Optional[Dict[str, Any]] = None
    #: The device watches' reports, by result key (device_watch.py).
    watched: Optional[Dict[str, Dict[str, Any]]] = None
    #: A generative cell's tests (generation.py), filled as they run.
    generation: Optional[GenerationPart] = None
    ok: bool = False

    def result_fields(self) -> Dict[str, Any]:
        """The result line's fields these facts fill (those the cell never reached are left
        to the line's defaults)."""
        out: Dict[str, Any] = {}
        plain = {
            "cores_effective": self.cores_effective,
            "framework_version": self.framework_version,
            "rss_before_load_kb": self.rss_before_load_kb,
            "load_ns": self.load_ns,
            "inputs": self.inputs,
        }
        out.update((k, v) for k, v in plain.items() if v is not None)
        if self.started is not None:
            out["first_inference_ns"] = self.started.first_inference_ns
            instances = self.instances()
            if instances is not None:
                out["instances"] = instances
            if self.started.shape_change is not None:
                out["shape_change"] = self.started.shape_change
        if self.accelerator is not None:
            out["accelerator"] = self.accelerator
        if self.warmup_samples_ns is not None:
            out["warmup_samples_ns"] = self.warmup_samples_ns
        if self.telemetry is not None:
            out["telemetry"] = self.telemetry
        if self.window is not None:
            out.update(self.window.timing)
        if self.stages is not None:
            out["stages"] = self.stages
        late = {
            "outputs": self.outputs,
            "outputs_file": self.outputs_file,
            "eval_samples": self.eval_samples,
            "eval_outputs_file": self.eval_outputs_file,
            "peak_rss_kb": self.peak_rss_kb,
            "op_profile": self.op_profile,
        }
        out.update((k, v) for k, v in late.items() if v is not None)
        out.update(self.watched or {})
        if self.generation is not None:
            out["generation"] = asdict(self.generation)
        if self.ok:
            out["status"] = "ok"
        return out

    def instances(self) -> Optional[Dict[str, Any]]:
        """Several instances: their count, mode and resident memory as they loaded and ran,
        and how many took part (finished a timed request, were in flight at once)."""
        if self.started is None or self.started.opened.instances is None:
            return None
        instances = dict(self.started.opened.instances)
        instances["rss_one_running_kb"] = self.started.rss_one_running_kb
        if self.ran is not None and self.window is not None:
            instances["rss_running_kb"] = self.ran.rss_running_kb
            counts = self.window.timing.get("per_stream_counts") or []
            instances["ran"] = sum(1 for c in counts if c)
            instances["at_once"] = self.window.timing.get("at_once")
        return instances


def measure_cell(spec: RunSpec, facts: CellFacts) -> None:
    """Measure the cell of ``spec``, keeping in ``facts`` what each phase returns."""
    try:
        apply_affinity(spec.cores)
    except PinningError as exc:
        raise BackendError("pinning", str(exc)) from exc
    facts.cores_effective = effective_cores()
    if spec.telemetry is None:
        _measure(spec, facts, [])
        return
    telemetry = CellTelemetry(spec.telemetry, spec.cores)
    try:
        with telemetry:  # left after the outputs: the governors are restored then
            _measure(spec, facts, telemetry.window_hooks())
    finally:
        facts.telemetry = telemetry.trace()


def _measure(spec: RunSpec, facts: CellFacts, hooks: Hooks) -> None:
    if spec.generation is not None:
        measure_generation(spec, facts, hooks)
        return
    backend = load_backend(spec.framework, spec.backend)
    facts.framework_version = backend.version()
    root = (spec.telemetry and spec.telemetry.root) or os.environ.get("EDGEBENCH_SYSFS_ROOT")
    declared = discover()[0][spec.framework].watches
    watches = cell_watches(declared, spec.backend, root or "/")  # imports their modules
    # After the framework import, before the model: the model's own footprint is peak - this.
    facts.rss_before_load_kb = rss_kb()
    options = stream_options(spec)
    device_memory = DeviceMemory(spec.backend)
    facts.load_ns = load_model(spec, backend, options)
    model_inputs = backend.model_inputs()
    feeds = prepare_feeds(spec.inputs, model_inputs, spec.model, spec.seed, spec.input_file)
    facts.inputs = feeds.as_json()

    def load_another() -> Backend:
        another = load_backend(spec.framework, spec.backend)
        another.load(spec.model, spec.threads, spec.precision, options)
        return another

    extra: List[Backend] = []
    try:
        with inference_errors("inference"):
            facts.started = start_streams(spec, backend, feeds, model_inputs, load_another)
            streams = facts.started.opened.streams
            extra = facts.started.opened.extra
            facts.accelerator = device_memory.complete(backend.accelerator_report())
            facts.warmup_samples_ns = warm_up(streams, spec.warmup)
            backend_hooks = [h for b in [backend, *extra] for h in b.window_hooks()]
            all_hooks = [*hooks, *backend_hooks, *window_hooks(watches)]
            facts.window = time_window(spec, streams, all_hooks)
            facts.stages = stages_field(spec, streams, facts.window)
            facts.ran = finish_streams(streams, facts.window, facts.started.opened.instances)
    finally:
        for another in extra:
            another.close()

    outputs = facts.ran.outputs
    names = backend.output_names()
    facts.outputs = summarize_outputs(names, outputs)
    if spec.save_outputs:
        save_outputs(spec.save_outputs, names, outputs)
        facts.outputs_file = spec.save_outputs
    if spec.eval_file and spec.save_eval_outputs:
        facts.eval_samples = evaluate(backend, feeds.inputs, spec.eval_file, spec.save_eval_outputs)
        facts.eval_outputs_file = spec.save_eval_outputs
    # Before any profiling instance is loaded: the peak is the measured cell's own.
    facts.peak_rss_kb = peak_rss_kb()
    facts.watched = reports(watches)
    if spec.profile_ops and spec.backend != "cpu":
        facts.op_profile = {"unavailable": ACCELERATOR_OP_PROFILE % spec.backend}
    elif spec.profile_ops:
        facts.op_profile = profile_in_scratch(spec, feeds)
    facts.ok = True
    backend.close()


def profile_in_scratch(spec: RunSpec, feeds: Feeds) -> Dict[str, Any]:
    """Per-operator times from a separate profiling instance, in a scratch folder removed
    afterwards; a profiler failure never costs the cell its timed result."""
    workdir = tempfile.mkdtemp(prefix="edgebench-ops-")
    try:
        return profile_ops(
            spec.framework,
            spec.model,
            spec.threads,
            spec.precision,
            feeds.arrays,
            spec.profile_ops,
            workdir,
        )
    except Exception as exc:
        return {"unavailable": "profiling failed: %s: %s" % (type(exc).__name__, exc)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def stream_options(spec: RunSpec) -> Dict[str, Any]:
    """The backend options: the spec's, with how many streams one load must serve
    (separate instances are N single-stream loads; otherwise one load serves every stream)."""
    options = dict(spec.options)
    separate = spec.instances > 1 and spec.instance_mode == "separate"
    options.setdefault("streams", 1 if separate else spec.concurrency)
    return options


def load_model(spec: RunSpec, backend: Backend, options: Dict[str, Any]) -> int:
    """Load the model; how long it took (ns)."""
    if not os.path.isfile(spec.model):
        raise BackendError("model_load", "model file not found: %s" % spec.model)
    t0 = time.perf_counter_ns()
    backend.load(spec.model, spec.threads, spec.precision, options)
    return time.perf_counter_ns() - t0


def start_streams(
    spec: RunSpec,
    backend: Backend,
    feeds: Feeds,
    model_inputs: List[InputSpec],
    load_another: Callable[[], Backend],
) -> Started:
    """Open the cell's streams and run one inference (after one at the earlier shape and the
    resize, for a shape change)."""
    change_from = spec.shape_change_from
    earlier_ns = 0
    if change_from:
        earlier = resolve_inputs(change_from, model_inputs)
        t0 = time.perf_counter_ns()
        backend.make_stream(make_inputs(earlier, spec.seed))()
        earlier_ns = time.perf_counter_ns() - t0
        backend.reuse_streams()
    t0 = time.perf_counter_ns()
    opened = open_streams(
        spec.instances,
        spec.instance_mode,
        spec.concurrency,
        backend,
        feeds.arrays,
        load_another,
        rss_kb,
    )
    resize_ns = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    opened.streams[0]()
    first_ns = time.perf_counter_ns() - t0
    # All loaded, one has run: the base of the running growth.
    rss_one_running = rss_kb() if opened.instances is not None else None
    if not change_from:
        return Started(opened, first_ns, rss_one_running_kb=rss_one_running)
    shape_change = {"from": change_from, "resize_ns": resize_ns, "first_ns": first_ns}
    return Started(opened, earlier_ns, shape_change, rss_one_running)


def warm_up(streams: Sequence[Callable[[], Any]], count: int) -> List[int]:
    """``count`` untimed-by-the-window inferences on every stream; their times."""
    samples: List[int] = []
    for run in streams:
        for _ in range(count):
            t0 = time.perf_counter_ns()
            run()
            samples.append(time.perf_counter_ns() - t0)
    return samples


def time_window(spec: RunSpec, streams: Sequence[Any], hooks: Hooks) -> TimedWindow:
    limits = WindowLimits(
        spec.iterations,
        int(spec.min_time_s * 1e9),
        spec.max_iterations,
        int(spec.max_time_s * 1e9),
        spec.target_ci,
    )
    staged = bool(spec.stages) and len(streams) == 1 and isinstance(streams[0], Stream)
    return run_window(streams, limits, staged, hooks)


def stages_field(
    spec: RunSpec, streams: Sequence[Any], window: TimedWindow
) -> Optional[Dict[str, Any]]:
    """The result's ``stages``: the window's stage samples, or why there are none."""
    if window.stage_samples is not None:
        return {"samples_ns": window.stage_samples, "boundaries": streams[0].boundaries}
    if not spec.stages:
        return None
    why = "%d streams ran at once; stages are timed with one" % len(streams)
    if len(streams) == 1:
        why = "the %s backend runs an inference as one call" % spec.framework
    return {"unavailable": why}


def finish_streams(
    streams: Sequence[Callable[[], Any]],
    window: TimedWindow,
    instances: Optional[Dict[str, Any]],
) -> Ran:
    """The outputs the check compares: the last timed call's, or one more inference."""
    outputs = window.last_outputs or streams[0]()
    rss_running = rss_kb() if instances is not None else None
    return Ran(list(outputs), rss_running)
