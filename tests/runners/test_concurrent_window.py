"""The runner's concurrent timed window (N streams, N instances): it ends only once every
stream has finished a request, and it reports how many were in flight at once."""

from __future__ import annotations

import threading

import pytest

from edgebench.measure.breakdowns import instances_field, instances_warning
from edgebench.runners.protocol.result_parts import InstancesPart
from edgebench.runners.protocol.typed_json import read_object
from edgebench.runners.timing import measure_concurrent

pytestmark = pytest.mark.load_sensitive

SECOND = 1_000_000_000


def _part(raw: dict) -> InstancesPart:
    """The runner's ``instances`` object as the host reads it from a result."""
    return read_object(InstancesPart, raw, "instances")


def test_every_stream_runs_before_the_window_ends():
    """Stream 0 is instant and one request is asked for; still every stream runs (before the
    window waited for every stream, it ended after the first request)."""
    counts = [0] * 64

    def stream(index: int):
        def run() -> None:
            counts[index] += 1

        return run

    result = measure_concurrent([stream(i) for i in range(64)], 1, 0, 100_000, 60 * SECOND)
    assert result["stop_reason"] == "target_reached"
    assert all(c >= 1 for c in result["per_stream_counts"]), result["per_stream_counts"]
    assert counts == result["per_stream_counts"]
    assert len(result["samples_ns"]) == sum(counts)


def test_at_once_counts_the_requests_in_flight_together():
    """Each stream's first request waits at a barrier of all N: all N are in flight at once,
    and the window counts exactly N (the barrier's timeout bounds a broken run)."""
    n = 8
    together = threading.Barrier(n, timeout=30)
    done = [False] * n

    def stream(index: int):
        def run() -> None:
            if not done[index]:
                done[index] = True
                together.wait()

        return run

    result = measure_concurrent([stream(i) for i in range(n)], n, 0, 100_000, 60 * SECOND)
    assert result["at_once"] == n
    assert all(done)


def test_one_stream_at_a_time_is_counted_as_one_at_once():
    """One stream has one request in flight at a time, however many it runs."""
    result = measure_concurrent([lambda: None], 5, 0, 100_000, 60 * SECOND)
    assert result["at_once"] == 1 and len(result["samples_ns"]) >= 5


def test_the_record_warns_when_fewer_than_n_ran_or_ran_together():
    raw = {"count": 4, "mode": "shared", "rss_after_load_kb": [1024] * 4, "ran": 4, "at_once": 4}
    assert instances_warning(instances_field(_part(raw), 512), "target_reached") is None
    fewer = instances_warning(instances_field(_part(dict(raw, ran=3, at_once=3)), 512), "max_time")
    assert fewer is not None and fewer.message.startswith(
        "only 3 of the 4 instances finished an inference before the timed window ended at "
        "--max-time"
    )
    apart = instances_warning(instances_field(_part(dict(raw, at_once=2)), 512), "target_reached")
    assert apart is not None
    assert apart.message.startswith("at most 2 of the 4 instances were inferring")
    # Records from runners that did not count them carry no claim either way.
    old = {k: v for k, v in raw.items() if k not in ("ran", "at_once")}
    assert instances_warning(instances_field(_part(old), 512), "target_reached") is None
