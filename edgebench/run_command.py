"""`edgebench run`: from the options to a stored run and a printed matrix.

The phases, in order: apply the plan, lock and probe the devices, build the cells, convert,
take the device locks, open (or resume) the run, measure with Ctrl-C handled, print, compare
with the plan's baseline. cli.py only declares the options.
"""

from __future__ import annotations

import atexit
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import click

from edgebench import __version__
from edgebench.cli_values import positive_ints, print_records, split_values
from edgebench.converters import ArtifactCache
from edgebench.errors import UserError
from edgebench.lab.device import Device
from edgebench.lab.device_lock import DeviceLockFile, LockUnavailable
from edgebench.lab.host_lock import DeviceLock
from edgebench.lab.inventory import probe_device, resolve_devices
from edgebench.lab.lab_file import load_lab
from edgebench.lab.transports.base import TransportError
from edgebench.measure.progress import LineProgress
from edgebench.measure.scheduler import CheckSettings, StopRequest, execute_cells, pending_cells
from edgebench.models import BUILTIN_MODELS
from edgebench.paths import cache_dir, default_results_dir
from edgebench.planning.cells import (
    DEFAULT_FRAMEWORKS,
    Cell,
    TelemetrySettings,
    Timing,
    auto_rounds,
    build_cells,
    check_frameworks,
    resolve_inputs,
)
from edgebench.planning.modelref import ModelRef, parse_shape_overrides, resolve_models
from edgebench.planning.plan_file import Plan, load_plan
from edgebench.planning.prepare import prepare_cells
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore, RunDir, utc_now

#: Host-side device locks of this process; kept referenced so their files stay open until exit.
_HELD_LOCKS: list[DeviceLock] = []
#: How long a run waits for a device another run holds.
LOCK_WAIT_S = 6 * 3600.0
#: A sustained window ends early (stop_reason max_iterations) rather than hold more samples:
#: a sub-millisecond model would otherwise fill the device's memory and the record.
SUSTAINED_MAX_SAMPLES = 2_000_000
#: Beyond the longest cell: a lease renewed before each cell outlives any one cell.
LEASE_MARGIN_S = 300.0


@dataclass
class RunOptions:
    """Every option of `edgebench run`, as click parsed them."""

    devices: tuple[str, ...]
    plan_path: Path | None
    junit: Path | None
    rounds: int | None
    target_ci: float | None
    no_wait: bool
    resume_ref: str | None
    lab_path: Path | None
    models: tuple[str, ...]
    frameworks: tuple[str, ...]
    threads: tuple[str, ...]
    cores: tuple[str, ...]
    precision: str
    warmup: int
    iterations: int
    min_time: float
    max_time: float
    concurrency: int
    shape: tuple[str, ...]
    timeout: float
    seed: int
    reference: Path | None
    tolerance: float
    tolerance_fp16: float
    force_convert: bool
    energy_source: str | None
    baseline_s: float
    telemetry_period: float
    sync_marker: str | None
    cooldown_temp: float | None
    cooldown_max_wait: float
    set_governor: str | None
    sustained: float | None
    temp_limit: float | None
    results_dir: Path | None
    output_format: str
    metric: str


@dataclass
class Matrix:
    """What the options resolve to before any device is measured."""

    model_refs: list[ModelRef]
    framework_names: list[str]
    thread_counts: list[int]
    core_selections: list[str]
    precisions: list[str]
    timing: Timing


