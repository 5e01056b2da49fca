"""Run planned cells, one worker per device, storing each record the moment its cell ends."""

from __future__ import annotations

import contextlib
import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from edgebench import __version__
from edgebench.analysis.energy import analyze
from edgebench.analysis.statistics import latency_stats, stats_warnings, throughput_ips
from edgebench.analysis.sustained import summarize as summarize_sustained
from edgebench.lab.transports.base import TransportError
from edgebench.measure.native_tool import NativeRunError, run_native_cell
from edgebench.measure.output_check import (
    OutputCheck,
    ReferenceOutputs,
    ReferenceUnavailable,
    check_outputs,
    load_saved_outputs,
)
from edgebench.planning.cells import Cell
from edgebench.planning.config import DEFAULT_TOLERANCE
from edgebench.results.records import Record
from edgebench.results.store import RunDir, utc_now

log = logging.getLogger(__name__)

STDERR_TAIL_CHARS = 2000


class Progress(Protocol):
    def cell_started(self, index: int, total: int, cell: Cell) -> None: ...

    def cell_finished(self, index: int, total: int, cell: Cell, record: Record) -> None: ...


def _kb_to_mb(value: Any) -> float | None:
    return None if value is None else round(float(value) / 1024.0, 3)


def _ns_to_ms(value: Any) -> float | None:
    return None if value is None else float(value) / 1e6


def _artifact_info(cell: Cell) -> dict[str, Any] | None:
    artifact = cell.artifact
    if artifact is None:
        return None
    manifest = artifact.manifest
    return {
        "format": artifact.format,
        "converter": manifest.get("converter"),
        "converter_version": manifest.get("converter_version"),
        "cached": artifact.cached,
        "convert_s": manifest.get("time_s"),
        "files": [{"name": f["name"], "sha256": f["sha256"]} for f in manifest.get("files", [])],
        "path": str(artifact.path),
    }


def _base_record(run_id: str, cell: Cell, status: str) -> Record:
    return Record(
        run_id=run_id,
        cell_id=cell.cell_id,
        device=cell.device.name,
        model=cell.model.name,
        framework=cell.framework,
        precision=cell.precision,
        threads=cell.threads,
        cores=cell.cores_selection,
        status=status,
        concurrency=cell.concurrency,
        model_path=str(cell.model.path) if cell.model.path else None,
        model_sha256=cell.model.sha256,
        inputs=cell.inputs or None,
        device_info={} if cell.device.unreachable else cell.device.facts().as_dict(),
        edgebench_version=__version__,
        artifact=_artifact_info(cell),
    )


def record_from_result(run_id: str, cell: Cell, result: dict[str, Any]) -> Record:
    """Map the runner's raw result onto a record; statistics are recomputed here."""
    error = result.get("error") or {}
    status = result.get("status", "failed")
    if error.get("kind") == "not_installed":
        status = "skipped"
    record = _base_record(run_id, cell, status)
    samples = [int(s) for s in result.get("samples_ns") or []]
    stats = latency_stats(samples) if status == "ok" else None
    record.error = error.get("message")
    record.error_kind = error.get("kind")
    record.framework_version = result.get("framework_version")
    record.cores_effective = result.get("cores_effective")
    record.inputs = result.get("inputs") or record.inputs
    record.samples_ns = samples
    record.n_samples = len(samples)
    record.warmup_samples_ns = [int(s) for s in result.get("warmup_samples_ns") or []]
    record.stop_reason = result.get("stop_reason")
    record.median_ci = result.get("median_ci")
    wall_ns = result.get("measure_wall_ns")
    record.measure_wall_s = None if wall_ns is None else wall_ns / 1e9
    record.latency_ms = stats.as_record() if stats else None
    record.throughput_ips = throughput_ips(len(samples), wall_ns) if stats else None
    record.peak_rss_mb = _kb_to_mb(result.get("peak_rss_kb"))
    record.rss_before_load_mb = _kb_to_mb(result.get("rss_before_load_kb"))
    record.load_ms = _ns_to_ms(result.get("load_ns"))
    record.first_inference_ms = _ns_to_ms(result.get("first_inference_ns"))
    record.outputs = result.get("outputs")
    record.warnings = stats_warnings(stats)
    effective = record.cores_effective
    if cell.cores and effective is not None and sorted(effective) != sorted(cell.cores):
        record.warnings.append(f"asked for cores {cell.cores} but the runner ran on {effective}")
    if status != "ok" and error.get("detail"):
        record.stderr_tail = str(error["detail"])[-STDERR_TAIL_CHARS:]
    if result.get("telemetry") is not None:
        _attach_energy(record, cell, result["telemetry"])
    if cell.timing.sustained and status == "ok":
        summary = summarize_sustained(record.samples_ns, result.get("telemetry"))
        record.sustained = summary.as_dict() if summary else None
    return record


