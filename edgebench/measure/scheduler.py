"""Run planned cells, one worker per device, storing each record the moment its cell ends."""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Protocol

from edgebench.analysis.statistics import latency_stats, stats_warnings
from edgebench.lab.device import Device
from edgebench.lab.transports.base import TransportError, link_error_reason
from edgebench.measure.fixed_performance import FixedPerformance
from edgebench.measure.methods import Method, Visit, method_for
from edgebench.measure.output_check import CheckSettings
from edgebench.measure.records import failed_record, new_record
from edgebench.measure.retry_backoff import DEFAULT_S, retry_backoff_s
from edgebench.planning.cells import Cell
from edgebench.results.record_warnings import ROUNDS_CUT_SHORT, pool_warnings
from edgebench.results.records import Record, merged_parts
from edgebench.results.store import RunDir, utc_now
from edgebench.statuses import DONE, MEASURED, ErrorKind, Status

log = logging.getLogger(__name__)


class Progress(Protocol):
    def cell_started(self, index: int, total: int, cell: Cell) -> None: ...

    def cell_finished(self, index: int, total: int, cell: Cell, record: Record) -> None: ...


def run_cell(
    run_id: str,
    cell: Cell,
    device: Device | None,
    checks: CheckSettings | None = None,
    check_outputs: bool = True,
    method: Method | None = None,
) -> Record:
    """One visit of a cell on ``device`` (the live device the cell names; None only for a
    cell decided without measuring) through its measurement method. ``check_outputs`` is
    off for the later rounds of an interleaved cell: the first round has already compared
    its outputs with ONNX Runtime."""
    started_at = utc_now()
    t0 = time.monotonic()
    if cell.verdict is not None:
        status, kind, reason = cell.verdict
        record = new_record(run_id, cell, status, error=reason, error_kind=kind)
    else:
        assert device is not None and device.name == cell.device.name, cell.cell_id
        method = method or method_for(device)
        visit = Visit(run_id, checks or CheckSettings(), check_outputs)
        try:
            record = method.visit(cell, device, visit)
        except Exception as exc:  # every cell ends with a record
            kind, reason = unexpected_failure(cell, exc)
            record = failed_record(run_id, cell, kind, reason)
    return replace(
        record,
        started_at=started_at,
        ended_at=utc_now(),
        duration_s=round(time.monotonic() - t0, 3),
    )


def unexpected_failure(cell: Cell, exc: Exception) -> tuple[str, str]:
    """What an exception from measuring a cell means for it: a link that died in a way the
    transport did not translate (EOFError, a reset or closed socket, a timeout) is a transport
    failure, retried and then failing the device's other cells; anything else fails this cell
    as an internal error, its traceback logged with -v."""
    if isinstance(exc, TransportError):
        return ErrorKind.TRANSPORT, str(exc)
    if isinstance(exc, EOFError | OSError):
        return (
            ErrorKind.TRANSPORT,
            f"device {cell.device.name}: connection lost: {link_error_reason(exc)}",
        )
    log.debug("cell %s failed on the host", cell.cell_id, exc_info=exc)
    return (
        ErrorKind.INTERNAL,
        f"edgebench failed on the host: {type(exc).__name__}: {link_error_reason(exc)}",
    )


def lock_taken_over(device: str, holder: str) -> str:
    return (
        f"device {device}: its lock was taken over ({holder}); measuring now would share the device"
    )


def _run_with_retries(
    run_id: str,
    cell: Cell,
    device: Device,
    checks: CheckSettings,
    progress: Progress,
    method: Method,
    check_outputs: bool = True,
    backoff_s: Sequence[float] = DEFAULT_S,
) -> Record:
    """A cell whose transport dropped is retried with backoff (the waits ``backoff_s``); the
    connection is reopened."""
    record = run_cell(run_id, cell, device, checks, check_outputs, method)
    for delay in backoff_s:
        # A cell failed before the run (a device unreachable from the start) has nothing to retry.
        if record.error_kind != ErrorKind.TRANSPORT or cell.verdict is not None:
            break
        message = getattr(progress, "message", None)
        if message is not None:
            message(
                f"  {cell.device.name}: connection lost ({record.error}); retrying in {delay:g} s"
            )
        device.transport.close()  # the next command reconnects
        time.sleep(delay)
        record = run_cell(run_id, cell, device, checks, check_outputs, method)
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
    if rounds <= 1 or cell.software_device:
        return cell
    share, extra = divmod(cell.timing.iterations, rounds)
    timing = replace(
        cell.timing,
        iterations=max(1, share + (1 if round_index < extra else 0)),
        min_time_s=cell.timing.min_time_s / rounds,
    )
    return replace(cell, timing=timing)


def single_visit(cell: Cell, record: Record) -> bool:
    """A cell on a software accelerator is visited once: known from the device's facts when
    planned, or from the record when the runner reports it (a device whose probe lists no
    accelerators): its figure ranks nothing, so more rounds would only cost time."""
    return cell.software_device or record.software_device


