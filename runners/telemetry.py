"""A cell's telemetry on the device: opened before the model loads, sampled around the window.

``CellTelemetry`` opens the energy source and measures the idle baseline while the process is
as quiet as it will ever be, applies the cell's conditions (governor, cool-down), and hands the
timed loop its hooks: the sampler running, the sync marker, and the window marks, innermost.
Its ``trace`` is the ``edgebench.telemetry/1`` trace of the result line.

The parts: ``energy_sources`` (the sources and their vocabulary), ``sampler`` (the sampling
thread and the idle baseline), ``device_state`` (clocks, governors, temperatures),
``conditions`` (governor, cool-down, marker file) and ``sysfs`` (the reads).

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Any, ContextManager, Dict, Iterator, List, Optional

from .conditions import Governor, cool_down, sync_marker
from .device_state import list_cpus, read_state
from .energy_source import NoneSource, TelemetryUnavailable
from .energy_sources import make_source
from .protocol.spec import TelemetrySpec
from .sampler import Sampler, idle_baseline


class CellTelemetry:
    """Energy source, idle baseline, conditions and the sampler around one cell's window.

    Use it as a context manager around the whole cell (from before the load to after the
    outputs): leaving it restores the governors.
    """

    def __init__(self, settings: TelemetrySpec, cores: Optional[List[int]]) -> None:
        self.settings = settings
        self.root = settings.root or os.environ.get("EDGEBENCH_SYSFS_ROOT") or "/"
        self.zones = settings.zones or None
        self.cores = cores
        self.baseline: Optional[Dict[str, Any]] = None
        self.cooldown: Optional[Dict[str, Any]] = None
        self.governor: Optional[Governor] = None
        self.before: Optional[Dict[str, Any]] = None
        self.window_trace: Optional[Dict[str, Any]] = None
        self._sampler: Optional[Sampler] = None
        self._stack = ExitStack()
        try:
            self.source = make_source(settings.energy_source, self.root)
        except TelemetryUnavailable as exc:
            self.source = NoneSource({settings.energy_source: str(exc)})

    def __enter__(self) -> CellTelemetry:
        try:
            self._prepare()
        except BaseException:
            self._stack.close()  # a governor already set is restored
            raise
        return self

    def _prepare(self) -> None:
        settings = self.settings
        if settings.baseline_s > 0 and self.source.kind != "none":
            self.baseline = idle_baseline(self.source, settings.baseline_s, settings.period_s)
        if settings.set_governor:
            cpus = list(self.cores) if self.cores else list_cpus(self.root)
            self.governor = self._stack.enter_context(
                Governor(self.root, cpus, settings.set_governor)
            )
        if settings.cooldown_temp_c is not None:
            self.cooldown = cool_down(
                self.root, self.zones, settings.cooldown_temp_c, settings.cooldown_max_wait_s
            )
        self.before = read_state(self.root, self.cores, self.zones)

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stack.close()
        finally:
            self.source.close()  # a tegrastats child stops here

    def window_hooks(self) -> List[ContextManager[Any]]:
        """The timed-region hooks, outermost first."""
        hooks: List[ContextManager[Any]] = [self._sampling()]
        if self.settings.sync_marker:
            hooks.append(sync_marker(self.settings.sync_marker))
        hooks.append(self._window_marks())
        return hooks

    @contextmanager
    def _sampling(self) -> Iterator[None]:
        self._sampler = Sampler(
            self.source,
            self.settings.period_s,
            self.cores,
            self.zones,
            self.root,
            baseline=self.baseline,
        ).start()
        try:
            yield
        finally:
            trace = self._sampler.stop()
            trace["state_before"] = self.before
            trace["state_after"] = read_state(self.root, self.cores, self.zones)
            self.window_trace = trace

    @contextmanager
    def _window_marks(self) -> Iterator[None]:
        assert self._sampler is not None, "the sampling hook comes first"
        self._sampler.mark("window_start")
        try:
            yield
        finally:
            self._sampler.mark("window_end")

    def trace(self) -> Optional[Dict[str, Any]]:
        """The window's trace with the cell's conditions; None when no window ran."""
        if self.window_trace is None:
            return None
        trace = dict(self.window_trace)
        trace["cooldown"] = self.cooldown
        trace["governor"] = self.governor.report if self.governor is not None else None
        return trace
