"""Where the time and memory go, per record: the figures behind the breakdown reports.

Four breakdowns, each read from its own record field (results/records.py says what the
measurement stores):

- ``stages``: the p50 of copy-in, compute and copy-out, each as a share of the iteration, and
  the time no stage accounts for (per iteration, from the raw samples);
- ``op_profile``: op times summed per op type, aligned across frameworks by op family, and
  the op types in which the slowest framework loses its time;
- ``instances``: resident memory and speed against the number of loaded instances;
- ``shape``: p50 against the input's size, and the size steps where latency jumps by more
  than the pixels do (``cliffs``).

Only records with status ok feed these figures. Nothing here formats HTML or text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench.frameworks import display_order
from edgebench.results.breakdown_parts import OpProfile, ProfiledOp
from edgebench.results.record_warnings import OPS_OUTWEIGH_INFERENCE, RecordWarning
from edgebench.results.records import Record
from edgebench.statuses import Status

#: The stages of one inference, in order (as runners/backends/base.py times them).
STAGES = ("copy_in", "compute", "copy_out")
#: The share of an iteration that no stage covers (timer calls, the loop, Python glue).
UNATTRIBUTED = "unattributed"
#: How many op types and single ops a breakdown lists by default.
TOP_N = 5

#: Op types that name the same operation in different frameworks (lowercased, without "_",
#: "-" or spaces) -> the family that aligns them in a side-by-side table. A type not listed
#: here is its own family. Kept to unambiguous names: ncnn's BinaryOp or MNN's Eltwise cover
#: several ONNX ops and stay apart.
_FAMILY_ALIASES = {
    "Conv": ("conv", "conv2d", "convolution"),
    "DepthwiseConv": ("convdepthwise", "convolutiondepthwise", "depthwiseconv2d"),
    "MatMul": ("gemm", "matmul", "batchmatmul", "innerproduct", "fullyconnected"),
    "Softmax": ("softmax",),
    "LayerNorm": ("layernorm", "layernormalization"),
    "Concat": ("concat", "concatenation"),
    "Reshape": ("reshape",),
    "Transpose": ("transpose", "permute"),
    "Resize": ("resize", "interp", "upsample", "resizebilinear", "resizenearestneighbor"),
}
OP_FAMILIES = {alias: family for family, names in _FAMILY_ALIASES.items() for alias in names}


def as_number(value: Any) -> float | None:
    """A finite, non-negative number from untrusted JSON, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def ok_records(records: Iterable[Record]) -> list[Record]:
    return [r for r in records if r.status == Status.OK]


def p50_of(record: Record) -> float | None:
    """The record's own p50 latency (ms)."""
    return as_number((record.latency_ms or {}).get("p50"))


# ---------------------------------------------------------------------------------------------
# Stages


@dataclass(frozen=True)
class StageSummary:
    """One record's stages. ``p50_ms`` holds the stages measured: a stage the framework merges
    into another is absent (``boundaries`` says where it went). ``shares`` (stages and, when
    there is a remainder, ``UNATTRIBUTED``) add up to 1."""

    record: Record
    p50_ms: dict[str, float]
    p99_ms: dict[str, float]
    shares: dict[str, float]
    #: The whole iteration's p50 (the record's own latency), when known.
    total_ms: float | None
    #: Time between or around the stages: per iteration, its time less its stages' (median
    #: over iterations, 0 when negative or when there are no raw stage samples).
    remainder_ms: float
    boundaries: dict[str, str]
    unavailable: str | None = None

    @property
    def merged(self) -> list[str]:
        """The stages with no time of their own (merged into another by the framework)."""
        return [s for s in STAGES if s not in self.p50_ms] if not self.unavailable else []


def _stage_values(data: Mapping[str, float] | None) -> dict[str, float]:
    if data is None:
        return {}
    return {s: v for s in STAGES if (v := as_number(data.get(s))) is not None}


def _per_iteration_remainder(record: Record, samples: Mapping[str, list[int]] | None) -> float:
    """The median over iterations of what each iteration took beyond its own stages (ms),
    from the raw samples; 0 when the stage samples do not line up with the iteration's.

    Taken per iteration because medians do not add: the iteration's p50 less the stages' p50s
    is mostly that difference, not time spent anywhere."""
    if samples is None:
        return 0.0
    total = record.samples_ns
    columns = [samples[stage] for stage in STAGES if samples.get(stage) is not None]
    if not total or not columns or not all(len(c) == len(total) for c in columns):
        return 0.0
    stage_sum = np.sum(np.asarray(columns, dtype=np.float64), axis=0)
    rest = np.asarray(total, dtype=np.float64) - stage_sum
    if not np.all(np.isfinite(rest)):
        return 0.0
    return round(max(0.0, float(np.median(rest))) / 1e6, 6)


