"""Telemetry beside a native benchmark binary: a shell loop on the device, parsed on the host.

Devices without Python cannot run the runner's sampler thread, so a POSIX shell loop (toybox
and busybox have every command it uses) reads the energy source, the pinned cores' frequency
and the thermal zones every period into a file, next to the tool. The host pulls that file
and turns it into the same ``edgebench.telemetry/1`` trace the Python runner produces.

The pinned cores' governors and frequency limits are read once before the tool starts and once
after it ends (``state_before``/``state_after``, as the Python runner reads them around its
window), for the record's clock regime.

Native tools time model load, warm-up and the loop together, so the window is the tool's whole
run; energy per inference is then (mean window power - idle baseline) x the tool's average
latency, and the record says so in a flag.
"""

from __future__ import annotations

import itertools
import posixpath
from dataclasses import dataclass, field
from typing import Any

from edgebench.lab.transports.base import Transport, quote_argv
from edgebench.runners.protocol.telemetry import (
    TRACE_SCHEMA,
    UNIT_SCALE,
    detect_current_unit,
    detect_voltage_unit,
)

SUPPORTED = ("android_fuel_gauge", "rapl", "none")
# Every sysfs path is read under $EDGEBENCH_SYSFS_ROOT when the device's environment sets it
# (the test suite's emulated phone keeps a synthetic sysfs tree there), else under /.
_ROOT = 'R="${EDGEBENCH_SYSFS_ROOT:-}"; '


def _existing(transport: Transport, paths: list[str]) -> list[str]:
    found = transport.shell(
        _ROOT
        + " ".join(f'[ -e "$R"{quote_argv([p])} ] && echo {quote_argv([p])};' for p in paths)
        + " true",
        timeout=30,
    ).stdout
    return [line.strip() for line in found.splitlines() if line.strip()]


_BATTERY = "/sys/class/power_supply/battery"
_RAPL = "/sys/class/powercap/intel-rapl:0"
MAX_SAMPLES = 100_000


@dataclass
class ShellSampler:
    """Which device files the loop reads, in order, and what each one means."""

    source: str
    files: list[tuple[str, str]] = field(default_factory=list)  # (role, device path)
    #: The pinned cores whose clock state is read before and after the tool (empty: all).
    cpus: list[int] = field(default_factory=list)
    max_energy_range_j: float | None = None
    problem: str | None = None

    def paths(self) -> list[str]:
        return [path for _, path in self.files]


def plan_sampler(
    transport: Transport, source: str, cpus: list[int], zone_types: list[str]
) -> ShellSampler:
    """Pick the files to sample; the energy source must exist on the device."""
    present = _existing(transport, [f"{_BATTERY}/current_now", f"{_RAPL}/energy_uj"])
    if source == "auto":
        if f"{_BATTERY}/current_now" in present:
            source = "android_fuel_gauge"
        elif f"{_RAPL}/energy_uj" in present:
            source = "rapl"
        else:
            source = "none"
    sampler = ShellSampler(source, cpus=list(cpus))
    needed = {"android_fuel_gauge": f"{_BATTERY}/current_now", "rapl": f"{_RAPL}/energy_uj"}
    if source in needed and needed[source] not in present:
        sampler.problem = f"{source}: {needed[source]} is missing on the device"
        sampler.source = source = "none"
    if source == "android_fuel_gauge":
        sampler.files += [
            ("current", f"{_BATTERY}/current_now"),
            ("voltage", f"{_BATTERY}/voltage_now"),
            ("status", f"{_BATTERY}/status"),
            ("usb_online", "/sys/class/power_supply/usb/online"),
        ]
    elif source == "rapl":
        limit = transport.shell(
            _ROOT + f'cat "$R"{quote_argv([_RAPL + "/max_energy_range_uj"])} 2>/dev/null; true',
            timeout=30,
        ).stdout
        sampler.max_energy_range_j = int(limit) / 1e6 if limit and limit.strip().isdigit() else None
        sampler.files.append(("energy_uj", f"{_RAPL}/energy_uj"))
    elif source != "none":
        sampler.problem = f"{source} is not sampled beside native tools yet"
        sampler.source = "none"
    for cpu in cpus:
        path = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
        sampler.files.append((f"freq:{cpu}", path))
    listing = transport.shell(
        _ROOT + 'for z in "$R"/sys/class/thermal/thermal_zone*; do '
        'echo "${z#"$R"} $(cat "$z/type" 2>/dev/null)"; done',
        timeout=30,
    ).stdout
    for line in listing.splitlines():
        folder, _, kind = line.strip().partition(" ")
        if kind and (not zone_types or kind in zone_types) and "*" not in folder:
            sampler.files.append((f"temp:{kind}", f"{folder}/temp"))
    return sampler


