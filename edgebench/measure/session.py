"""`edgebench run`: from the options to a stored run and a printed matrix.

The phases, in order: apply the plan, lock and probe the devices, build the cells, convert,
take the device locks, open (or resume) the run, measure with Ctrl-C handled, print, compare
with the plan's baseline. `cli/run.py` only declares the options.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from edgebench import __version__, process_group
from edgebench.analysis.compare import CellVerdict
from edgebench.converters import ArtifactCache
from edgebench.errors import UserError
from edgebench.lab.device import Device
from edgebench.measure.lab_devices import DeviceSource, LabDevices
from edgebench.measure.methods import Method
from edgebench.measure.output_check import CheckSettings
from edgebench.measure.plan_gate import gate_run
from edgebench.measure.progress import LineProgress
from edgebench.measure.resume import check_same_settings, resume_hint
from edgebench.measure.scheduler import StopRequest, execute_cells, pending_cells
from edgebench.models import BUILTIN_MODELS
from edgebench.paths import cache_dir, default_results_dir
from edgebench.planning.backend_cells import Verdict, no_cell_refusal, no_cells_planned
from edgebench.planning.cells import (
    DEFAULT_FRAMEWORKS,
    Cell,
    auto_rounds,
    build_cells,
    check_frameworks,
    max_iterations,
    resolve_inputs,
    sustained_timing,
    target_ci_fraction,
)
from edgebench.planning.config import RunConfig, TimingConfig
from edgebench.planning.generative import (
    build_generative_cells,
    check_pairs,
    split_frameworks,
    split_models,
    workload_of_sweep,
)
from edgebench.planning.input_checks import check_run_inputs
from edgebench.planning.limits import check_memory
from edgebench.planning.model_precision import precisions_by_model
from edgebench.planning.modelref import ModelRef, parse_shape_overrides, resolve_models
from edgebench.planning.plan_file import Plan, load_plan
from edgebench.planning.prepare import (
    calibration_sets,
    precision_options,
    prepare_cells,
    settle_precisions,
)
from edgebench.planning.unused import warn_unused
from edgebench.planning.variants import base_shapes, breakdown_of, check_sweep_shapes, expand
from edgebench.results.record_warnings import ROUNDS_CUT_SHORT
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore, RunDir, utc_now
from edgebench.statuses import PROBLEMS, Status

#: Signals that end a run like a second Ctrl-C: what is measuring is killed, the run is marked.
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class RunStopped(UserError):
    """A run ended by Ctrl-C or a signal: one line, and the shell's code for that signal
    (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), never the code of a usage error."""

    def __init__(self, message: str, signum: int = signal.SIGINT) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


@dataclass
class Matrix:
    """What the configuration resolves to before any device is measured."""

    model_refs: list[ModelRef]
    framework_names: list[str]
    thread_counts: list[int]
    core_selections: list[str]
    precisions: list[str]
    timing: TimingConfig


class RunOutput(Protocol):
    """Where the session's results are shown: the command line implements it (measure does
    not import reporting)."""

    def record(self, record: Record, output_format: str) -> None:
        """One record as soon as it is stored (called from the device workers' threads)."""

    def records(self, records: list[Record], output_format: str, metric: str) -> None:
        """Every record of the run once it ends (those ``record`` showed already included)."""

    def comparison(
        self, verdicts: list[CellVerdict], plan_name: str, junit: Path | None
    ) -> None: ...


def run_session(
    config: RunConfig,
    output: RunOutput,
    devices: DeviceSource | None = None,
    *,
    precision_chosen: bool = True,
) -> int:
    """Measure, store and show; the exit code is 1 when a cell failed or regressed.

    ``devices`` is where the devices come from: this host's lab unless given (``--cluster``
    passes the cluster's). SIGTERM and SIGHUP end the run as a second Ctrl-C does, from the
    first moment: nothing this run started (a converter, a runner) is left running without it.

    ``precision_chosen``: the command line named the precisions (a plan decides its own); if
    not, a pre-converted model whose file holds a precision runs at that one
    (``planning.model_precision``).
    """

    def on_terminate(signum: int, frame: object) -> None:
        raise process_group.Terminated(signum)

    previous = {sig: signal.signal(sig, on_terminate) for sig in TERMINATING_SIGNALS}
    source = devices or LabDevices()
    try:
        return _run_session(config, output, source, precision_chosen)
    except process_group.Terminated as exc:
        # Before or after measuring (during it, _measure marks the run and says what is kept).
        raise RunStopped(f"terminated by {exc}", exc.signum) from None
    finally:
        source.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_session(
    config: RunConfig, output: RunOutput, source: DeviceSource, precision_chosen: bool
) -> int:
    progress = LineProgress()
    plan = load_plan(config.session.plan) if config.session.plan else None
    if plan is not None:
        config = plan.apply(config)
    elif config.output.junit is not None:
        raise UserError("--junit needs --plan (it reports the comparison with the baseline)")
    warn_unused(config)
    check_run_inputs(config)
    store = ResultsStore(config.output.results_dir or default_results_dir())
    resumed = store.open(config.session.resume) if config.session.resume else None
    if resumed is not None:
        check_same_settings(resumed, config)
    matrix = _resolve_matrix(config)
    refusal = no_cell_refusal(matrix.framework_names, config.sweep.backends)
    if refusal:
        raise UserError(refusal)
    chosen = ("sweep", "precision") in plan.values if plan is not None else precision_chosen
    tensor_models, llm_models = split_models(matrix.model_refs, config.sweep.weights, cache_dir())
    tensor_frameworks, llm_frameworks = split_frameworks(matrix.framework_names)
    check_pairs(tensor_models, llm_models, tensor_frameworks, llm_frameworks, config.sweep)
    by_precision = precisions_by_model(tensor_models, matrix.precisions, chosen)
    check_sweep_shapes(tensor_models, config.sweep.shapes)
    model_inputs = resolve_inputs(
        tensor_models, parse_shape_overrides(base_shapes(config, tensor_models))
    )
    device_list = source.open(config, progress)
    methods = source.methods()

    def availability(device: Device, framework: str) -> Verdict | None:
        return methods[device.name].availability(device, framework)

    base_cells = [
        cell
        for one_precision, models in by_precision
        for cell in build_cells(
            device_list,
            models,
            tensor_frameworks,
            inputs=model_inputs,
            threads=matrix.thread_counts,
            cores=matrix.core_selections,
            concurrency=config.sweep.concurrency,
            precision=one_precision,
            timing=matrix.timing,
            availability=availability,
            telemetry=config.telemetry,
            backends=config.sweep.backends,
            frameworks_chosen=bool(config.sweep.frameworks),
        )
    ]
    base_cells += build_generative_cells(
        device_list,
        llm_models,
        llm_frameworks,
        workload=workload_of_sweep(config.sweep),
        threads=matrix.thread_counts,
        cores=matrix.core_selections,
        timing=matrix.timing,
        availability=availability,
        telemetry=config.telemetry,
    )
    if not base_cells:
        raise UserError(
            no_cells_planned(device_list, matrix.framework_names, config.sweep.backends)
        )
    cells = expand(base_cells, breakdown_of(config), cache_dir())
    warn_unused(config, cells)
    cells = check_memory(cells)
    calibration = calibration_sets(config)
    prepared = prepare_cells(
        cells,
        ArtifactCache(cache_dir() / "artifacts"),
        force=config.checks.force_convert,
        choices={"tflite": config.checks.tflite_converter},
        calibration=calibration,
        report=lambda line: progress.message(f"  {line}"),
    )
    # The precision recorded is the one of the file each cell runs, not the option's.
    cells = settle_precisions(
        prepared.cells, calibration, lambda line: progress.message(f"  {line}")
    )
    progress.message(
        f"conversions: {prepared.conversions} run, "
        f"{sum(1 for c in cells if c.artifact is not None and c.artifact.cached)} cells from cache"
    )
    rounds = config.timing.rounds
    if rounds is None:
        rounds = auto_rounds(cells)
        if rounds > 1:
            progress.message(
                f"interleaving: {rounds} rounds per cell, since frameworks share a device "
                "(--rounds 1 turns it off)"
            )
    cells = source.lock(cells, wait=not config.session.no_wait, progress=progress)
    earlier: list[Record] = []
    if resumed is not None:
        run_dir = resumed
        earlier = run_dir.current_records()
        remaining = pending_cells(cells, earlier)
        progress.message(
            f"resuming {run_dir.run_id}: {len(cells) - len(remaining)} of {len(cells)} cells "
            "already done"
        )
        # Failed attempts are measured again; their old records give way to the new ones.
        retried = {c.cell_id for c in remaining}
        earlier = [r for r in earlier if r.cell_id not in retried]
        cells = remaining
        run_dir.update_metadata(status="running", resumed_at=utc_now())
    else:
        metadata = _run_metadata(config, plan, matrix, rounds, device_list)
        metadata["options"].update(precision_options(cells, matrix.precisions))
        if source.metadata() is not None:
            metadata["cluster"] = source.metadata()
        run_dir = store.create_run(metadata)
    for record in earlier:
        output.record(record, config.output.format)
    source.start_run(run_dir.run_id)
    records = _measure(config, run_dir, cells, device_list, methods, rounds, progress, output)
    records = earlier + records
    output.records(records, config.output.format, config.output.metric)
    failed = any(r.status in PROBLEMS for r in records)
    not_measured = sum(1 for r in records if r.status == Status.FAILED)
    if not_measured:
        progress.message(
            f"{not_measured} cells failed; once the cause is fixed, measure them again with: "
            f"{resume_hint(run_dir)}"
        )
    regressed = False
    if plan is not None:
        regressed = gate_run(config, store, run_dir, records, output, progress)
    run_dir.update_metadata(
        status="complete", finished_at=utc_now(), good=not failed and not regressed
    )
    progress.message(f"stored: {run_dir.path}  (edgebench show {run_dir.run_id})")
    return 1 if failed or regressed else 0


def _resolve_matrix(config: RunConfig) -> Matrix:
    sweep = config.sweep
    return Matrix(
        model_refs=resolve_models(
            sweep.models or list(BUILTIN_MODELS),
            cache_dir(),
            config.checks.reference,
            config.checks.from_tflite,
        ),
        framework_names=check_frameworks(sweep.frameworks or DEFAULT_FRAMEWORKS),
        thread_counts=sweep.threads,
        core_selections=sweep.cores or ["all"],
        precisions=sweep.precision,
        timing=sustained_timing(config.timing),
    )


def _runner_timing(timing: TimingConfig) -> dict[str, Any]:
    """run.json's ``options.timing``: the timing as the runner takes it, in the keys it has
    always had (the settings themselves are under ``config.timing``)."""
    return {
        "warmup": timing.warmup,
        "iterations": timing.iterations,
        "min_time_s": timing.min_time_s,
        "max_time_s": timing.max_time_s,
        "timeout_s": timing.timeout_s,
        "sustained": bool(timing.sustained_s),
        "max_iterations": max_iterations(timing),
        "target_ci": target_ci_fraction(timing),
        "correctness_only": False,
    }


def _run_metadata(
    config: RunConfig,
    plan: Plan | None,
    matrix: Matrix,
    rounds: int,
    device_list: list[Device],
) -> dict:
    return {
        "edgebench_version": __version__,
        "argv": sys.argv[1:],
        "status": "running",
        "plan": plan.name if plan else None,
        "lab": str(config.session.lab) if config.session.lab else None,
        "git_sha": git_sha(),
        "options": {
            "models": [m.source for m in matrix.model_refs],
            "frameworks": matrix.framework_names,
            "threads": matrix.thread_counts,
            "cores": matrix.core_selections,
            "precision": matrix.precisions,
            "backends": config.sweep.backends or None,
            "concurrency": config.sweep.concurrency,
            "rounds": rounds,
            "seed": config.checks.seed,
            "timing": _runner_timing(matrix.timing),
        },
        "config": config.as_dict(),
        "models": {
            m.name: {"source": m.source, "sha256": m.sha256, "error": m.error}
            for m in matrix.model_refs
        },
        "devices": {
            d.name: {"unreachable": d.unreachable} if d.unreachable else d.facts().as_dict()
            for d in device_list
        },
    }


def _measure(
    config: RunConfig,
    run_dir: RunDir,
    cells: list[Cell],
    device_list: list[Device],
    methods: dict[str, Method],
    rounds: int,
    progress: LineProgress,
    output: RunOutput,
) -> list[Record]:
    """Execute the cells with Ctrl-C handled: the first stops between cells, the second (or
    SIGTERM, or SIGHUP) kills what is measuring. Either way the message says how to resume."""
    stop = StopRequest()

    def on_signal(signum: int, frame: object) -> None:
        # Runs in the main thread between any two bytecodes, even inside a lock it holds:
        # only flags, raw writes and a new thread here.
        if stop.aborted:
            return  # already aborting: a third signal must not cut marking the run short
        if signum == signal.SIGINT and not stop.requested:
            stop.requested = True
            progress.message_from_signal_handler(
                "stopping after the cells that are running (Ctrl-C again to abort them)"
            )
            return
        # The second Ctrl-C, or a signal to end: kill what is measuring, store none of it.
        stop.requested = stop.aborted = True
        threading.Thread(target=_abort_devices, args=(device_list,), name="abort").start()
        raise KeyboardInterrupt if signum == signal.SIGINT else process_group.Terminated(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, *TERMINATING_SIGNALS)}
    # Announced only once Ctrl-C is handled: from here a first Ctrl-C finishes the cell.
    progress.message(f"run {run_dir.run_id}: {len(cells)} cells -> {run_dir.path}")
    try:
        checks = CheckSettings.from_config(config.checks, config.quantization)
        records = execute_cells(
            cells,
            device_list,
            run_dir,
            progress,
            checks,
            stop,
            rounds,
            methods,
            on_record=lambda record: output.record(record, config.output.format),
        )
    except KeyboardInterrupt as exc:
        run_dir.update_metadata(status="interrupted", finished_at=utc_now())
        signum = exc.signum if isinstance(exc, process_group.Terminated) else signal.SIGINT
        how = "aborted" if signum == signal.SIGINT else f"terminated by {exc}"
        raise RunStopped(
            f"{how}: {len(run_dir.records())} finished cells are kept in {run_dir.path}; "
            f"resume with: {resume_hint(run_dir)}",
            signum,
        ) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    cut_short = sum(1 for r in records if any(w.is_a(ROUNDS_CUT_SHORT) for w in r.warnings))
    if stop.requested and (len(records) < len(cells) or cut_short):
        run_dir.update_metadata(status="interrupted", finished_at=utc_now())
        pooled = f" ({cut_short} pooled from the rounds that finished)" if cut_short else ""
        raise RunStopped(
            f"stopped: {len(run_dir.records())} finished cells{pooled} are kept in "
            f"{run_dir.path}; resume with: {resume_hint(run_dir)}"
        )
    return records


def _abort_devices(devices: Sequence[Device]) -> None:
    for device in devices:
        device.abort_running()


def git_sha() -> str | None:
    """The commit of the current folder's repository, for run history; None outside git."""
    import subprocess

    try:
        done = process_group.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