def merge_rounds(parts: Sequence[Record]) -> Record:
    """One record from a cell's interleaved rounds: samples pooled, statistics recomputed.

    A round that was not ok decides the status; other details (output check, energy,
    telemetry) come from the first round.
    """
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    bad = next((p for p in parts if p.status != Status.OK), None)
    status, error, error_kind = (
        (bad.status, bad.error, bad.error_kind)
        if bad
        else (first.status, first.error, first.error_kind)
    )
    samples = [s for p in parts for s in p.samples_ns]
    stats = latency_stats(samples) if samples and status in MEASURED else None
    walls = [p.measure_wall_s for p in parts if p.measure_wall_s]
    wall_s = sum(walls) if walls else None
    merged = merged_parts(parts)
    throughput = len(samples) / wall_s if stats and wall_s else first.throughput_ips
    if merged.get("generation") is not None:  # tokens/s: the pooled decode tests' rate
        # (a tool's record has no per-token samples, only the decode tests' walls)
        throughput = merged["generation"].decode_tokens_per_s if status in MEASURED else None
    return replace(
        first,
        rounds=len(parts),
        status=status,
        error=error,
        error_kind=error_kind,
        samples_ns=samples,
        n_samples=len(samples),
        warmup_samples_ns=[s for p in parts for s in p.warmup_samples_ns],
        round_p50_ms=[
            round(statistics.median(p.samples_ns) / 1e6, 6) for p in parts if p.samples_ns
        ],
        latency_ms=stats.as_record() if stats else first.latency_ms,
        measure_wall_s=wall_s,
        throughput_ips=throughput,
        peak_rss_mb=max((p.peak_rss_mb or 0.0 for p in parts), default=None) or None,
        warnings=pool_warnings(
            [p.warnings for p in parts],
            stats_warnings(stats, generative=merged.get("generation") is not None),
        ),
        ended_at=parts[-1].ended_at,
        duration_s=round(sum(p.duration_s or 0.0 for p in parts), 3),
        **merged,
    )


class _DeviceWorker:
    """Runs one device's cells: in ``rounds`` interleaved visits (A B C A B C ...), a dropped
    connection retried with backoff, and once the device stays gone its other cells failed
    with the reason. A cell's record is stored the moment its last visit ends, and nothing
    escapes the worker: an unexpected error fails the device's cells that have no record."""

    def __init__(
        self,
        device: Device,
        cells: list[tuple[int, Cell]],
        rounds: int,
        run: RunDir,
        progress: Progress,
        checks: CheckSettings,
        method: Method,
        stop: StopRequest | None,
        numbering: Callable[[], int],
        total: int,
        on_record: Callable[[Record], None] | None = None,
        backoff_s: Sequence[float] = DEFAULT_S,
    ) -> None:
        self.device = device
        self.cells = cells
        self.backoff_s = backoff_s
        self.rounds = rounds
        self.run = run
        self.progress = progress
        self.checks = checks
        self.method = method
        self.stop = stop
        self.numbering = numbering
        self.total = total
        self.on_record = on_record
        #: (error kind, reason) once the device is gone or taken over: its other cells fail.
        self.lost: tuple[str, str] | None = None
        self.results: dict[int, Record] = {}
        self._numbers: dict[int, int] = {}
        measured = [cell for _, cell in cells if cell.verdict is None]
        self.clocks = FixedPerformance(
            device,
            any(
                cell.telemetry is not None and cell.telemetry.fixed_performance for cell in measured
            ),
            getattr(progress, "message", None),
        )

    def _visit(self, cell: Cell, round_index: int, first: bool) -> Record:
        if self.lost is None and cell.verdict is None:
            holder = self.device.renew_lock()
            if holder is not None:
                self.lost = (ErrorKind.LOCK, lock_taken_over(self.device.name, holder))
        if self.lost is not None and cell.verdict is None:
            kind, reason = self.lost
            return run_cell(
                self.run.run_id, replace(cell, verdict=(Status.FAILED, kind, reason)), None
            )
        record = _run_with_retries(
            self.run.run_id,
            _round_cell(cell, self.rounds, round_index),
            self.device,
            self.checks,
            self.progress,
            self.method,
            first,
            self.backoff_s,
        )
        if record.error_kind == ErrorKind.TRANSPORT:
            self.lost = (ErrorKind.TRANSPORT, f"device {self.device.name} lost: {record.error}")
            self._abandon_lock()
        elif record.error_kind == ErrorKind.LOCK and cell.verdict is None:
            self.lost = (ErrorKind.LOCK, record.error or "device lock lost")
        elif record.error_kind == ErrorKind.HOST_LOST:
            # The lab host that owns the device left the cluster; its actor will not return.
            self.lost = (ErrorKind.HOST_LOST, record.error or "lab host lost")
        return record

    def _abandon_lock(self) -> None:
        if self.device.device_lock is not None:
            self.device.device_lock.abandon()

    def _number(self, position: int) -> int:
        if position not in self._numbers:
            self._numbers[position] = self.numbering()
        return self._numbers[position]

    def _store(self, position: int, cell: Cell, record: Record) -> None:
        if cell.verdict is None:
            record = self.clocks.mark(record)
        self.run.append(record)
        self.results[position] = record
        self.progress.cell_finished(self._number(position), self.total, cell, record)
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception as exc:  # showing a record never stops the run
                log.warning("could not show the record of %s: %s", cell.cell_id, exc)

    def __call__(self) -> None:
        parts: dict[int, list[Record]] = {position: [] for position, _ in self.cells}
        try:
            with self.clocks:  # turned off again however the cells end, Ctrl-C too
                self._visit_all(parts)
        except Exception as exc:  # a device's failure must not end the run
            self._fail_unrecorded(exc)

    def _visit_all(self, parts: dict[int, list[Record]]) -> None:
        for round_index in range(self.rounds):
            last_round = round_index == self.rounds - 1
            for position, cell in self.cells:
                done = parts[position]
                if done and (
                    cell.verdict is not None
                    or single_visit(cell, done[-1])
                    or done[-1].status not in MEASURED
                ):
                    continue  # decided without measuring, or nothing to gain from another visit
                if self.stop is not None and self.stop.requested:
                    self._keep_finished_rounds(parts)
                    return
                self.progress.cell_started(self._number(position), self.total, cell)
                done.append(self._visit(cell, round_index, first=not done))
                if self.stop is not None and self.stop.aborted:
                    return  # killed by the second Ctrl-C: not a measurement
                if last_round or single_visit(cell, done[-1]) or done[-1].status not in MEASURED:
                    self._store(position, cell, merge_rounds(done))

    def _keep_finished_rounds(self, parts: dict[int, list[Record]]) -> None:
        """Ctrl-C between rounds: a cell with finished rounds keeps them, pooled, and says how
        many it has; a cell not visited yet is left for --resume."""
        for position, cell in self.cells:
            done = parts[position]
            if position in self.results or not done:
                continue
            merged = merge_rounds(done)
            record = replace(
                merged,
                rounds=len(done),
                warnings=[
                    *merged.warnings,
                    ROUNDS_CUT_SHORT.make(done=len(done), rounds=self.rounds),
                ],
            )
            self._store(position, cell, record)

    def _fail_unrecorded(self, exc: Exception) -> None:
        """Every cell of this device without a record gets a failed one naming the error."""
        if not self.cells:
            return
        device = self.device
        kind, reason = unexpected_failure(self.cells[0][1], exc)
        if kind == ErrorKind.TRANSPORT:
            if not reason.startswith(f"device {device.name} lost"):
                reason = f"device {device.name} lost: {reason}"
            self._abandon_lock()
        log.debug("device %s: worker failed", device.name, exc_info=exc)
        for position, cell in self.cells:
            if position in self.results:
                continue
            now = utc_now()
            record = replace(
                failed_record(self.run.run_id, cell, kind, reason), started_at=now, ended_at=now
            )
            try:
                self._store(position, cell, record)
            except Exception as again:  # e.g. the results disk is full
                log.warning("could not store the record of %s: %s", cell.cell_id, again)
                self.results[position] = record