def run_matrix(opts: RunOptions) -> int:
    """Measure, store and print; the exit code is 1 when a cell failed or regressed."""
    progress = LineProgress()
    plan = load_plan(opts.plan_path) if opts.plan_path else None
    if plan is not None:
        opts = _with_plan(opts, plan)
    elif opts.junit is not None:
        raise UserError("--junit needs --plan (it reports the comparison with the baseline)")
    matrix = _resolve_matrix(opts, plan)
    model_inputs = resolve_inputs(matrix.model_refs, parse_shape_overrides(opts.shape))
    if opts.devices and not split_values(opts.devices):
        raise UserError("--devices is empty; name at least one device (e.g. --devices local)")
    device_list = resolve_devices(split_values(opts.devices) or ["local"], load_lab(opts.lab_path))
    _connect_devices(device_list, opts, progress)
    cells = [
        cell
        for one_precision in matrix.precisions
        for cell in build_cells(
            device_list,
            matrix.model_refs,
            matrix.framework_names,
            inputs=model_inputs,
            threads=matrix.thread_counts,
            cores=matrix.core_selections,
            concurrency=opts.concurrency,
            precision=one_precision,
            timing=matrix.timing,
            telemetry=_telemetry(opts),
        )
    ]
    conversions = prepare_cells(
        cells,
        ArtifactCache(cache_dir() / "artifacts"),
        force=opts.force_convert,
        report=lambda line: progress.message(f"  {line}"),
    )
    progress.message(
        f"conversions: {conversions} run, "
        f"{sum(1 for c in cells if c.artifact is not None and c.artifact.cached)} cells from cache"
    )
    rounds = opts.rounds
    if rounds is None:
        rounds = auto_rounds(cells)
        if rounds > 1:
            progress.message(
                f"interleaving: {rounds} rounds per cell, since frameworks share a device "
                "(--rounds 1 turns it off)"
            )
    cells = _lock_devices(device_list, cells, wait=not opts.no_wait, progress=progress)
    store = ResultsStore(opts.results_dir or default_results_dir())
    earlier: list[Record] = []
    if opts.resume_ref:
        run_dir = store.open(opts.resume_ref)
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
        run_dir = store.create_run(_run_metadata(opts, plan, matrix, rounds, device_list))
    records = _measure(opts, run_dir, cells, device_list, rounds, progress)
    records = earlier + records
    print_records(records, opts.output_format, opts.metric)
    failed = any(r.status in ("failed", "mismatch") for r in records)
    regressed = False
    if plan is not None:
        regressed = _compare_with_baseline(plan, store, run_dir, records, opts.junit, progress)
    run_dir.update_metadata(
        status="complete", finished_at=utc_now(), good=not failed and not regressed
    )
    progress.message(f"stored: {run_dir.path}  (edgebench show {run_dir.run_id})")
    return 1 if failed or regressed else 0


def _with_plan(opts: RunOptions, plan: Plan) -> RunOptions:
    """The plan decides the matrix; options it leaves out keep their command-line values."""
    timing, telemetry = plan.timing, plan.telemetry
    return replace(
        opts,
        devices=tuple(plan.devices),
        lab_path=plan.lab or opts.lab_path,
        models=tuple(plan.models) or opts.models,
        frameworks=tuple(plan.frameworks) or opts.frameworks,
        threads=tuple(str(t) for t in plan.threads),
        cores=tuple(plan.cores),
        concurrency=plan.concurrency,
        warmup=int(timing.get("warmup", opts.warmup)),
        iterations=int(timing.get("iterations", opts.iterations)),
        min_time=timing.get("min_time", opts.min_time),
        max_time=timing.get("max_time", opts.max_time),
        timeout=timing.get("timeout", opts.timeout),
        energy_source=telemetry.get("energy_source", opts.energy_source),
        baseline_s=float(telemetry.get("baseline_s", opts.baseline_s)),
    )


def _resolve_matrix(opts: RunOptions, plan: Plan | None) -> Matrix:
    timing = Timing(
        opts.warmup,
        opts.iterations,
        opts.min_time,
        opts.max_time,
        opts.timeout,
        max_iterations=max(100_000, opts.iterations),
        target_ci=opts.target_ci / 100 if opts.target_ci else None,
    )
    if opts.sustained:
        # One long continuous window per cell: the way an app session loads the phone.
        s = opts.sustained
        timing = Timing(opts.warmup, 1, s, s + 1.0, opts.timeout + s, True, SUSTAINED_MAX_SAMPLES)
    return Matrix(
        model_refs=resolve_models(
            split_values(opts.models) or list(BUILTIN_MODELS), cache_dir(), opts.reference
        ),
        framework_names=check_frameworks(split_values(opts.frameworks) or DEFAULT_FRAMEWORKS),
        thread_counts=positive_ints(opts.threads, "--threads"),
        # Commas belong to the cpu-list syntax (0,2), so sweeping cores means repeating --cores.
        core_selections=list(dict.fromkeys(c.strip() for c in opts.cores if c.strip())) or ["all"],
        precisions=plan.precisions if plan is not None else [opts.precision],
        timing=timing,
    )