def stage_summary(record: Record) -> StageSummary | None:
    """The stage breakdown of one record; None when it has no ``stages``.

    Medians do not add up: the stages' p50s may sum to a little more or less than the
    iteration's. The unattributed remainder is therefore taken per iteration from the raw
    samples (the iteration's time less its stages', median over iterations), and left out when
    the raw stage samples are not there. Shares are taken of the stages' p50s plus that
    remainder, so they always add up to 100%."""
    stages = record.stages
    if stages is None:
        return None
    p50 = _stage_values(stages.p50_ms)
    samples = stages.samples_ns
    if not p50 and samples is not None:
        for stage in STAGES:
            values = [v for v in samples.get(stage) or [] if v is not None]
            if values:
                p50[stage] = float(np.percentile(np.asarray(values, dtype=np.float64), 50)) / 1e6
    if stages.unavailable is not None or not p50:
        reason = stages.unavailable or "no stage times recorded"
        return StageSummary(record, {}, {}, {}, p50_of(record), 0.0, {}, reason)
    boundaries = {k: v for k, v in (stages.boundaries or {}).items() if v is not None}
    total = p50_of(record)
    attributed = sum(p50.values())
    remainder = _per_iteration_remainder(record, samples)
    whole = attributed + remainder
    shares = {s: v / whole for s, v in p50.items()} if whole > 0 else {}
    if remainder > 0 and whole > 0:
        shares[UNATTRIBUTED] = remainder / whole
    return StageSummary(
        record, p50, _stage_values(stages.p99_ms), shares, total, remainder, boundaries
    )


def stage_summaries(records: Sequence[Record]) -> list[StageSummary]:
    """The stage breakdowns of the ok records that have one, in record order."""
    return [s for r in ok_records(records) if (s := stage_summary(r)) is not None]


# ---------------------------------------------------------------------------------------------
# Op profiles


@dataclass(frozen=True)
class Op:
    """One profiled op that has a time; ``count`` is its calls per iteration (1 if unsaid)."""

    name: str
    type: str
    impl: str | None
    time_ms: float
    count: int


@dataclass(frozen=True)
class OpTypeTime:
    """One op family's time in one record: the sum over its ops."""

    family: str
    #: The framework's own type names that fall in the family.
    types: tuple[str, ...]
    time_ms: float
    #: Of the sum of all op times (so a record's shares add up to 1).
    share: float
    #: How many ops (graph nodes) of the family there are.
    ops: int


@dataclass(frozen=True)
class OpBreakdown:
    record: Record
    #: Every op family, slowest first.
    types: list[OpTypeTime]
    #: The slowest single ops, slowest first.
    top_ops: list[Op]
    #: The sum of the op times (ms per profiled iteration).
    total_ms: float
    #: The profiled iterations' inference time, as the framework measured it.
    inference_ms: float | None
    iterations: int | None
    source: str
    unavailable: str | None = None

    def top_types(self, n: int = TOP_N) -> list[OpTypeTime]:
        return self.types[:n]

    def time_of(self, family: str) -> float | None:
        return next((t.time_ms for t in self.types if t.family == family), None)


def op_family(op_type: str) -> str:
    """The family an op type belongs to across frameworks (``OP_FAMILIES``), or the type."""
    key = "".join(ch for ch in op_type.lower() if ch not in "_- ")
    return OP_FAMILIES.get(key, op_type)


def _ops(profiled: Sequence[ProfiledOp] | None) -> list[Op]:
    """The profile's ops that have a time."""
    return [
        Op(op.name or "?", op.type or "?", op.impl, time, 1 if op.count is None else op.count)
        for op in profiled or []
        if (time := as_number(op.time_ms)) is not None
    ]


def op_breakdown(record: Record, top: int = TOP_N) -> OpBreakdown | None:
    """The op profile of one record grouped by op family; None when it has no ``op_profile``."""
    profile = record.op_profile
    if profile is None:
        return None
    source = profile.source or ""
    iterations = profile.iterations
    inference = as_number(profile.inference_ms)
    if profile.unavailable is not None:
        reason = profile.unavailable
        return OpBreakdown(record, [], [], 0.0, inference, iterations, source, reason)
    ops = _ops(profile.ops)
    total = sum(op.time_ms for op in ops)
    families: dict[str, list[Op]] = {}
    for op in ops:
        families.setdefault(op_family(op.type), []).append(op)
    types = [
        OpTypeTime(
            family,
            tuple(dict.fromkeys(op.type for op in members)),
            time := sum(op.time_ms for op in members),
            time / total if total > 0 else 0.0,
            len(members),
        )
        for family, members in families.items()
    ]
    types.sort(key=lambda t: -t.time_ms)
    top_ops = sorted(ops, key=lambda op: -op.time_ms)[:top]
    return OpBreakdown(record, types, top_ops, total, inference, iterations, source)


