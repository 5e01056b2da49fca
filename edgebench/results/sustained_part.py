"""The record's ``sustained`` part: what analysis/sustained.py summarizes of a long window."""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.results.json_values import RecordPart


@dataclass
class SustainedSummary(RecordPart):
    """First vs last tenth of the timed window: median latency, mean power (None without a
    power trace) and the hottest thermal zone's peak (None without temperatures). Stored
    with each field as a key."""

    seconds: float
    first_p50_ms: float
    last_p50_ms: float
    #: Change of the median from the first to the last tenth, in percent.
    latency_change_pct: float = 0.0
    first_power_w: float | None = None
    last_power_w: float | None = None
    power_change_pct: float | None = None
    first_temp_c: float | None = None
    last_temp_c: float | None = None

    def describe(self) -> str:
        text = (
            f"sustained {self.seconds:.0f} s: p50 {self.first_p50_ms:.2f} -> "
            f"{self.last_p50_ms:.2f} ms ({self.latency_change_pct:+.1f}%)"
        )
        if self.first_power_w is not None and self.last_power_w is not None:
            text += (
                f", power {self.first_power_w:.2f} -> {self.last_power_w:.2f} W "
                f"({self.power_change_pct:+.1f}%)"
            )
        if self.first_temp_c is not None and self.last_temp_c is not None:
            text += f", hottest zone {self.first_temp_c:.1f} -> {self.last_temp_c:.1f} C"
        return text
