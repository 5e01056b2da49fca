"""The breakdowns' series: memory against the number of instances, latency against the
input size, and the size steps where latency jumps by more than the pixels do (cliffs)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from edgebench.analysis.breakdowns import as_number, ok_records, p50_of
from edgebench.results.breakdown_parts import ShapeChange
from edgebench.results.records import Record

#: A step from one input size to the next is a cliff when its latency ratio exceeds its pixel
#: ratio by more than this factor. Convolutional work grows about linearly with the pixels and
#: fixed per-inference costs make small inputs grow slower still, so a healthy step has a
#: latency ratio at or below its pixel ratio; p50 noise on a quiet device is a few percent and
#: caches falling out of use cost some tens of percent more. 1.5x beyond linear is well past
#: both and means something changed in kind: another kernel, a fallback path, tensors no longer
#: fitting a cache level, a re-layout. (Attention grows with the square of the tokens, so a
#: transformer dominated by it can pass this bar by its algorithm alone: read such cliffs so.)
CLIFF_FACTOR = 1.5

# ---------------------------------------------------------------------------------------------
# Series: memory vs instances, latency vs input size


class SeriesKey(NamedTuple):
    device: str
    model: str
    #: The framework with its backend (``Record.engine``: ``ncnn``, ``ncnn·vulkan``).
    framework: str
    precision: str
    #: separate | shared (instances), fixed | dynamic (shapes).
    mode: str
    #: Everything else that splits a series: threads and cores, and the input shape (memory
    #: series) or the streams and instances (size series).
    setting: str = ""


class InstancePoint(NamedTuple):
    n: int
    rss_running_mb: float | None
    per_instance_mb: float | None
    p50_ms: float | None
    throughput_ips: float | None
    #: The most of the N that were inferring at the same moment (None: not recorded).
    at_once: int | None = None

    @property
    def fewer_at_once(self) -> bool:
        """Fewer than N ran at once: the point is not "all N running"."""
        return self.at_once is not None and self.at_once < self.n


class ShapePoint(NamedTuple):
    pixels: int
    #: The first input's size, short (``224``, ``160x320``) or its whole shape.
    label: str
    p50_ms: float | None
    #: Dynamic cells: resizing from the previous shape, and the first inference after it.
    resize_ms: float | None = None
    first_ms: float | None = None
    #: The shape resized from (its label).
    from_label: str | None = None


def first_input_dims(inputs: Any) -> list[int] | None:
    """The first input's shape from ``record.inputs`` (or a ``change.from`` list)."""
    if not isinstance(inputs, list) or not inputs or not isinstance(inputs[0], Mapping):
        return None
    dims = inputs[0].get("shape")
    if not isinstance(dims, list) or not all(isinstance(d, int) for d in dims):
        return None
    return dims


def shape_label(dims: Sequence[int]) -> str:
    """``224`` for a square image (NCHW or NHWC), ``160x320`` for another, else the shape."""
    if len(dims) == 4:
        hw = dims[2:] if dims[1] in (1, 3, 4) else dims[1:3] if dims[3] in (1, 3, 4) else None
        if hw is not None:
            return str(hw[0]) if hw[0] == hw[1] else f"{hw[0]}x{hw[1]}"
    return "x".join(str(d) for d in dims)


def _setting(record: Record, *parts: str) -> str:
    return " ".join([f"{record.threads}t", f"cores {record.cores}", *[p for p in parts if p]])


def _shape_text(record: Record) -> str:
    dims = first_input_dims(record.inputs)
    return "x".join(str(d) for d in dims) if dims else ""