#: Each profiler times its ops inside the inferences its profile's ``inference_ms`` times, so a
#: correct sum stays below it (0.2-0.97 of it measured on x86 for ONNX Runtime, OpenVINO and
#: MNN). It may pass it only by the two clocks' jitter (this share of the inference) and by
#: rounding: whole microseconds per op call in the framework APIs, 0.001 ms per printed row in
#: the native tools (``OP_ROUNDING_MS`` per call).
OP_SUM_TOLERANCE = 0.10
OP_ROUNDING_MS = 0.001


def op_sum_warning(profile: OpProfile | dict[str, Any] | None) -> RecordWarning | None:
    """The record warning for an op profile whose ops add up to more than the inference they
    were timed in (past the tolerance above), else None. ``profile`` may be the runner's
    JSON object, as it reported it."""
    if isinstance(profile, dict):
        profile = OpProfile.from_dict(profile)
    if profile is None or profile.unavailable is not None:
        return None
    inference = as_number(profile.inference_ms)
    ops = _ops(profile.ops)
    if not inference or not ops:
        return None
    total = sum(op.time_ms for op in ops)
    slack = inference * OP_SUM_TOLERANCE + OP_ROUNDING_MS * sum(max(1, op.count) for op in ops)
    if total <= inference + slack:
        return None
    return OPS_OUTWEIGH_INFERENCE.make(
        total_ms=total, inference_ms=inference, source=profile.source
    )


def op_breakdowns(records: Sequence[Record], top: int = TOP_N) -> list[OpBreakdown]:
    """The op breakdowns of the ok records that have one, in record order."""
    return [b for r in ok_records(records) if (b := op_breakdown(r, top)) is not None]


@dataclass(frozen=True)
class OpComparison:
    """Several records' op families side by side (one model on one device)."""

    columns: list[OpBreakdown]
    #: Index in ``columns`` of the slowest record (by p50, else by its op total).
    slowest: int
    #: Every family, ordered by the slowest record's time, then the others by their largest.
    families: list[str]
    #: Per family, the index of the column that spends the most time in it.
    worst: dict[str, int]
    #: (family, ms): where the slowest record spends more than the fastest other column that
    #: reports the family (all its time when none does), largest first.
    excess: list[tuple[str, float]]


def compare_ops(breakdowns: Sequence[OpBreakdown], top: int = 3) -> OpComparison | None:
    """Columns with op times side by side; None when none of them has any op."""
    columns = [b for b in breakdowns if b.unavailable is None and b.types]
    if not columns:
        return None

    def slowness(b: OpBreakdown) -> float:
        return p50_of(b.record) or b.total_ms

    slowest = max(range(len(columns)), key=lambda i: slowness(columns[i]))
    times = [{t.family: t.time_ms for t in b.types} for b in columns]
    others = {f for t in times for f in t} - set(times[slowest])
    families = [t.family for t in columns[slowest].types] + sorted(
        others, key=lambda f: -max(t.get(f, 0.0) for t in times)
    )
    worst = {f: max(range(len(columns)), key=lambda i: times[i].get(f, 0.0)) for f in families}
    excess: list[tuple[str, float]] = []
    if len(columns) > 1:
        for family, ms in times[slowest].items():
            # Against the fastest other column that reports the family; when none does (an op
            # of that framework's own, or one the others fuse away), all of its time counts.
            known = [t[family] for i, t in enumerate(times) if i != slowest and family in t]
            if (gap := ms - min(known, default=0.0)) > 0:
                excess.append((family, gap))
        excess.sort(key=lambda item: -item[1])
    return OpComparison(columns, slowest, families, worst, excess[:top])


def op_comparisons(records: Sequence[Record]) -> dict[tuple[str, str], OpComparison]:
    """(model, device) -> its op comparison, frameworks in display order."""
    groups: dict[tuple[str, str], list[OpBreakdown]] = {}
    for b in op_breakdowns(records):
        groups.setdefault((b.record.model, b.record.device), []).append(b)
    out = {}
    for key, group in groups.items():
        order = display_order(b.record.framework for b in group)
        group.sort(key=lambda b: order.index(b.record.framework))
        if (comparison := compare_ops(group)) is not None:
            out[key] = comparison
    return out
