"""The timed loops: one stream timed in this thread, or N streams in N threads, and the window
around them with its hooks.

A timed-region hook is a context manager entered just before the loop starts and left just
after it ends (as pyperf does): the telemetry sampler, the sync-marker file, the window marks.
A backend that needs a device sync or a profiler around the window adds one more hook.

Standard library only, Python 3.8; nothing here knows about frameworks or the spec.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence, Tuple

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]  # no resource module on Windows


@dataclass
class WindowLimits:
    """When the timed window ends (``runners/protocol/spec.py`` documents each)."""

    iterations: int
    min_time_ns: int
    max_iterations: int
    max_time_ns: int
    target_ci: Optional[float] = None


@dataclass
class TimedWindow:
    """What the window measured: ``timing`` holds the result line's timing keys."""

    timing: Dict[str, Any]
    #: What the last timed call of a single stream returned (None with several streams).
    last_outputs: Any
    #: Copy-in, compute and copy-out samples, when the window timed them.
    stage_samples: Optional[Dict[str, List[int]]]


def run_window(
    streams: Sequence[Any],
    limits: WindowLimits,
    staged: bool = False,
    hooks: Sequence[ContextManager[Any]] = (),
) -> TimedWindow:
    """Time ``streams`` (one: in this thread, ``staged`` if it is a ``Stream``; several: one
    thread each) with every hook entered around the loop, in order, and left in reverse.

    ``cpu_ns_per_inference`` is the process's CPU time (user + system, every thread: the
    framework's workers, a telemetry sampler's small share) over the loop, per inference
    completed in it by all streams: next to the latency, what each inference costs the CPU
    (on an accelerator, the driver's and the host side's share)."""
    stage_samples: Optional[Dict[str, List[int]]] = {} if staged else None
    last: List[Any] = []
    with ExitStack() as stack:
        for hook in hooks:
            stack.enter_context(hook)
        cpu_start = process_cpu_ns()
        if len(streams) == 1:
            timing = measure_sequential(
                streams[0],
                limits.iterations,
                limits.min_time_ns,
                limits.max_iterations,
                limits.max_time_ns,
                limits.target_ci,
                last,
                stage_samples,
            )
        else:
            timing = measure_concurrent(
                list(streams),
                limits.iterations,
                limits.min_time_ns,
                limits.max_iterations,
                limits.max_time_ns,
            )
        cpu_ns = process_cpu_ns() - cpu_start
    count = len(timing["samples_ns"])
    timing["cpu_ns_per_inference"] = cpu_ns // count if count else None
    return TimedWindow(timing, last[0] if last else None, stage_samples)


def process_cpu_ns() -> int:
    """User + system CPU time of this process so far, every thread, in nanoseconds."""
    if resource is not None:
        usage = resource.getrusage(resource.RUSAGE_SELF)  # microsecond resolution
        return int((usage.ru_utime + usage.ru_stime) * 1e9)
    times = os.times()  # clock ticks: 10 ms on most systems
    return int((times.user + times.system) * 1e9)