def _attach_energy(record: Record, cell: Cell, trace: dict[str, Any]) -> None:
    settings = cell.telemetry
    profile = getattr(cell.device, "profile", None)
    limit = settings.temp_limit_c if settings and settings.temp_limit_c else None
    if limit is None and profile is not None:
        limit = profile.max_temp_c
    analysis = analyze(
        trace,
        record.n_samples,
        max_freq_khz=cell.device.facts().max_freq_khz,
        pinned_cpus=cell.cores,
        temp_limit_c=limit,
        throttle_fraction=settings.throttle_fraction if settings else 0.85,
    )
    record.telemetry = trace
    record.energy = analysis.as_dict()
    record.energy_mj_per_inf = analysis.energy_mj_per_inf
    record.avg_power_w = analysis.avg_power_w
    record.energy_flags = list(analysis.flags)
    if analysis.unavailable:
        record.energy_flags.append(f"energy unavailable: {analysis.unavailable}")
    cooldown = trace.get("cooldown") or {}
    if cooldown and not cooldown.get("reached"):
        record.energy_flags.append(
            f"cool-down: hottest zone still {cooldown.get('end_c')} C after "
            f"{cooldown.get('waited_s')} s (limit {cooldown.get('limit_c')} C)"
        )
    governor = trace.get("governor") or {}
    record.warnings += [f"governor: {e}" for e in governor.get("errors", [])]
    cpus = ((trace.get("state_before") or {}).get("cpus")) or {}
    slow = sorted({i["governor"] for i in cpus.values() if i.get("governor")} - {"performance"})
    if slow:
        record.warnings.append(
            f"governor {', '.join(slow)} on the pinned cores: clocks may move during the "
            "cell (--set-governor performance where the device allows it)"
        )


@dataclass
class CheckSettings:
    """How outputs are checked against ONNX Runtime."""

    tolerance: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOLERANCE))
    reference: ReferenceOutputs = field(default_factory=ReferenceOutputs)
    seed: int = 0


def _output_check(
    cell: Cell, result_file: Path | None, checks: CheckSettings
) -> OutputCheck | None:
    reference = cell.model.reference
    if reference is None or result_file is None:
        return None
    names, outputs = load_saved_outputs(result_file)
    inputs = cell.inputs or []
    ref_names, ref_outputs = checks.reference.outputs(reference, inputs, checks.seed)

    tolerance = checks.tolerance.get(cell.precision, checks.tolerance["fp32"])
    label = f"onnxruntime {checks.reference.version} on the host"
    return check_outputs(names, outputs, ref_names, ref_outputs, tolerance, label)


def _model_files(cell: Cell) -> list[Path]:
    if cell.artifact is not None:
        return [cell.artifact.path / name for name in cell.artifact.files]
    assert cell.model.path is not None
    return [cell.model.path, *cell.model.companions]


def _measure(run_id: str, cell: Cell, checks: CheckSettings, check_outputs: bool) -> Record:
    device = cell.device
    outputs_at = device.output_path(f"{run_id}-{abs(hash(cell.cell_id)):x}")
    try:
        model_path = device.stage_model(_model_files(cell))
        if getattr(device, "runner_kind", "python") == "native":
            try:
                return run_native_cell(cell, device, model_path, _base_record(run_id, cell, "ok"))
            except NativeRunError as exc:
                record = _base_record(run_id, cell, "failed")
                record.error = str(exc)
                record.error_kind = "native_tool"
                return record
        spec = cell.spec(checks.seed, save_outputs=outputs_at if check_outputs else None)
        spec["model"] = model_path
        outcome = device.run_runner(spec, cell.cores, cell.timeout_s)
    except TransportError as exc:
        record = _base_record(run_id, cell, "failed")
        record.error = str(exc)
        record.error_kind = "transport"
        return record
    try:
        if outcome.result is None:
            record = _base_record(run_id, cell, "failed")
            record.error = outcome.error
            record.error_kind = "runner"
            record.stderr_tail = outcome.command.stderr[-STDERR_TAIL_CHARS:] or None
            return record
        record = record_from_result(run_id, cell, outcome.result)
        if record.status != "ok":
            record.stderr_tail = record.stderr_tail or (
                outcome.command.stderr[-STDERR_TAIL_CHARS:] or None
            )
            return record
        if not check_outputs:
            return record
        try:
            check = _output_check(cell, device.fetch_outputs(outputs_at), checks)
        except (ReferenceUnavailable, TransportError) as exc:
            record.warnings.append(f"no output check: {exc}")
            return record
        if check is None:
            record.warnings.append("no output check: no ONNX reference for this model")
            return record
        record.output_check = check.as_dict()
        if not check.passed:
            record.status = "mismatch"
            record.error = (
                check.problem
                or f"outputs differ from ONNX Runtime: relative error {check.rel_error:.2e} "
                f"> tolerance {check.tolerance:.0e} (max abs diff {check.max_abs_diff:.3g})"
            )
        return record
    finally:
        with contextlib.suppress(TransportError):
            device.discard_outputs(outputs_at)


