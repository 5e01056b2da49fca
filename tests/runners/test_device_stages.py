"""The runner's plumbing for accelerators that time their own stages and count their own
memory: a Stream with ``device_stage_ns`` gives the stage samples (the iteration's sample stays
the host's clock), and --instances records the device memory after each instance where the
backend says. Pure-Python streams and backends stand in for the GPU here: these test the
runner's timing and bookkeeping, not TensorRT (tests/runners/test_tensorrt_gpu.py does that on
a GPU)."""

from __future__ import annotations

import time
from typing import Any

from edgebench.runners.backends.base import Backend, Stream
from edgebench.runners.instances import open_streams
from edgebench.runners.timing import WindowLimits, measure_sequential, run_window

LIMITS = WindowLimits(iterations=6, min_time_ns=0, max_iterations=6, max_time_ns=10**10)


def spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


class QueuedStream(Stream):
    """Stages that return at once (work queued) and a device that reports their times."""

    def __init__(self) -> None:
        self.calls = 0
        super().__init__(
            lambda: None, self._compute, lambda: [self.calls], {}, self._device_stage_ns
        )

    def _compute(self) -> None:
        self.calls += 1
        spin(0.001)  # the wait for the device, in the call

    def _device_stage_ns(self) -> tuple[int, int, int]:
        return (1000 * self.calls, 2000 * self.calls, 3000 * self.calls)


def test_device_stage_times_replace_the_host_clock_between_the_stages() -> None:
    stream = QueuedStream()
    stages: dict[str, list[int]] = {}
    timing = measure_sequential(stream, 6, 0, 6, 10**10, stage_samples=stages)
    calls = range(1, 7)
    assert stages == {
        "copy_in": [1000 * n for n in calls],
        "compute": [2000 * n for n in calls],
        "copy_out": [3000 * n for n in calls],
    }
    # Each sample is still the host's clock over the whole call (the spin included).
    assert all(sample >= 1_000_000 for sample in timing["samples_ns"])
    assert len(timing["samples_ns"]) == 6


def test_a_stream_without_device_times_keeps_the_host_split() -> None:
    stream = Stream(lambda: spin(0.0005), lambda: spin(0.001), lambda: [1], {})
    window = run_window([stream], LIMITS, staged=True)
    stages = window.stage_samples
    for index, sample in enumerate(window.timing["samples_ns"]):
        parts = [stages[name][index] for name in ("copy_in", "compute", "copy_out")]
        assert sum(parts) == sample
        assert parts[1] >= 1_000_000


class CountingBackend(Backend):
    """A backend whose 'device memory' grows by a known amount per stream it makes."""

    name = "counting"

    def __init__(self, per_stream: int | None) -> None:
        self.per_stream = per_stream
        self.streams = 0

    def make_stream(self, feeds: dict[str, Any]) -> Any:
        self.streams += 1
        return lambda: [feeds]

    def device_memory_used_bytes(self) -> int | None:
        if self.per_stream is None:
            return None
        return BASE + self.per_stream * self.streams


BASE = 100 << 20


def test_instances_record_the_device_memory_after_each_where_the_backend_says() -> None:
    shared = CountingBackend(per_stream=8 << 20)
    opened = open_streams(3, "shared", 1, shared, {}, lambda: CountingBackend(None), lambda: 1)
    assert opened.instances["device_memory_after_load_mb"] == [108.0, 116.0, 124.0]
    # Separate loads: each instance's backend is asked right after it is ready.
    loads = [CountingBackend(per_stream=16 << 20) for _ in range(2)]
    first = CountingBackend(per_stream=16 << 20)
    opened = open_streams(3, "separate", 1, first, {}, loads.pop, lambda: 1)
    assert opened.instances["device_memory_after_load_mb"] == [116.0, 116.0, 116.0]
    assert len(opened.extra) == 2


def test_a_cpu_backend_leaves_the_device_memory_key_out() -> None:
    cpu = CountingBackend(per_stream=None)
    opened = open_streams(2, "shared", 1, cpu, {}, lambda: cpu, lambda: 1)
    assert "device_memory_after_load_mb" not in opened.instances
    assert opened.instances["rss_after_load_kb"] == [1, 1]
    assert Backend().device_memory_used_bytes() is None