#: cpufreq attributes of the clock-state snapshot, and the keys ``read_state`` gives them.
_STATE_KEYS = {
    "scaling_governor": "governor",
    "scaling_cur_freq": "cur_khz",
    "cpuinfo_max_freq": "max_khz",
    "cpuinfo_min_freq": "min_khz",
    "scaling_max_freq": "scaling_max_khz",
    "scaling_min_freq": "scaling_min_khz",
}
_CPU_DIR = "/sys/devices/system/cpu"


def _state_snapshot(cpus: list[int], path: str) -> str:
    """A shell line writing each core's governor, frequency and limits to ``path``: a ``cpu
    N`` line, then one ``attribute value`` line per cpufreq attribute (NA when unreadable)."""
    folders = (
        " ".join(f'"$R"{_CPU_DIR}/cpu{cpu}' for cpu in cpus)
        if cpus
        else f'"$R"{_CPU_DIR}/cpu[0-9]*'
    )
    return (
        f'( {_ROOT}for d in {folders}; do [ -d "$d/cpufreq" ] || continue; '
        'echo "cpu ${d##*/cpu}"; '
        f"for a in {' '.join(_STATE_KEYS)}; do "
        'v=$(cat "$d/cpufreq/$a" 2>/dev/null); echo "$a ${v:-NA}"; done; done ) '
        f"> {quote_argv([path])} 2>/dev/null; "
    )


def parse_state(text: str) -> dict[str, Any] | None:
    """The snapshot file as ``read_state``'s ``{"cpus": {id: {...}}}``; None when empty."""
    cpus: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "cpu" and value.isdigit():
            current = cpus.setdefault(value, dict.fromkeys(_STATE_KEYS.values()))
        elif current is not None and name in _STATE_KEYS and value != "NA":
            key = _STATE_KEYS[name]
            current[key] = value if key == "governor" else _whole(value)
    return {"cpus": cpus} if cpus else None