def execute_cells(
    cells: Sequence[Cell],
    devices: Sequence[Device],
    run: RunDir,
    progress: Progress,
    checks: CheckSettings | None = None,
    stop: StopRequest | None = None,
    rounds: int = 1,
    methods: dict[str, Method] | None = None,
    on_record: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Measure ``cells`` on ``devices`` (the live devices the cells name), one worker per
    device, devices in parallel.

    With ``rounds`` > 1 each device visits its cells in interleaved rounds and pools the
    samples, so drift in temperature or clocks spreads over every framework instead of
    favouring the first. Each record is appended to the run as soon as its cell is complete.
    ``on_record`` sees each record once it is stored (from the device's worker thread).
    Returns the records of this call in plan order; when ``stop`` is requested the remaining
    cells are left for ``--resume``.
    """
    checks = checks or CheckSettings()
    backoff_s = retry_backoff_s()  # a bad setting is refused before any cell runs
    live = {device.name: device for device in devices}
    by_device: dict[str, list[tuple[int, Cell]]] = {}
    for position, cell in enumerate(cells):
        if cell.device.name not in live:
            raise ValueError(f"cell {cell.cell_id}: device {cell.device.name} is not open")
        by_device.setdefault(cell.device.name, []).append((position, cell))
    counter = iter(range(1, len(cells) + 1))
    counter_lock = threading.Lock()

    def numbering() -> int:
        with counter_lock:
            return next(counter)

    workers = [
        _DeviceWorker(
            live[name],
            group,
            # An emulated device's cells are for the output check: one visit is enough.
            1 if all(cell.correctness_only for _, cell in group) else rounds,
            run,
            progress,
            checks,
            methods[name] if methods and name in methods else method_for(live[name]),
            stop,
            numbering,
            len(cells),
            on_record,
            backoff_s,
        )
        for name, group in by_device.items()
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


def pending_cells(cells: Sequence[Cell], done: Sequence[Record]) -> list[Cell]:
    """The cells of a plan that a stored run has not completed yet."""
    finished = {r.cell_id for r in done if r.status in DONE}
    return [c for c in cells if c.cell_id not in finished]