def run_cell(
    run_id: str, cell: Cell, checks: CheckSettings | None = None, check_outputs: bool = True
) -> Record:
    """One visit of a cell. ``check_outputs`` is off for the later rounds of an interleaved
    cell: the first round has already compared its outputs with ONNX Runtime."""
    checks = checks or CheckSettings()
    started_at = utc_now()
    t0 = time.monotonic()
    if cell.verdict is not None:
        status, kind, reason = cell.verdict
        record = _base_record(run_id, cell, status)
        record.error = reason
        record.error_kind = kind
    else:
        record = _measure(run_id, cell, checks, check_outputs)
    record.started_at = started_at
    record.ended_at = utc_now()
    record.duration_s = round(time.monotonic() - t0, 3)
    return record


#: Waits between attempts when a device's connection drops mid-run (seconds).
RETRY_BACKOFF_S = (1.0, 2.0, 4.0)


def _run_with_retries(
    run_id: str, cell: Cell, checks: CheckSettings, progress: Progress, check_outputs: bool = True
) -> Record:
    """A cell whose transport dropped is retried with backoff; the connection is reopened."""
    record = run_cell(run_id, cell, checks, check_outputs)
    for delay in RETRY_BACKOFF_S:
        if record.error_kind != "transport":
            break
        message = getattr(progress, "message", None)
        if message is not None:
            message(
                f"  {cell.device.name}: connection lost ({record.error}); retrying in {delay:g} s"
            )
        cell.device.transport.close()  # the next command reconnects
        time.sleep(delay)
        record = run_cell(run_id, cell, checks, check_outputs)
    return record


class StopRequest:
    """The first Ctrl-C sets ``requested``: the run stops after the cells that are measuring.
    The second sets ``aborted`` too: those cells are killed and not stored."""

    def __init__(self) -> None:
        self.requested = False
        self.aborted = False


def _round_cell(cell: Cell, rounds: int, round_index: int) -> Cell:
    """The same cell with its sample budget split across ``rounds`` visits: the iterations
    add up to the requested count (each visit at least one), the minimum time is shared."""
    if rounds <= 1:
        return cell
    share, extra = divmod(cell.timing.iterations, rounds)
    timing = replace(
        cell.timing,
        iterations=max(1, share + (1 if round_index < extra else 0)),
        min_time_s=cell.timing.min_time_s / rounds,
    )
    return replace(cell, timing=timing)


def merge_rounds(parts: Sequence[Record]) -> Record:
    """One record from a cell's interleaved rounds: samples pooled, statistics recomputed.

    A round that was not ok decides the status; other details (output check, energy,
    telemetry) come from the first round.
    """
    if len(parts) == 1:
        return parts[0]
    merged = replace(parts[0])
    bad = next((p for p in parts if p.status != "ok"), None)
    merged.rounds = len(parts)
    if bad is not None:
        merged.status, merged.error, merged.error_kind = bad.status, bad.error, bad.error_kind
    samples = [s for p in parts for s in p.samples_ns]
    merged.samples_ns = samples
    merged.n_samples = len(samples)
    merged.warmup_samples_ns = [s for p in parts for s in p.warmup_samples_ns]
    merged.round_p50_ms = [
        round(statistics.median(p.samples_ns) / 1e6, 6) for p in parts if p.samples_ns
    ]
    stats = latency_stats(samples) if samples and merged.status in ("ok", "mismatch") else None
    merged.latency_ms = stats.as_record() if stats else merged.latency_ms
    walls = [p.measure_wall_s for p in parts if p.measure_wall_s]
    merged.measure_wall_s = sum(walls) if walls else None
    if stats and merged.measure_wall_s:
        merged.throughput_ips = len(samples) / merged.measure_wall_s
    merged.peak_rss_mb = max((p.peak_rss_mb or 0.0 for p in parts), default=None) or None
    merged.warnings = list(dict.fromkeys(w for p in parts for w in p.warnings))
    merged.warnings = [w for w in merged.warnings if not w.startswith("only ")]
    merged.warnings += stats_warnings(stats)
    merged.ended_at = parts[-1].ended_at
    merged.duration_s = round(sum(p.duration_s or 0.0 for p in parts), 3)
    return merged


#: Statuses worth measuring again in a later round (a crash or an unsupported op is not).
_REPEATABLE = ("ok", "mismatch")


