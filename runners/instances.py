"""Several instances of one model in one runner process (``--instances N``).

Device-side: Python 3.8+, the standard library and the backends only.

Two modes. ``separate``: N independent loads, each with its own stream, as N apps (or N
unaware components of one app) would hold them. ``shared``: one load and N streams on it, the
framework's own way of serving concurrent requests from one copy of the weights (one ONNX
Runtime session, one OpenVINO compiled model with N infer requests, one ncnn Net with an
extractor per run, N MNN sessions of one interpreter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .backends import Backend
from .protocol.errors import BackendError

MODES = ("separate", "shared")
MIB = 1024 * 1024


@dataclass
class OpenedStreams:
    """The streams a cell runs and the extra backends loaded for them (to close later)."""

    streams: List[Any]
    extra: List[Backend]
    #: With more than one instance: count, mode and ``rss_after_load_kb``, the resident memory
    #: after each instance was ready (loaded and its stream made), so the growth per instance
    #: is there; on an accelerator whose backend says, ``device_memory_after_load_mb`` too
    #: (the device's memory in use at the same points). None with one instance.
    instances: Optional[Dict[str, Any]] = None


def open_streams(
    count: int,
    mode: str,
    concurrency: int,
    backend: Backend,
    feeds: Dict[str, Any],
    load_another: Callable[[], Backend],
    rss_kb: Callable[[], Optional[int]],
) -> OpenedStreams:
    """``concurrency`` streams on ``backend`` with one instance; else one stream per instance,
    each on its own load (``separate``) or all on ``backend`` (``shared``)."""
    if count <= 1:
        return OpenedStreams([backend.make_stream(feeds) for _ in range(concurrency)], [])
    mode = mode or "separate"
    if mode not in MODES:
        raise BackendError("bad_spec", "instance_mode %r is not one of %s" % (mode, MODES))
    if mode == "shared" and backend.no_shared_instances:
        raise BackendError(
            "unsupported",
            "%s cannot serve %d instances from one loaded model: %s"
            % (backend.name, count, backend.no_shared_instances),
        )
    streams = [backend.make_stream(feeds)]
    after = [rss_kb()]
    on_device = [backend.device_memory_used_bytes()]
    others: List[Backend] = []
    for _ in range(1, count):
        owner = backend
        if mode == "separate":
            owner = load_another()
            others.append(owner)
        streams.append(owner.make_stream(feeds))
        after.append(rss_kb())
        on_device.append(owner.device_memory_used_bytes())
    instances: Dict[str, Any] = {"count": count, "mode": mode, "rss_after_load_kb": after}
    if any(used is not None for used in on_device):
        instances["device_memory_after_load_mb"] = [
            None if used is None else round(used / MIB, 3) for used in on_device
        ]
    return OpenedStreams(streams, others, instances)