def median_ci_halfwidth(samples: List[int]) -> float:
    """Half-width of a distribution-free 95% CI of the median, relative to the median.

    Uses the order statistics at n/2 -/+ 1.96 sqrt(n)/2 (normal approximation to the binomial).
    """
    ordered = sorted(samples)
    n = len(ordered)
    spread = 1.96 * (n**0.5) / 2
    lo = max(0, int(n / 2 - spread))
    hi = min(n - 1, int(n / 2 + spread + 1))
    median = ordered[n // 2]
    return (ordered[hi] - ordered[lo]) / 2 / median if median else float("inf")


def measure_sequential(
    run: Callable[[], Any],
    iterations: int,
    min_time_ns: int,
    max_iterations: int,
    max_time_ns: int,
    target_ci: Optional[float] = None,
    last_outputs: Optional[List[Any]] = None,
    stage_samples: Optional[Dict[str, List[int]]] = None,
) -> Dict[str, Any]:
    """Time ``run`` until at least ``iterations`` samples AND ``min_time_ns`` have passed.

    ``last_outputs``, when given, receives what the last timed call returned: the outputs the
    check compares, without one more inference (which costs seconds on an emulated board).

    ``stage_samples``, when given (``run`` is then a ``Stream``), receives each iteration's
    copy-in, compute and copy-out times: the clock is read between the stages, so the three
    add up to exactly the iteration's sample, which still covers the whole inference. A
    ``Stream`` with ``device_stage_ns`` (an accelerator that queues its stages) gives them
    instead, as the device timed them, read after the iteration's clock stops; the sample
    stays the host's clock over the whole call.

    With ``target_ci`` (e.g. 0.01 for +-1%) it goes on until the 95% CI of the median is that
    tight, or ``max_time_ns``/``max_iterations`` stop it. The timer brackets the inference call
    only; bookkeeping (including the CI check) happens outside it.
    """
    clock = time.perf_counter_ns
    samples: List[int] = []
    append = samples.append
    stop_reason = "max_iterations"
    next_check = max(iterations, 20)
    start = clock()
    outputs = None
    if stage_samples is not None:
        copy_in, compute, copy_out = run.copy_in, run.compute, run.copy_out  # type: ignore[attr-defined]  # stage_samples: a staged run
        add_in = stage_samples.setdefault("copy_in", []).append
        add_compute = stage_samples.setdefault("compute", []).append
        add_out = stage_samples.setdefault("copy_out", []).append
        device_stages = getattr(run, "device_stage_ns", None)
    while len(samples) < max_iterations:
        if stage_samples is None:
            t0 = clock()
            outputs = run()
            t1 = clock()
        else:
            t0 = clock()
            copy_in()
            ta = clock()
            compute()
            tb = clock()
            outputs = copy_out()
            t1 = clock()
            if device_stages is None:
                add_in(ta - t0)
                add_compute(tb - ta)
                add_out(t1 - tb)
            else:
                on_device = device_stages()
                add_in(on_device[0])
                add_compute(on_device[1])
                add_out(on_device[2])
        append(t1 - t0)
        elapsed = t1 - start
        enough = len(samples) >= iterations and elapsed >= min_time_ns
        if enough and target_ci is None:
            stop_reason = "target_reached"
            break
        if enough and target_ci is not None and len(samples) >= next_check:
            # Re-checked at growing intervals so sorting stays a small share of the run.
            if median_ci_halfwidth(samples) <= target_ci:
                stop_reason = "ci_reached"
                break
            next_check = len(samples) + max(16, len(samples) // 10)
        if elapsed >= max_time_ns:
            stop_reason = "max_time"
            break
    wall = clock() - start
    if last_outputs is not None and samples:
        last_outputs.append(outputs)
    result = {"samples_ns": samples, "measure_wall_ns": wall, "stop_reason": stop_reason}
    if target_ci is not None:
        result["median_ci"] = median_ci_halfwidth(samples) if samples else None
    return result


def measure_concurrent(
    streams: List[Callable[[], Any]],
    iterations: int,
    min_time_ns: int,
    max_iterations: int,
    max_time_ns: int,
) -> Dict[str, Any]:
    """Run every stream in its own thread; per-request latency plus aggregate throughput.

    The window ends once ``iterations`` requests and ``min_time_ns`` have passed and every
    stream has finished a request (so N instances are N running, not the first few), or at
    ``max_time_ns``/``max_iterations``. ``at_once`` is the most requests in flight together.
    """
    window = _ConcurrentWindow(len(streams), iterations, min_time_ns, max_iterations, max_time_ns)
    return window.run(streams)


class _ConcurrentWindow:
    """The shared state of the N stream threads of one concurrent window."""

    def __init__(
        self,
        count: int,
        iterations: int,
        min_time_ns: int,
        max_iterations: int,
        max_time_ns: int,
    ) -> None:
        self.count = count
        self.iterations = iterations
        self.min_time_ns = min_time_ns
        self.max_iterations = max_iterations
        self.max_time_ns = max_time_ns
        self.barrier = threading.Barrier(count + 1)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.per_stream: List[List[int]] = [[] for _ in range(count)]
        self.completion: List[int] = []  # stream index of every finished request, in order
        self.start = 0
        self.reason = "max_iterations"
        self.error: Optional[BaseException] = None
        # Requests in flight now and at most; streams that started and that finished one.
        self.in_flight = 0
        self.most_in_flight = 0
        self.started = 0
        self.ran = 0
        # Set once every stream has started its first request: until then no stream starts a
        # second one, so the first streams cannot keep the others from ever running.
        self.all_started = threading.Event()

    def run(self, streams: List[Callable[[], Any]]) -> Dict[str, Any]:
        clock = time.perf_counter_ns
        threads = [
            threading.Thread(target=self._worker, args=(i, run), daemon=True)
            for i, run in enumerate(streams)
        ]
        for thread in threads:
            thread.start()
        self.start = clock()
        self.barrier.wait()
        for thread in threads:
            thread.join()
        wall = clock() - self.start
        if self.error is not None:
            raise self.error
        cursors = [0] * self.count
        samples = []
        for index in self.completion:
            samples.append(self.per_stream[index][cursors[index]])
            cursors[index] += 1
        return {
            "samples_ns": samples,
            "measure_wall_ns": wall,
            "stop_reason": self.reason,
            "per_stream_counts": [len(s) for s in self.per_stream],
            "at_once": self.most_in_flight,
        }

    def _halt(self, reason: Optional[str] = None) -> None:
        if reason is not None:
            self.reason = reason
        self.stop.set()
        self.all_started.set()  # wakes the streams waiting for it

    def _every_stream_started(self) -> bool:
        """Before a stream's next request: wait until every stream has started one; False when
        the window stopped meanwhile (or ran out of time waiting)."""
        if self.all_started.is_set():
            return True
        left = self.max_time_ns - (time.perf_counter_ns() - self.start)
        if left <= 0 or not self.all_started.wait(left / 1e9):
            self._halt("max_time")
        return not self.stop.is_set()

    def _begin(self, first: bool) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if first:
                self.started += 1
                if self.started == self.count:
                    self.all_started.set()

    def _finish(self, index: int, first: bool) -> Tuple[int, bool]:
        """Count a finished request: how many have finished, and whether every stream has."""
        with self.lock:
            self.in_flight -= 1
            self.completion.append(index)
            if first:
                self.ran += 1
            return len(self.completion), self.ran == self.count

    def _worker(self, index: int, run: Callable[[], Any]) -> None:
        clock = time.perf_counter_ns
        samples = self.per_stream[index]
        self.barrier.wait()
        try:
            while not self.stop.is_set():
                if samples and not self._every_stream_started():
                    break
                self._begin(first=not samples)
                t0 = clock()
                run()
                t1 = clock()
                samples.append(t1 - t0)
                done, every = self._finish(index, first=len(samples) == 1)
                self._after_request(done, t1 - self.start, every)
        except Exception as exc:  # surfaced by the main thread as an inference error
            self.error = exc
            self._halt()

    def _after_request(self, done: int, elapsed: int, every: bool) -> None:
        if done >= self.iterations and elapsed >= self.min_time_ns and every:
            self._halt("target_reached")
        elif done >= self.max_iterations:
            self._halt()
        elif elapsed >= self.max_time_ns:
            self._halt("max_time")