class _DeviceWorker:
    """Runs one device's cells: in ``rounds`` interleaved visits (A B C A B C ...), a dropped
    connection retried with backoff, and once the device stays gone its other cells failed
    with the reason. A cell's record is stored the moment its last visit ends."""

    def __init__(
        self,
        cells: list[tuple[int, Cell]],
        rounds: int,
        run: RunDir,
        progress: Progress,
        checks: CheckSettings,
        stop: StopRequest | None,
        numbering: Callable[[], int],
        total: int,
    ) -> None:
        self.cells = cells
        self.rounds = rounds
        self.run = run
        self.progress = progress
        self.checks = checks
        self.stop = stop
        self.numbering = numbering
        self.total = total
        #: (error kind, reason) once the device is gone or taken over: its other cells fail.
        self.lost: tuple[str, str] | None = None
        self.results: dict[int, Record] = {}

    def _visit(self, cell: Cell, round_index: int, first: bool) -> Record:
        if self.lost is None and cell.verdict is None:
            holder = cell.device.renew_lock()
            if holder is not None:
                self.lost = (
                    "lock",
                    f"device {cell.device.name}: its lock was taken over ({holder}); "
                    "measuring now would share the device",
                )
        if self.lost is not None and cell.verdict is None:
            kind, reason = self.lost
            return run_cell(self.run.run_id, replace(cell, verdict=("failed", kind, reason)))
        record = _run_with_retries(
            self.run.run_id,
            _round_cell(cell, self.rounds, round_index),
            self.checks,
            self.progress,
            first,
        )
        if record.error_kind == "transport":
            self.lost = ("transport", f"device {cell.device.name} lost: {record.error}")
            if cell.device.device_lock is not None:
                cell.device.device_lock.abandon()
        return record

    def __call__(self) -> None:
        parts: dict[int, list[Record]] = {position: [] for position, _ in self.cells}
        numbers: dict[int, int] = {}
        for round_index in range(self.rounds):
            last_round = round_index == self.rounds - 1
            for position, cell in self.cells:
                done = parts[position]
                if done and (cell.verdict is not None or done[-1].status not in _REPEATABLE):
                    continue  # decided without measuring, or nothing to gain from another visit
                if self.stop is not None and self.stop.requested:
                    return
                if position not in numbers:
                    numbers[position] = self.numbering()
                self.progress.cell_started(numbers[position], self.total, cell)
                done.append(self._visit(cell, round_index, first=not done))
                if self.stop is not None and self.stop.aborted:
                    return  # killed by the second Ctrl-C: not a measurement
                if last_round or done[-1].status not in _REPEATABLE:
                    record = merge_rounds(done)
                    self.run.append(record)
                    self.results[position] = record
                    self.progress.cell_finished(numbers[position], self.total, cell, record)


def execute_cells(
    cells: Sequence[Cell],
    run: RunDir,
    progress: Progress,
    checks: CheckSettings | None = None,
    stop: StopRequest | None = None,
    rounds: int = 1,
) -> list[Record]:
    """Measure ``cells``, one worker per device, devices in parallel.

    With ``rounds`` > 1 each device visits its cells in interleaved rounds and pools the
    samples, so drift in temperature or clocks spreads over every framework instead of
    favouring the first. Each record is appended to the run as soon as its cell is complete.
    Returns the records of this call in plan order; when ``stop`` is requested the remaining
    cells are left for ``--resume``.
    """
    checks = checks or CheckSettings()
    by_device: dict[str, list[tuple[int, Cell]]] = {}
    for position, cell in enumerate(cells):
        by_device.setdefault(cell.device.name, []).append((position, cell))
    counter = iter(range(1, len(cells) + 1))
    counter_lock = threading.Lock()

    def numbering() -> int:
        with counter_lock:
            return next(counter)

    workers = [
        _DeviceWorker(group, rounds, run, progress, checks, stop, numbering, len(cells))
        for group in by_device.values()
    ]
    if len(workers) <= 1:
        for worker in workers:
            worker()
    else:
        # One worker per device: a matrix over N devices takes about as long as the slowest.
        with ThreadPoolExecutor(max_workers=len(workers), thread_name_prefix="device") as pool:
            for future in [pool.submit(worker) for worker in workers]:
                future.result()
    results = {p: r for worker in workers for p, r in worker.results.items()}
    return [results[p] for p in sorted(results)]


#: Statuses that a resumed run does not measure again (failed cells are retried).
DONE_STATUSES = ("ok", "mismatch", "unsupported", "skipped")


def pending_cells(cells: Sequence[Cell], done: Sequence[Record]) -> list[Cell]:
    """The cells of a plan that a stored run has not completed yet."""
    finished = {r.cell_id for r in done if r.status in DONE_STATUSES}
    return [c for c in cells if c.cell_id not in finished]
