"""The record's ``telemetry`` part: the raw trace sampled on the device (``edgebench.telemetry/1``).

The runner's sampler (runners/sampler.py, with the cell's conditions from runners/telemetry.py)
and the device shell loop beside a framework tool or edgebench-native
(measure/native_telemetry.py) write it; analysis/energy.py and analysis/sustained.py read it
as it comes, before the record stores it. Its time series are kept as lists, index for index
with ``t_perf_ns``; docs/energy.md describes the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.results.json_values import RecordPart


@dataclass
class TelemetryTrace(RecordPart):
    """The trace's top-level keys. The two writers leave different keys out (the shell loop
    has no ``samples``, ``t_mono_ns`` or device state) and write them in different orders;
    a trace is stored again with the keys it came with, in their order."""

    schema: str | None = None
    #: The energy source: its kind and how it read, or why there is none.
    source: dict[str, Any] | None = None
    period_s: float | None = None
    samples: int | None = None
    #: Each sample's ``perf_counter_ns`` (the clock of ``marks``) and ``monotonic_ns``.
    t_perf_ns: list[int] = field(default_factory=list)
    t_mono_ns: list[int] | None = None
    #: Per sample; None where a column was never read.
    power_w: list[float | None] | None = None
    energy_j: list[float | None] | None = None
    charging: list[bool | None] | None = None
    #: Sample indices where the energy counter wrapped, and the counter's range.
    wrapped_at: list[int] = field(default_factory=list)
    max_energy_range_j: float | None = None
    #: Per core id and per thermal zone, one value per sample.
    freq_khz: dict[str, list[int | None]] = field(default_factory=dict)
    temp_c: dict[str, list[float | None]] = field(default_factory=dict)
    #: ``window_start`` and ``window_end`` of the timed window, on the ``t_perf_ns`` clock.
    marks: dict[str, int] = field(default_factory=dict)
    truncated: bool | None = None
    sample_cost_us: float | None = None
    #: Idle power before the window: ``power_w`` and the ``samples`` it is the mean of.
    baseline: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    #: Governors, clocks and temperatures read before and after the window.
    state_before: dict[str, Any] | None = None
    state_after: dict[str, Any] | None = None
    #: The cool-down before the cell and the governor set for it, as the runner reports them.
    cooldown: dict[str, Any] | None = None
    governor: dict[str, Any] | None = None