def _whole(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def wrap_command(
    tool_command: str,
    sampler: ShellSampler,
    work: str,
    *,
    period_s: float,
    baseline_s: float,
    sync_marker: str | None,
    tool_marks_window: bool = False,
) -> str:
    """The tool's shell line with the sampling loop started before it and stopped after.

    With ``tool_marks_window`` the tool itself writes the window marks (edgebench-native marks
    its timed loop, so load and warm-up stay outside the window) and the sync marker."""
    trace, marks, stop, before, after = (
        posixpath.join(work, n)
        for n in ("trace.txt", "marks.txt", "stop", "state_before.txt", "state_after.txt")
    )
    reads = " ".join(quote_argv([p]) for p in sampler.paths()) or "''"
    loop = (
        _ROOT + f"n=0; while [ ! -e {quote_argv([stop])} ] && [ $n -lt {MAX_SAMPLES} ]; do "
        'echo "t $(date +%s%N)"; '
        f'for f in {reads}; do v=$(cat "$R$f" 2>/dev/null); echo "${{v:-NA}}"; done; '
        f"sleep {period_s:g}; n=$((n+1)); done"
    )
    marker_on = f"echo $$ > {quote_argv([sync_marker])}; " if sync_marker else ""
    marker_off = f"rm -f {quote_argv([sync_marker])}; " if sync_marker else ""
    start = f'{marker_on}echo "window_start $(date +%s%N)" > {quote_argv([marks])}; '
    end = f'echo "window_end $(date +%s%N)" >> {quote_argv([marks])}; {marker_off}'
    if tool_marks_window:
        start = end = ""
    # The clean-up runs to its end before the loop starts in the background: were it part of
    # the background job, a slow rm could delete the window marks, or the stop file after the
    # tool had finished, and the loop would then run to MAX_SAMPLES.
    return (
        f"mkdir -p {quote_argv([work])} && "
        f"rm -f {quote_argv([trace, marks, stop, before, after])} || exit 1; "
        f"( {loop} ) > {quote_argv([trace])} 2>/dev/null & loop=$!; "
        f"sleep {baseline_s:g}; {_state_snapshot(sampler.cpus, before)}"
        f"{start}( {tool_command} ); rc=$?; {end}{_state_snapshot(sampler.cpus, after)}"
        f"touch {quote_argv([stop])}; wait $loop; exit $rc"
    )


def read_trace(
    transport: Transport, sampler: ShellSampler, work: str, period_s: float
) -> dict[str, Any]:
    """The files the wrapped command left in ``work``, read in one round trip, as a trace."""
    names = ("trace.txt", "marks.txt", "state_before.txt", "state_after.txt")
    paths = [posixpath.join(work, name) for name in names]
    files = transport.read_many(paths)
    trace, marks, before, after = (files[path] or "" for path in paths)
    return build_trace(sampler, trace, marks, period_s, states=(before, after))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def build_trace(
    sampler: ShellSampler,
    trace_text: str,
    marks_text: str,
    period_s: float,
    states: tuple[str, str] = ("", ""),
) -> dict[str, Any]:
    """Parse the loop's file into an ``edgebench.telemetry/1`` trace; ``states`` are the
    clock-state snapshots' files, before and after the tool."""
    roles = [role for role, _ in sampler.files]
    rows: list[tuple[int, dict[str, str]]] = []
    lines = trace_text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("t ") and _number(line[2:]) is not None:
            values = lines[index + 1 : index + 1 + len(roles)]
            if len(values) == len(roles):
                rows.append((int(line[2:]), dict(zip(roles, values, strict=True))))
            index += 1 + len(roles)
        else:
            index += 1
    marks = {}
    for line in marks_text.splitlines():
        name, _, value = line.partition(" ")
        if _number(value) is not None:
            marks[name] = int(value)
    ts = [t for t, _ in rows]
    trace: dict[str, Any] = {
        "schema": TRACE_SCHEMA,
        "source": {"kind": sampler.source, "sampled_by": "device shell loop"},
        "period_s": period_s,
        "t_perf_ns": ts,
        "marks": marks,
        "power_w": None,
        "energy_j": None,
        "charging": None,
        "wrapped_at": [],
        "max_energy_range_j": sampler.max_energy_range_j,
        "freq_khz": {},
        "temp_c": {},
        "errors": [sampler.problem] if sampler.problem else [],
    }
    if sampler.problem:
        trace["source"]["reason"] = sampler.problem
    if sampler.source == "android_fuel_gauge":
        _fuel_gauge(trace, rows)
    elif sampler.source == "rapl":
        energy = [_number(v["energy_uj"]) for _, v in rows]
        trace["energy_j"] = [None if e is None else e / 1e6 for e in energy]
        trace["wrapped_at"] = [
            i
            for i, (before, after) in enumerate(itertools.pairwise(energy), start=1)
            if before is not None and after is not None and after < before
        ]
    for role in roles:
        kind, _, name = role.partition(":")
        if kind in ("freq", "temp"):
            series = [_number(v[role]) for _, v in rows]
            if kind == "freq":
                trace["freq_khz"][name] = [None if x is None else int(x) for x in series]
            else:
                trace["temp_c"][name] = [None if x is None else x / 1000.0 for x in series]
    start = marks.get("window_start")
    trace["baseline"] = _baseline(trace, start) if start else None
    trace["state_before"], trace["state_after"] = (parse_state(text) for text in states)
    return trace


def _fuel_gauge(trace: dict[str, Any], rows: list[tuple[int, dict[str, str]]]) -> None:
    currents = [_number(v["current"]) for _, v in rows]
    voltages = [_number(v["voltage"]) for _, v in rows]
    first_i = next((c for c in currents if c), None)
    first_v = next((v for v in voltages if v), None)
    if first_i is None or first_v is None:
        trace["errors"].append("fuel gauge gave no current or voltage readings")
        trace["source"]["kind"] = "none"
        trace["source"]["reason"] = "the fuel gauge gave no readings during the run"
        return
    i_scale = UNIT_SCALE[detect_current_unit(int(first_i))]
    v_scale = UNIT_SCALE[detect_voltage_unit(int(first_v))]
    trace["power_w"] = [
        None if i is None or v is None else abs(i) * i_scale * abs(v) * v_scale
        for i, v in zip(currents, voltages, strict=True)
    ]
    trace["charging"] = [
        values["status"].strip() == "Charging" or values["usb_online"].strip() == "1"
        for _, values in rows
    ]


def _baseline(trace: dict[str, Any], start: int) -> dict[str, Any] | None:
    """Mean power before the tool started (the loop's first seconds).

    A sample is stamped before its files are read, and the sync marker goes up just before the
    window_start mark, so the last period before the mark may already read window power: it is
    left out.
    """
    ts = trace["t_perf_ns"]
    start -= int(float(trace.get("period_s") or 0.0) * 1e9)
    power = trace.get("power_w")
    if power:
        before = [p for t, p in zip(ts, power, strict=True) if t < start and p is not None]
        if before:
            return {"power_w": sum(before) / len(before), "samples": len(before)}
    energy = trace.get("energy_j")
    if energy:
        before = [(t, e) for t, e in zip(ts, energy, strict=True) if t < start and e is not None]
        if len(before) >= 2 and before[-1][1] >= before[0][1]:
            seconds = (before[-1][0] - before[0][0]) / 1e9
            if seconds > 0:
                joules = before[-1][1] - before[0][1]
                return {"power_w": joules / seconds, "samples": len(before)}
    return None
