"""Several instances of one model in one runner process (``--instances N``).

Device-side: Python 3.8+, the standard library and the backends only.

Two modes. ``separate``: N independent loads, each with its own stream, as N apps (or N
unaware components of one app) would hold them. ``shared``: one load and N streams on it, the
framework's own way of serving concurrent requests from one copy of the weights (one ONNX
Runtime session, one OpenVINO compiled model with N infer requests, one ncnn Net with an
extractor per run, N MNN sessions of one interpreter).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from backends import Backend, BackendError

MODES = ("separate", "shared")


def open_streams(
    spec: Dict[str, Any],
    backend: Backend,
    feeds: Dict[str, Any],
    result: Dict[str, Any],
    load_another: Callable[[], Backend],
    rss_kb: Callable[[], Optional[int]],
) -> Tuple[List[Any], List[Backend]]:
    """The streams the cell runs, and the extra backends loaded for them (to close later).

    With more than one instance, ``result["instances"]`` records the resident memory after
    each instance is ready (loaded and its stream made), so the growth per instance is there.
    """
    count = int(spec.get("instances") or 1)
    if count == 1:
        return [backend.make_stream(feeds) for _ in range(spec["concurrency"])], []
    mode = spec.get("instance_mode") or "separate"
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
    others: List[Backend] = []
    for _ in range(1, count):
        owner = backend
        if mode == "separate":
            owner = load_another()
            others.append(owner)
        streams.append(owner.make_stream(feeds))
        after.append(rss_kb())
    result["instances"] = {"count": count, "mode": mode, "rss_after_load_kb": after}
    return streams, others
