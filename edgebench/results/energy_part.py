"""The record's ``energy`` part: what analysis/energy.py computes from a telemetry trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.results.json_values import JsonObject, RecordPart


def unavailable_flag(why: str) -> str:
    """The energy flag a record carries when it has no energy figure; readers learn that from
    ``EnergyResult.unavailable``, never from the flag's text."""
    return f"energy unavailable: {why}"


@dataclass
class EnergyResult(RecordPart):
    """Energy per inference (mJ, idle power subtracted), mean and active power over the timed
    window, the idle baseline, the window's length, why the figure may mislead (``flags``) or
    why there is none (``unavailable``), temperatures per zone at the window's start and end
    and the hottest, clock range per core, and the energy source's kind."""

    energy_mj_per_inf: float | None = None
    avg_power_w: float | None = None  # mean power over the timed window
    active_power_w: float | None = None  # avg_power_w minus the idle baseline
    baseline_power_w: float | None = None
    window_s: float | None = None
    flags: list[str] = field(default_factory=list)
    unavailable: str | None = None  # why there is no energy figure ("energy unavailable: ...")
    temp_start_c: dict[str, float] = field(default_factory=dict)
    temp_end_c: dict[str, float] = field(default_factory=dict)
    temp_max_c: float | None = None
    freq_min_khz: dict[str, int] = field(default_factory=dict)
    freq_max_khz: dict[str, int] = field(default_factory=dict)
    source: str | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = "energy") -> EnergyResult:
        obj = JsonObject(data, name)
        return cls(
            energy_mj_per_inf=obj.get("energy_mj_per_inf", float),
            avg_power_w=obj.get("avg_power_w", float),
            active_power_w=obj.get("active_power_w", float),
            baseline_power_w=obj.get("baseline_power_w", float),
            window_s=obj.get("window_s", float),
            flags=obj.get("flags", list[str]) or [],
            unavailable=obj.get("unavailable", str),
            temp_start_c=obj.get("temp_start_c", dict[str, float]) or {},
            temp_end_c=obj.get("temp_end_c", dict[str, float]) or {},
            temp_max_c=obj.get("temp_max_c", float),
            freq_min_khz=obj.get("freq_min_khz", dict[str, int]) or {},
            freq_max_khz=obj.get("freq_max_khz", dict[str, int]) or {},
            source=obj.get("source", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "energy_mj_per_inf": self.energy_mj_per_inf,
            "avg_power_w": self.avg_power_w,
            "active_power_w": self.active_power_w,
            "baseline_power_w": self.baseline_power_w,
            "window_s": self.window_s,
            "flags": list(self.flags),
            "unavailable": self.unavailable,
            "temp_start_c": dict(self.temp_start_c),
            "temp_end_c": dict(self.temp_end_c),
            "temp_max_c": self.temp_max_c,
            "freq_min_khz": dict(self.freq_min_khz),
            "freq_max_khz": dict(self.freq_max_khz),
            "source": self.source,
        }