def memory_series(records: Sequence[Record]) -> dict[SeriesKey, list[InstancePoint]]:
    """Per (device, model, framework, precision, mode, setting): one point per instance
    count, sorted by it (a count measured twice keeps the later record)."""
    series: dict[SeriesKey, dict[int, InstancePoint]] = {}
    for r in ok_records(records):
        data = r.instances
        if data is None:
            continue
        n = r.concurrency if data.count is None else data.count
        key = SeriesKey(
            r.device,
            r.model,
            r.engine,
            r.precision,
            data.mode or "separate",
            _setting(r, _shape_text(r)),
        )
        series.setdefault(key, {})[n] = InstancePoint(
            n,
            as_number(data.rss_running_mb),
            as_number(data.per_instance_mb),
            p50_of(r),
            as_number(r.throughput_ips),
            data.at_once,
        )
    # N = 1 is the plain cell of the same setting: its peak is one instance running.
    for r in ok_records(records):
        if r.instances or r.shape or r.concurrency != 1:
            continue
        single = InstancePoint(
            1, as_number(r.peak_rss_mb), None, p50_of(r), as_number(r.throughput_ips)
        )
        setting = _setting(r, _shape_text(r))
        for key, points in series.items():
            if key[:4] == (r.device, r.model, r.engine, r.precision) and key.setting == setting:
                points.setdefault(1, single)
    return {k: [points[n] for n in sorted(points)] for k, points in series.items()}


def shape_series(records: Sequence[Record]) -> dict[SeriesKey, list[ShapePoint]]:
    """Per (device, model, framework, precision, fixed|dynamic, setting): one point per input
    size, sorted by pixels."""
    series: dict[SeriesKey, list[ShapePoint]] = {}
    for r in ok_records(records):
        data = r.shape
        if data is None:
            continue
        dims = first_input_dims(r.inputs)
        pixels = data.pixels
        if pixels is None:
            pixels = math.prod(dims) if dims else 0
        if pixels <= 0:
            continue
        change = data.change or ShapeChange(None, None, None)
        from_dims = first_input_dims(change.from_inputs)
        streams = ""
        if r.instances is not None:
            streams = f"{r.instances.count} {r.instances.mode}"
        elif r.concurrency != 1:
            streams = f"s{r.concurrency}"
        key = SeriesKey(
            r.device,
            r.model,
            r.engine,
            r.precision,
            data.mode or "fixed",
            _setting(r, streams),
        )
        series.setdefault(key, []).append(
            ShapePoint(
                pixels,
                shape_label(dims) if dims else str(pixels),
                p50_of(r),
                as_number(change.resize_ms),
                as_number(change.first_ms),
                shape_label(from_dims) if from_dims else None,
            )
        )
    return {k: sorted(points, key=lambda p: p.pixels) for k, points in series.items()}


@dataclass(frozen=True)
class Cliff:
    """A step between two consecutive input sizes whose latency grows more than its pixels."""

    before: ShapePoint
    after: ShapePoint
    latency_ratio: float
    pixel_ratio: float

    def describe(self) -> str:
        return (
            f"cliff: {self.before.label}->{self.after.label}: latency "
            f"x{self.latency_ratio:.1f} for pixels x{self.pixel_ratio:.1f}"
        )


def scaling(before: ShapePoint, after: ShapePoint) -> tuple[float, float] | None:
    """(latency ratio, pixel ratio) of a step between two sizes, None without both p50s."""
    if not before.p50_ms or not after.p50_ms or before.pixels <= 0:
        return None
    return after.p50_ms / before.p50_ms, after.pixels / before.pixels


def cliffs(points: Sequence[ShapePoint], factor: float = CLIFF_FACTOR) -> list[Cliff]:
    """The steps, between consecutive sizes (by pixels, sizes without a p50 left out), whose
    latency ratio is more than ``factor`` times their pixel ratio."""
    timed = sorted((p for p in points if p.p50_ms and p.pixels > 0), key=lambda p: p.pixels)
    found = []
    for before, after in itertools.pairwise(timed):
        ratios = scaling(before, after)
        if ratios is not None and ratios[0] > factor * ratios[1]:
            found.append(Cliff(before, after, *ratios))
    return found
