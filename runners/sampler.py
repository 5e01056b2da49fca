"""Sampling beside the timed loop: the ``Sampler`` thread (energy source, cpu clocks and
temperatures every period, into an ``edgebench.telemetry/1`` trace) and the idle baseline.

Nothing is summarised here: the trace keeps the raw samples and the host recomputes energy per
inference from them (``edgebench.analysis.energy``).

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .device_state import cpufreq_path, find_zones, list_cpus
from .energy_source import EnergySource, NoneSource
from .protocol.telemetry import TRACE_SCHEMA
from .sysfs import one_line, read_int

DEFAULT_PERIOD_S = 0.02
#: Sampling faster than this costs more than it tells: sysfs sources update every 10 ms or slower.
MIN_PERIOD_S = 0.005
DEFAULT_MAX_SAMPLES = 200000
MAX_ERRORS = 20


class _Errors:
    """Distinct error messages with counts, bounded."""

    def __init__(self) -> None:
        self.counts: Dict[str, int] = {}

    def add(self, message: str) -> None:
        if message in self.counts:
            self.counts[message] += 1
        elif len(self.counts) < MAX_ERRORS:
            self.counts[message] = 1

    def as_list(self) -> List[str]:
        return [m if n == 1 else "%s (x%d)" % (m, n) for m, n in self.counts.items()]


def idle_baseline(
    source: EnergySource, seconds: float = 5.0, period_s: float = 0.05
) -> Dict[str, Any]:
    """Average idle power over ``seconds`` (run it before the model loads).

    From power readings (their mean) when the source gives power, else from the energy counter
    (difference over elapsed time, wraps corrected with the counter's range).
    """
    period_s = max(float(period_s), MIN_PERIOD_S)
    errors = _Errors()
    powers: List[float] = []
    energy: List[Tuple[int, float, bool]] = []
    charging = False
    samples = 0
    start = time.monotonic()
    deadline = start + max(float(seconds), 0.0)
    next_t = start
    while True:
        try:
            reading = source.read()
        except Exception as exc:
            errors.add(one_line(exc))
        else:
            samples += 1
            if reading.power_w is not None:
                powers.append(reading.power_w)
            if reading.energy_j is not None:
                energy.append((reading.t_ns, reading.energy_j, reading.wrapped))
            charging = charging or bool(reading.charging)
        now = time.monotonic()
        if now >= deadline:
            break
        next_t += period_s
        if next_t < now:
            next_t = now
        time.sleep(min(next_t - now, deadline - now))
    elapsed = time.monotonic() - start
    power = None
    method = None
    if powers:
        power = sum(powers) / len(powers)
        method = "mean of power readings"
    elif len(energy) >= 2 and energy[-1][0] > energy[0][0]:
        joules = 0.0
        for k in range(1, len(energy)):
            e0, (_, e1, wrapped) = energy[k - 1][1], energy[k]
            if wrapped or e1 < e0:
                if source.max_energy_range_j:
                    joules += source.max_energy_range_j - e0 + e1
                else:
                    errors.add("energy counter went backwards without a known range")
            else:
                joules += e1 - e0
        power = joules / ((energy[-1][0] - energy[0][0]) / 1e9)
        method = "energy counter difference / time"
    return {
        "power_w": power,
        "method": method,
        "samples": samples,
        "seconds": elapsed,
        "period_s": period_s,
        "charging": charging,
        "errors": errors.as_list(),
    }


class Sampler:
    """Background thread sampling the energy source, cpu frequencies and temperatures.

    Every ``period_s`` (at least MIN_PERIOD_S) it records ``time.perf_counter_ns()`` (the clock
    the runner times inferences with, taken just before the sample's reads) and the reading's
    ``time.monotonic_ns()``, the source reading, ``scaling_cur_freq`` of ``cpus`` (None = all)
    and the temperature of the zones matching ``zone_names`` (empty = all, at most 16).
    ``mark(name)`` stamps a perf_counter_ns time (``window_start`` / ``window_end``);
    ``stop()`` returns the trace (``edgebench.telemetry/1``, JSON-serializable).
    """

    def __init__(
        self,
        source: Optional[EnergySource] = None,
        period_s: float = DEFAULT_PERIOD_S,
        cpus: Optional[Sequence[int]] = None,
        zone_names: Optional[Sequence[str]] = None,
        root: str = "/",
        max_samples: int = DEFAULT_MAX_SAMPLES,
        baseline: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.source = source if source is not None else NoneSource()
        self.period_s = max(float(period_s), MIN_PERIOD_S)
        self.root = root
        self.cpus = list_cpus(root) if cpus is None else [int(c) for c in cpus]
        self.freq_paths = [(str(c), cpufreq_path(root, c, "scaling_cur_freq")) for c in self.cpus]
        self.zones = find_zones(root, zone_names)
        self.max_samples = max(int(max_samples), 1)
        self.baseline = baseline
        self.marks: Dict[str, int] = {}
        self.truncated = False
        self.t_perf_ns: List[int] = []
        self.t_mono_ns: List[int] = []
        self.power_w: List[Optional[float]] = []
        self.energy_j: List[Optional[float]] = []
        self.charging: List[Optional[bool]] = []
        self.wrapped_at: List[int] = []
        self.freq_khz: Dict[str, List[Optional[int]]] = {key: [] for key, _ in self.freq_paths}
        self.temp_c: Dict[str, List[Optional[float]]] = {key: [] for key, _ in self.zones}
        self.errors = _Errors()
        self._cost_ns = 0
        self._count = 0
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._finished = False

    # public API

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("Sampler.start() called twice")
        self._thread = threading.Thread(target=self._run, name="edgebench-telemetry", daemon=True)
        self._thread.start()
        return self

    def mark(self, name: str) -> int:
        """Record ``time.perf_counter_ns()`` under ``name`` and return it."""
        now = time.perf_counter_ns()
        self.marks[name] = now
        return now

    @property
    def samples(self) -> int:
        return self._count

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_samples(self, count: int, timeout: Optional[float] = None) -> bool:
        """Block until at least ``count`` samples were taken (False on timeout or if the
        sampler ended first)."""
        with self._cond:
            self._cond.wait_for(lambda: self._count >= count or self._finished, timeout)
            return self._count >= count

    def stop(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Stop the thread (joined with a timeout) and return the trace."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout if timeout is not None else max(2.0, 10 * self.period_s))
            if thread.is_alive():
                self.errors.add("sampler thread did not stop in time; trace may be incomplete")
        return self.trace()

    def trace(self) -> Dict[str, Any]:
        n = self._count
        try:
            described = self.source.describe()
        except Exception as exc:
            described = {"kind": self.source.kind, "describe_error": one_line(exc)}

        def column(values: List[Any]) -> Optional[List[Any]]:
            values = values[:n]
            return values if any(v is not None for v in values) else None

        return {
            "schema": TRACE_SCHEMA,
            "source": described,
            "period_s": self.period_s,
            "samples": n,
            "t_perf_ns": self.t_perf_ns[:n],
            "t_mono_ns": self.t_mono_ns[:n],
            "power_w": column(self.power_w),
            "energy_j": column(self.energy_j),
            "charging": column(self.charging),
            "wrapped_at": [i for i in self.wrapped_at if i < n],
            "max_energy_range_j": self.source.max_energy_range_j,
            "freq_khz": {key: values[:n] for key, values in self.freq_khz.items()},
            "temp_c": {key: values[:n] for key, values in self.temp_c.items()},
            "marks": dict(self.marks),
            "truncated": self.truncated,
            "sample_cost_us": (self._cost_ns / n / 1000.0) if n else None,
            "baseline": self.baseline,
            "errors": self.errors.as_list(),
        }

    # the thread

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # never die silently: the trace says why it ended
            self.errors.add("sampler stopped: %s" % one_line(exc))
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def _loop(self) -> None:
        perf = time.perf_counter_ns
        mono = time.monotonic_ns
        read = self.source.read
        period = self.period_s
        stop_wait = self._stop.wait
        is_stopped = self._stop.is_set
        add_error = self.errors.add
        t_perf, t_mono = self.t_perf_ns, self.t_mono_ns
        power, energy, charging = self.power_w, self.energy_j, self.charging
        freq_cols = [(self.freq_khz[key], path) for key, path in self.freq_paths]
        temp_cols = [(self.temp_c[key], path) for key, path in self.zones]
        cond = self._cond
        index = 0
        next_t = time.monotonic()
        while not is_stopped():
            if index >= self.max_samples:
                self.truncated = True
                break
            t0 = perf()
            try:
                reading = read()
            except Exception as exc:
                add_error("source %s: %s" % (self.source.kind, one_line(exc)))
                t_mono.append(mono())
                power.append(None)
                energy.append(None)
                charging.append(None)
            else:
                t_mono.append(reading.t_ns)
                power.append(reading.power_w)
                energy.append(reading.energy_j)
                charging.append(reading.charging)
                if reading.wrapped:
                    self.wrapped_at.append(index)
            for values, path in freq_cols:
                try:
                    values.append(read_int(path))
                except (OSError, ValueError):
                    values.append(None)  # cpu offline or cpufreq absent
            for temps, path in temp_cols:
                try:
                    temps.append(read_int(path) / 1000.0)
                except (OSError, ValueError):
                    temps.append(None)
            t_perf.append(t0)
            self._cost_ns += perf() - t0
            index += 1
            with cond:
                self._count = index
                cond.notify_all()
            next_t += period
            now = time.monotonic()
            if next_t <= now:
                next_t = now  # fell behind (slow reads): do not burst to catch up
                continue
            stop_wait(next_t - now)