def _telemetry(opts: RunOptions) -> TelemetrySettings:
    return TelemetrySettings(
        energy_source=opts.energy_source,
        period_s=opts.telemetry_period,
        baseline_s=opts.baseline_s,
        sync_marker=opts.sync_marker,
        temp_limit_c=opts.temp_limit,
        cooldown_temp_c=opts.cooldown_temp,
        cooldown_max_wait_s=opts.cooldown_max_wait,
        set_governor=opts.set_governor,
    )


def _connect_devices(device_list: list[Device], opts: RunOptions, progress: LineProgress) -> None:
    """Host-side locks first (held until exit), then each device probed; an unreachable one
    keeps a reason, and its cells are failed with it."""
    for device in device_list:
        # Held until this process exits (the kernel releases flocks then, even on a crash).
        lock = DeviceLock(device.name, device.transport.describe())
        lock.acquire(wait=not opts.no_wait, report=progress.message, timeout_s=LOCK_WAIT_S)
        _HELD_LOCKS.append(lock)
    for device in device_list:
        progress.message(f"device {device.name}: connecting ({device.transport.describe()})")
        device.unreachable = probe_device(device)
        if device.unreachable:
            progress.message(f"  unreachable: {device.unreachable}; its cells are marked failed")
            continue
        facts = device.facts()
        governors = ", ".join(facts.governors) or "unknown"
        progress.message(
            f"device {device.name}: {facts.cpu_model or 'unknown CPU'}, "
            f"{len(facts.cpus)} cpus, governor {governors}, python {facts.python or '?'}"
        )
        if facts.governors and facts.governors != ["performance"]:
            progress.message(
                f"  warning: governor {governors} lets the clock vary between cells; "
                "use `performance` for stable numbers"
            )


def _lock_devices(
    devices: Sequence[Device], cells: list[Cell], *, wait: bool, progress: LineProgress
) -> list[Cell]:
    """Take the lock on each remote device (runs from other hosts wait for it). A device with
    no place for its lock, or that drops while locking, gets its cells failed with the reason."""
    lease_s = max((c.timeout_s for c in cells), default=600.0) + LEASE_MARGIN_S
    for device in devices:
        if device.unreachable or device.transport.kind == "local":
            continue  # the host-side lock covers this machine
        try:
            lock = DeviceLockFile(
                device.name, device.transport, device.work_dir, lease_s, "-", LEASE_MARGIN_S
            )
            lock.acquire(wait=wait, report=progress.message, timeout_s=LOCK_WAIT_S)
        except (LockUnavailable, TransportError) as exc:
            reason = str(exc) if str(exc).startswith("device ") else f"device {device.name}: {exc}"
            progress.message(f"  {reason}; its cells are marked failed")
            cells = [
                replace(c, verdict=("failed", "lock", reason))
                if c.device is device and c.verdict is None
                else c
                for c in cells
            ]
            continue
        device.device_lock = lock
        atexit.register(lock.release)  # also on errors and Ctrl-C; a crash leaves the lease
    return cells


