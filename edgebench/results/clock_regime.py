"""The clock regime a cell ran in: what held its clocks where they were.

Two latencies measured under different regimes (the performance governor against schedutil,
Android's fixed-performance mode on against off, a Jetson in MAXN against 15W or with its clocks
locked) differ for reasons that are not the software's. ``compare``, the nightly gate and the
change-point detector read ``clock_regime(record)`` and never mix regimes without saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.results.records import Record


@dataclass(frozen=True)
class ClockRegime:
    """What the record says about its clocks; None where it says nothing."""

    #: The pinned cores' cpufreq governors (sorted, joined by ",").
    governors: str | None = None
    #: Jetson: nvpmodel's power mode and whether jetson_clocks locked the clocks.
    power_mode: str | None = None
    clocks_locked: bool | None = None

    def label(self) -> str:
        """A short stable text of the regime ("" when nothing is known), e.g.
        ``governor=performance power_mode=MAXN clocks=locked``."""
        parts = []
        if self.governors:
            parts.append(f"governor={self.governors}")
        if self.power_mode:
            parts.append(f"power_mode={self.power_mode}")
        if self.clocks_locked is not None:
            parts.append(f"clocks={'locked' if self.clocks_locked else 'free'}")
        return " ".join(parts)


def _governors(record: Record) -> str | None:
    trace = record.telemetry
    state = (trace.state_before if trace is not None else None) or {}
    cpus = state.get("cpus") if isinstance(state, dict) else None
    found = set()
    if isinstance(cpus, dict):
        found = {
            str(info["governor"])
            for info in cpus.values()
            if isinstance(info, dict) and info.get("governor")
        }
    if not found:
        listed = (record.device_info or {}).get("governors")
        if isinstance(listed, list):
            found = {str(g) for g in listed if g}
    return ",".join(sorted(found)) or None


def clock_regime(record: Record) -> ClockRegime:
    nvidia = record.nvidia
    return ClockRegime(
        governors=_governors(record),
        power_mode=nvidia.power_mode if nvidia is not None else None,
        clocks_locked=nvidia.clocks_locked if nvidia is not None else None,
    )
