"""The clock regime a cell ran in: what held its clocks where they were.

Two latencies measured under different regimes (the performance governor against schedutil,
Android's fixed-performance mode on against off, a policy cap of 1.8 GHz against 2.4 GHz, a
Jetson in MAXN against 15W or with its clocks locked) differ for reasons that are not the
software's. ``compare``, the nightly gate and the change-point detector read
``clock_regime(record)`` and never mix regimes without saying so: ``differences`` says what
differs in words, ``label`` is its short text for people, and ``to_json``/``from_json`` are the
data the results index stores. docs/clock-regime.md says where each part comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgebench.results.records import Record


@dataclass(frozen=True)
class CoreLimits:
    """Pinned cores that share one cpufreq policy's limits (scaling_min/max_freq, kHz)."""

    cpus: tuple[int, ...]
    min_khz: int | None
    max_khz: int | None


@dataclass(frozen=True)
class ClockRegime:
    """What the record says about its clocks; None (or no limits) where it says nothing."""

    #: The pinned cores' cpufreq governors (sorted, joined by ",").
    governors: str | None = None
    #: Android's fixed-performance mode: on (edgebench set it), off, None where unknown.
    fixed_performance: bool | None = None
    #: The pinned cores' policy limits before the window, cores of equal limits together.
    limits: tuple[CoreLimits, ...] = ()
    #: Jetson: nvpmodel's power mode and whether jetson_clocks locked the clocks.
    power_mode: str | None = None
    clocks_locked: bool | None = None

    def label(self) -> str:
        """A short stable text of the regime ("" when nothing is known), e.g.
        ``governor=performance fixed_perf=on limits=cpu4-7:600-2400 power_mode=MAXN
        clocks=locked`` (limits in MHz)."""
        parts = []
        if self.governors:
            parts.append(f"governor={self.governors}")
        if self.fixed_performance is not None:
            parts.append(f"fixed_perf={_on_off(self.fixed_performance)}")
        if self.limits:
            groups = [
                f"{cpu_ranges(g.cpus)}:{_mhz(g.min_khz)}-{_mhz(g.max_khz)}" for g in self.limits
            ]
            parts.append("limits=" + ",".join(groups))
        if self.power_mode:
            parts.append(f"power_mode={self.power_mode}")
        if self.clocks_locked is not None:
            parts.append(f"clocks={'locked' if self.clocks_locked else 'free'}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The regime as the results index stores it (``from_json`` reads it back)."""
        return {
            "governors": self.governors,
            "fixed_performance": self.fixed_performance,
            "limits": [
                {"cpus": list(g.cpus), "min_khz": g.min_khz, "max_khz": g.max_khz}
                for g in self.limits
            ],
            "power_mode": self.power_mode,
            "clocks_locked": self.clocks_locked,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClockRegime:
        """The regime ``to_json`` wrote; a part of another type reads as unknown, and keys it
        does not know are skipped (a newer version's still reads)."""
        limits = []
        for group in data.get("limits") or []:
            cpus = group.get("cpus") if isinstance(group, Mapping) else None
            if isinstance(cpus, list) and all(_is_int(c) for c in cpus):
                low, high = group.get("min_khz"), group.get("max_khz")
                limits.append(
                    CoreLimits(
                        tuple(cpus), low if _is_int(low) else None, high if _is_int(high) else None
                    )
                )
        return cls(
            governors=_text_or_none(data.get("governors")),
            fixed_performance=_bool_or_none(data.get("fixed_performance")),
            limits=tuple(limits),
            power_mode=_text_or_none(data.get("power_mode")),
            clocks_locked=_bool_or_none(data.get("clocks_locked")),
        )

    def differences(self, other: ClockRegime) -> list[str]:
        """What differs from this regime (the base) to ``other`` (the new one), in words:
        ``governor schedutil -> performance``, ``fixed-performance off -> on``, ``max freq
        1.8 -> 2.4 GHz on cpu4-7``, ``power mode 15W -> MAXN``. A part one side does not
        know (an older record, a device without it) is not a difference."""
        found = []
        if self.governors and other.governors and self.governors != other.governors:
            found.append(f"governor {self.governors} -> {other.governors}")
        pair = (self.fixed_performance, other.fixed_performance)
        if None not in pair and pair[0] != pair[1]:
            found.append(f"fixed-performance {_on_off(pair[0])} -> {_on_off(pair[1])}")
        found += _limit_changes(self.limits, other.limits)
        if self.power_mode and other.power_mode and self.power_mode != other.power_mode:
            found.append(f"power mode {self.power_mode} -> {other.power_mode}")
        locks = (self.clocks_locked, other.clocks_locked)
        if None not in locks and locks[0] != locks[1]:
            said = ["locked" if lock else "free" for lock in locks]
            found.append(f"clocks {said[0]} -> {said[1]} (jetson_clocks)")
        return found


def clock_regime(record: Record) -> ClockRegime:
    nvidia = record.nvidia
    trace = record.telemetry
    state = trace.state_before if trace is not None else None
    return ClockRegime(
        governors=_governors(state) or _listed_governors(record),
        fixed_performance=record.fixed_performance,
        limits=core_limits(state),
        power_mode=nvidia.power_mode if nvidia is not None else None,
        clocks_locked=nvidia.clocks_locked if nvidia is not None else None,
    )


def state_regime(state: Mapping[str, Any] | None) -> ClockRegime:
    """The governors and limits of one ``state_before``/``state_after`` snapshot."""
    return ClockRegime(governors=_governors(state), limits=core_limits(state))


def limits_moved(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """What changed in the pinned cores' governors and limits between the snapshots before
    and after the window (a thermal cap lowering scaling_max_freq, a daemon switching the
    governor), in ``differences``' words."""
    if not before or not after:
        return []
    return state_regime(before).differences(state_regime(after))


def cpu_ranges(cpus: Sequence[int]) -> str:
    """``cpu0-3,6``: core ids with runs of consecutive ids shortened."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return "cpu" + ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def core_limits(state: Mapping[str, Any] | None) -> tuple[CoreLimits, ...]:
    """The cores of a snapshot grouped by their (scaling_min_khz, scaling_max_khz)."""
    cpus = _cpus(state)
    groups: dict[tuple[int | None, int | None], list[int]] = {}
    for name, info in cpus.items():
        low, high = _khz(info.get("scaling_min_khz")), _khz(info.get("scaling_max_khz"))
        if name.isdigit() and (low is not None or high is not None):
            groups.setdefault((low, high), []).append(int(name))
    ordered = sorted(groups.items(), key=lambda item: min(item[1]))
    return tuple(CoreLimits(tuple(sorted(c)), low, high) for (low, high), c in ordered)


def _cpus(state: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    cpus = state.get("cpus") if isinstance(state, Mapping) else None
    if not isinstance(cpus, dict):
        return {}
    return {str(k): v for k, v in cpus.items() if isinstance(v, dict)}


def _governors(state: Mapping[str, Any] | None) -> str | None:
    found = {str(info["governor"]) for info in _cpus(state).values() if info.get("governor")}
    return ",".join(sorted(found)) or None


def _listed_governors(record: Record) -> str | None:
    """The probe's governors of every core, for a record without a snapshot."""
    listed = (record.device_info or {}).get("governors")
    if not isinstance(listed, list):
        return None
    return ",".join(sorted({str(g) for g in listed if g})) or None


def _khz(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _on_off(value: bool | None) -> str:
    return "on" if value else "off"


def _mhz(khz: int | None) -> str:
    return "?" if khz is None else f"{khz / 1000:g}"


def _ghz(khz: int | None) -> str:
    return "?" if khz is None else f"{khz / 1e6:.4g}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _limit_changes(base: Sequence[CoreLimits], new: Sequence[CoreLimits]) -> list[str]:
    """``max freq 1.8 -> 2.4 GHz on cpu4-7`` for the cores both sides know."""
    found = []
    bound: Callable[[CoreLimits], int | None]
    for name, bound in (("min", lambda g: g.min_khz), ("max", lambda g: g.max_khz)):
        before = {cpu: bound(g) for g in base for cpu in g.cpus}
        after = {cpu: bound(g) for g in new for cpu in g.cpus}
        moved: dict[tuple[int, int], list[int]] = {}
        for cpu in sorted(before.keys() & after.keys()):
            old, now = before[cpu], after[cpu]
            if old is not None and now is not None and old != now:
                moved.setdefault((old, now), []).append(cpu)
        for (old, now), cpus in moved.items():
            found.append(f"{name} freq {_ghz(old)} -> {_ghz(now)} GHz on {cpu_ranges(cpus)}")
    return found