def _run_metadata(
    opts: RunOptions,
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
        "lab": str(opts.lab_path) if opts.lab_path else None,
        "git_sha": git_sha(),
        "options": {
            "models": [m.source for m in matrix.model_refs],
            "frameworks": matrix.framework_names,
            "threads": matrix.thread_counts,
            "cores": matrix.core_selections,
            "precision": matrix.precisions,
            "concurrency": opts.concurrency,
            "rounds": rounds,
            "seed": opts.seed,
            "timing": matrix.timing.__dict__,
        },
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
    opts: RunOptions,
    run_dir: RunDir,
    cells: list[Cell],
    device_list: list[Device],
    rounds: int,
    progress: LineProgress,
) -> list[Record]:
    """Execute the cells with Ctrl-C handled: the first stops between cells, the second kills
    what is measuring. Either way the message says how to resume."""
    stop = StopRequest()
    resume_hint = " ".join(
        shlex.quote(a)
        for a in ["edgebench", *_without_resume(sys.argv[1:]), "--resume", run_dir.run_id]
    )

    def on_interrupt(signum: int, frame: object) -> None:
        # Runs in the main thread between any two bytecodes, even inside a lock it holds:
        # only flags, raw writes and a new thread here.
        if stop.requested:
            # The second Ctrl-C: kill what is measuring on every device, store none of it.
            stop.aborted = True
            threading.Thread(target=_abort_devices, args=(device_list,), name="abort").start()
            raise KeyboardInterrupt
        stop.requested = True
        progress.message_from_signal_handler(
            "stopping after the cells that are running (Ctrl-C again to abort them)"
        )

    previous_handler = signal.signal(signal.SIGINT, on_interrupt)
    for device in device_list:
        if device.device_lock is not None:
            device.device_lock.run_id = run_dir.run_id
            device.renew_lock(force=True)  # the lock names the run from here on
    # Announced only once Ctrl-C is handled: from here a first Ctrl-C finishes the cell.
    progress.message(f"run {run_dir.run_id}: {len(cells)} cells -> {run_dir.path}")
    try:
        checks = CheckSettings(
            tolerance={"fp32": opts.tolerance, "fp16": opts.tolerance_fp16}, seed=opts.seed
        )
        records = execute_cells(cells, run_dir, progress, checks, stop, rounds)
    except KeyboardInterrupt:
        run_dir.update_metadata(status="interrupted", finished_at=utc_now())
        kept = len(run_dir.records())
        raise UserError(
            f"aborted: {kept} finished cells are kept in {run_dir.path}; resume with: {resume_hint}"
        ) from None
    finally:
        signal.signal(signal.SIGINT, previous_handler)
    if stop.requested and len(records) < len(cells):
        run_dir.update_metadata(status="interrupted", finished_at=utc_now())
        raise UserError(
            f"stopped: {len(run_dir.records())} finished cells are kept in {run_dir.path}; "
            f"resume with: {resume_hint}"
        )
    return records


def _abort_devices(devices: Sequence[Device]) -> None:
    for device in devices:
        device.abort_running()


def _compare_with_baseline(
    plan: Plan,
    store: ResultsStore,
    run_dir: RunDir,
    records: list[Record],
    junit: Path | None,
    progress: LineProgress,
) -> bool:
    """Compare with the last good run of the same plan; True when a cell regressed."""
    baseline = next(
        (
            r
            for r in reversed(store.runs())
            if r.run_id != run_dir.run_id
            and r.metadata().get("plan") == plan.name
            and r.metadata().get("good")
        ),
        None,
    )
    if baseline is None:
        progress.message(
            f"plan {plan.name}: no earlier good run to compare with; this is the baseline"
        )
        return False
    from edgebench.analysis.compare import (
        any_regression,
        compare_runs,
        format_comparison,
        junit_xml,
    )

    verdicts = compare_runs(
        baseline.records(),
        records,
        min_effect=plan.min_effect,
        alpha=plan.alpha,
        metric=plan.metric,
    )
    progress.message(f"plan {plan.name}: compared with {baseline.run_id}")
    click.echo(format_comparison(verdicts))
    if junit is not None:
        junit.write_text(junit_xml(verdicts, f"edgebench.{plan.name}"))
        progress.message(f"JUnit XML: {junit}")
    run_dir.update_metadata(baseline=baseline.run_id)
    return any_regression(verdicts)


def _without_resume(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--resume":
            skip = True
            continue
        if arg.startswith("--resume="):
            continue
        out.append(arg)
    return out


def git_sha() -> str | None:
    """The commit of the current folder's repository, for run history; None outside git."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
