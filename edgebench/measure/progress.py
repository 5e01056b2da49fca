"""Progress lines on stderr: one per cell, rewritten in place on a terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import TextIO

from edgebench.analysis.metrics import energy_metric
from edgebench.planning.cells import Cell
from edgebench.results.records import Record
from edgebench.statuses import Status
from edgebench.terminal import printable


def describe_cell(cell: Cell) -> str:
    parts = [cell.device.name, cell.model.name, cell.engine, cell.precision]
    parts += [f"{cell.threads}t", f"cores {cell.cores_selection}"]
    if cell.instances > 1:
        parts.append(f"{cell.instances} instances, {cell.instance_mode}")
    elif cell.concurrency != 1:
        parts.append(f"{cell.concurrency} streams")
    if cell.shape_mode:
        parts.append(f"{cell.shape_label}, {cell.shape_mode}")
    return printable(" · ".join(parts))  # a model's file name may hold escapes or line breaks


def describe_outcome(record: Record) -> str:
    if record.status == Status.OK and record.latency_ms:
        lat = record.latency_ms
        shown = [(k, lat[k]) for k in ("p50", "p99") if lat.get(k) is not None]
        if not shown and lat.get("mean") is not None:
            shown = [("avg", lat["mean"])]  # native tools that print no percentiles
        figures = "  ".join(f"{k} {v:.2f} ms" for k, v in shown)
        text = f"ok  {figures}  ({record.n_samples} samples, {record.duration_s:.1f} s)"
        if record.energy_mj_per_inf is not None:
            text += f"  {record.energy_mj_per_inf:.3g} {energy_metric(record.framework).bare_unit}"
        if record.sustained:
            text += f"  [sustained: p50 {record.sustained.latency_change_pct:+.1f}%]"
        if record.warnings:
            text += f"  [{len(record.warnings)} warning{'s' if len(record.warnings) > 1 else ''}]"
        return text
    return printable(f"{record.status}: {record.error or 'no reason given'}")


class LineProgress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()  # device workers report from their own threads

    def cell_started(self, index: int, total: int, cell: Cell) -> None:
        if self.live:
            return self._live_start(index, total, cell)

    def _live_start(self, index: int, total: int, cell: Cell) -> None:
        with self._lock:
            self.stream.write(f"\r\x1b[K[{index}/{total}] {describe_cell(cell)} … ")
            self.stream.flush()

    def cell_finished(self, index: int, total: int, cell: Cell, record: Record) -> None:
        prefix = "\r\x1b[K" if self.live else ""
        line = f"{prefix}[{index}/{total}] {describe_cell(cell)}  {describe_outcome(record)}\n"
        with self._lock:
            self.stream.write(line)
            self.stream.flush()

    def message(self, text: str) -> None:
        with self._lock:
            self.stream.write(printable(text) + "\n")
            self.stream.flush()

    def message_from_signal_handler(self, text: str) -> None:
        """A message from a signal handler: one raw write, no locks. The interrupted thread
        may hold this object's lock or the stream's own; taking either would deadlock."""
        # A stream without a file descriptor gets nothing: the run's last line says it anyway.
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.write(self.stream.fileno(), f"\n{text}\n".encode())
