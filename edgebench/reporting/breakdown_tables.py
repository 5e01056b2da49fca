"""The breakdown sections as plain tables: stages, top operators, memory vs instances and
latency vs input size (analysis.breakdowns computes the figures).

The Markdown report prints these tables as they are; the HTML report prints the same tables
and adds the charts (reporting.breakdowns). Cells are plain text: each writer escapes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from edgebench.analysis.breakdown_series import (
    InstancePoint,
    SeriesKey,
    cliffs,
    first_input_dims,
    memory_series,
    scaling,
    shape_series,
)
from edgebench.analysis.breakdowns import (
    STAGES,
    UNATTRIBUTED,
    OpBreakdown,
    OpComparison,
    StageSummary,
    op_comparisons,
    p50_of,
    stage_summaries,
)
from edgebench.analysis.ranking import correctness_only
from edgebench.frameworks import display_order
from edgebench.reporting.matrix import emulated_mark
from edgebench.reporting.tables import fmt_number
from edgebench.results.breakdown_parts import OpProfile, Stages
from edgebench.results.records import Record
from edgebench.statuses import Status

STAGES_TITLE = "Where the time goes: stages"
OPS_TITLE = "Top operators"
MEMORY_TITLE = "Memory vs instances"
SHAPES_TITLE = "Latency vs input size"
#: Op types shown per comparison; the rest are summed in one row.
OP_ROWS = 15
#: What marks the framework with the most time in an op type.
WORST_MARK = " ▲"
TOP_OP_HEADER = ("#", "op", "type", "impl", "ms", "share")
T = TypeVar("T")
_STAGE_HEADS = {"copy_in": "copy-in", "compute": "compute", "copy_out": "copy-out"}


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    #: (row, column) of the cells to highlight.
    marked: set[tuple[int, int]] = field(default_factory=set)


@dataclass
class Section:
    title: str
    tables: list[Table]
    #: ``device / framework: why`` for the records that could not measure the breakdown.
    unavailable: list[str] = field(default_factory=list)


def pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def ms_share(ms: float | None, share: float | None) -> str:
    return f"{fmt_number(ms)} ({pct(share)})"


def framework_text(r: Record) -> str:
    return r.engine + (emulated_mark(r) if correctness_only(r) else "")


def settings_of(records: Sequence[Record]) -> list[str]:
    """Per record, what sets it apart from the others in the list (precision, threads, cores,
    streams or instances, input shape); "" where nothing does."""

    def parts(r: Record) -> dict[str, str]:
        streams = f"s{r.concurrency}" if r.concurrency != 1 else ""
        if r.instances is not None:
            streams = f"{r.instances.count} {r.instances.mode}"
        dims = first_input_dims(r.inputs)
        shape = "x".join(str(d) for d in dims) if dims else ""
        if r.shape is not None and r.shape.mode:
            shape = f"{shape} {r.shape.mode}".strip()
        return {
            "precision": r.precision,
            "threads": f"{r.threads}t",
            "cores": f"cores {r.cores}",
            "streams": streams,
            "shape": shape,
        }

    all_parts = [parts(r) for r in records]
    varying = [k for k in all_parts[0] if len({p[k] for p in all_parts}) > 1] if records else []
    return [" · ".join(p[k] for k in varying if p[k]) for p in all_parts]


def key_settings(keys: Sequence[SeriesKey]) -> list[str]:
    """Per series, its precision and setting where the series in the list differ in them."""
    show_precision = len({k.precision for k in keys}) > 1
    show_setting = len({k.setting for k in keys}) > 1
    return [
        " · ".join(
            p
            for p in (k.precision if show_precision else "", k.setting if show_setting else "")
            if p
        )
        for k in keys
    ]


def _with_setting(
    header: list[str], rows: list[list[str]], settings: Sequence[str], at: int
) -> tuple[list[str], list[list[str]]]:
    """Insert a "setting" column at ``at`` when any row has one."""
    if not any(settings):
        return header, rows
    return (
        [*header[:at], "setting", *header[at:]],
        [[*row[:at], s, *row[at:]] for row, s in zip(rows, settings, strict=True)],
    )


def unavailable_reasons(records: Sequence[Record], name: str) -> list[str]:
    """``device / model / framework: why`` for the ok records whose breakdown part ``name``
    (``stages``, ``op_profile``) says it is unavailable."""
    out = []
    for r in records:
        part: Stages | OpProfile | None = getattr(r, name)
        if r.status == Status.OK and part is not None and part.unavailable is not None:
            out.append(f"{r.device} / {r.model} / {r.engine}: {part.unavailable}")
    return list(dict.fromkeys(out))


def _by_model(items: Sequence[T], model: Callable[[T], str]) -> dict[str, list[T]]:
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(model(item), []).append(item)
    return groups


# ---------------------------------------------------------------------------------------------
# Stages


def stage_tables(records: Sequence[Record]) -> list[tuple[Table, list[StageSummary]]]:
    """Per model: a row per record with stage times, and the summaries behind the rows."""
    measured = [s for s in stage_summaries(records) if s.unavailable is None and s.shares]
    out = []
    for model, group in _by_model(measured, lambda s: s.record.model).items():
        order = display_order(s.record.engine for s in group)
        group.sort(key=lambda s: (s.record.device, order.index(s.record.engine)))
        remainder = any(s.remainder_ms > 0 for s in group)
        header = ["device", "framework", *(f"{_STAGE_HEADS[s]} ms (%)" for s in STAGES)]
        header += ["unattributed ms (%)"] * remainder + ["p50 ms"]
        rows = []
        for s in group:
            row = [s.record.device, framework_text(s.record)]
            for stage in STAGES:
                merged = stage not in s.p50_ms
                row.append("merged" if merged else ms_share(s.p50_ms[stage], s.shares[stage]))
            if remainder:
                row.append(ms_share(s.remainder_ms, s.shares.get(UNATTRIBUTED, 0.0)))
            row.append(fmt_number(s.total_ms))
            rows.append(row)
        header, rows = _with_setting(header, rows, settings_of([s.record for s in group]), 2)
        notes = []
        for framework in order:
            seen = {
                tuple(s.boundaries.items())
                for s in group
                if s.record.engine == framework and s.boundaries
            }
            for boundaries in sorted(seen):
                text = "; ".join(f"{_STAGE_HEADS.get(k, k)}: {v}" for k, v in boundaries)
                notes.append(f"{framework}: {text}")
        caption = (
            "p50 of each stage (its share; shares add up to 100%); "
            + (
                "unattributed = per iteration, its time less its stages' (median over "
                "iterations, from the raw samples); "
                if remainder
                else ""
            )
            + "merged = the framework does that stage inside another (see its boundaries below)"
        )
        out.append((Table(model, header, rows, caption, notes), group))
    return out


# ---------------------------------------------------------------------------------------------
# Top operators


def _family_label(comparison: OpComparison, family: str) -> str:
    names = {
        name
        for b in comparison.columns
        for t in b.types
        if t.family == family
        for name in t.types
        if name != family
    }
    return f"{family} ({', '.join(sorted(names))})" if names else family


def top_op_rows(breakdown: OpBreakdown) -> list[list[str]]:
    """A row per slowest single op, under ``TOP_OP_HEADER``."""
    total = breakdown.total_ms
    return [
        [
            str(rank),
            op.name,
            op.type,
            op.impl or "-",
            fmt_number(op.time_ms),
            pct(op.time_ms / total if total else None),
        ]
        for rank, op in enumerate(breakdown.top_ops, 1)
    ]


def op_tables(records: Sequence[Record]) -> list[tuple[Table, Table, OpComparison]]:
    """Per (model, device): op types side by side, and each framework's slowest ops."""
    out = []
    for (model, device), comparison in op_comparisons(records).items():
        columns = comparison.columns
        labels = [framework_text(b.record) for b in columns]
        settings = settings_of([b.record for b in columns])
        labels = [f"{lb} {s}".strip() for lb, s in zip(labels, settings, strict=True)]
        rows: list[list[str]] = []
        marked: set[tuple[int, int]] = set()
        shown = comparison.families[:OP_ROWS]
        for family in shown:
            row = [_family_label(comparison, family)]
            for i, b in enumerate(columns):
                t = next((t for t in b.types if t.family == family), None)
                cell = "-" if t is None else ms_share(t.time_ms, t.share)
                if len(columns) > 1 and t is not None and comparison.worst[family] == i:
                    marked.add((len(rows), i + 1))
                    cell += WORST_MARK
                row.append(cell)
            rows.append(row)
        rest = comparison.families[OP_ROWS:]
        if rest:
            row = [f"{len(rest)} other types"]
            for b in columns:
                left = [t for t in b.types if t.family in rest]
                row.append(
                    ms_share(sum(t.time_ms for t in left), sum(t.share for t in left))
                    if left
                    else "-"
                )
            rows.append(row)
        rows.append(["all ops", *(fmt_number(b.total_ms) for b in columns)])
        rows.append(["inference (profiled)", *(fmt_number(b.inference_ms) for b in columns)])
        rows.append(["p50 (timed)", *(fmt_number(p50_of(b.record)) for b in columns)])
        slow = columns[comparison.slowest]
        caption = (
            "ms per profiled iteration (share of the framework's op time); rows ordered by "
            f"the slowest, {labels[comparison.slowest]}"
            + ("; ▲ = the framework with the most time in that op type" if marked else "")
        )
        notes = []
        if comparison.excess:
            gaps = ", ".join(f"{f} (+{fmt_number(ms)} ms)" for f, ms in comparison.excess)
            others = ", ".join(
                f"{fmt_number(p50_of(b.record))} ms for {labels[i]}"
                for i, b in enumerate(columns)
                if i != comparison.slowest
            )
            notes.append(
                f"{labels[comparison.slowest]} is the slowest (p50 "
                f"{fmt_number(p50_of(slow.record))} ms against {others}); the op types where "
                f"it spends most over the fastest other framework: {gaps}"
            )
        sources: dict[str, list[str]] = {}
        for label, b in zip(labels, columns, strict=True):
            text = f"{b.source or 'profile'}, {b.iterations or '?'} profiled iterations"
            sources.setdefault(text, []).append(label)
        notes += [f"{', '.join(names)}: {text}" for text, names in sources.items()]
        types = Table(f"{model} · {device}", ["op type", *labels], rows, caption, notes, marked)
        top = Table(
            f"{model} · {device}: slowest single ops",
            ["framework", *TOP_OP_HEADER],
            [
                [label, *row]
                for label, b in zip(labels, columns, strict=True)
                for row in top_op_rows(b)
            ],
        )
        out.append((types, top, comparison))
    return out


# ---------------------------------------------------------------------------------------------
# Series


def memory_tables(records: Sequence[Record]) -> dict[str, Table]:
    """Per model: a row per (series, instance count)."""
    out = {}
    series = memory_series(records)
    for model, keys in _by_model(list(series), lambda k: k.model).items():
        settings = key_settings(keys)
        rows = [
            [k.device, k.framework, k.mode, _instances_text(p), fmt_number(p.rss_running_mb),
             fmt_number(p.per_instance_mb), fmt_number(p.p50_ms), fmt_number(p.throughput_ips)]
            for k in keys
            for p in series[k]
        ]  # fmt: skip
        header = ["device", "framework", "mode", "N", "RSS running MB", "per instance MB",
                  "p50 ms", "throughput inf/s"]  # fmt: skip
        row_settings = [s for k, s in zip(keys, settings, strict=True) for _ in series[k]]
        header, rows = _with_setting(header, rows, row_settings, 2)
        caption = (
            "N instances in one process: separate = N loads of the model, shared = one load "
            "serving N streams; p50, throughput and RSS measured with the N running, except "
            "where N says how many were inferring at once (fewer: the record warns)"
        )
        out[model] = Table(model, header, rows, caption)
    return out


def _instances_text(point: InstancePoint) -> str:
    """``4``, or ``4 (at most 3 at once)`` when fewer than N were inferring together."""
    if point.fewer_at_once:
        return f"{point.n} (at most {point.at_once} at once)"
    return str(point.n)


def shape_tables(records: Sequence[Record]) -> dict[str, list[Table]]:
    """Per model: a row per (series, input size) with the step from the previous size, and a
    table of the first inference after a change of shape (dynamic cells)."""
    out: dict[str, list[Table]] = {}
    series = shape_series(records)
    for model, keys in _by_model(list(series), lambda k: k.model).items():
        settings = key_settings(keys)
        rows: list[list[str]] = []
        changes: list[list[str]] = []
        row_settings: list[str] = []
        change_settings: list[str] = []
        marked: set[tuple[int, int]] = set()
        for key, setting in zip(keys, settings, strict=True):
            points = series[key]
            found = {(c.before, c.after): c for c in cliffs(points)}
            for i, p in enumerate(points):
                step = ""
                if i and (ratios := scaling(points[i - 1], p)) is not None:
                    cliff = found.get((points[i - 1], p))
                    if cliff is not None:
                        marked.add((len(rows), 6))
                        step = cliff.describe()
                    else:
                        step = f"latency x{ratios[0]:.1f} for pixels x{ratios[1]:.1f}"
                rows.append(
                    [key.device, key.framework, key.mode, p.label, str(p.pixels),
                     fmt_number(p.p50_ms), step]
                )  # fmt: skip
                row_settings.append(setting)
                if p.resize_ms is not None or p.first_ms is not None:
                    changes.append(
                        [key.device, key.framework, p.label, p.from_label or "-",
                         fmt_number(p.resize_ms), fmt_number(p.first_ms), fmt_number(p.p50_ms)]
                    )  # fmt: skip
                    change_settings.append(setting)
        header = ["device", "framework", "mode", "shape", "pixels", "p50 ms", "step"]
        if any(row_settings):
            marked = {(r, c + 1) for r, c in marked}
        header, rows = _with_setting(header, rows, row_settings, 2)
        caption = (
            "fixed = an artifact converted for that shape, dynamic = one artifact resized at "
            "run time; step = latency and pixel ratios from the previous size (a cliff when "
            "latency grows more than 1.5x faster than the pixels)"
        )
        out[model] = [Table(model, header, rows, caption, marked=marked)]
        if changes:
            header = ["device", "framework", "shape", "from", "resize ms", "first ms",
                      "steady p50 ms"]  # fmt: skip
            header, changes = _with_setting(header, changes, change_settings, 2)
            caption = (
                "dynamic cells: resizing from the previous shape and the first inference "
                "after it, against the steady p50 at that shape"
            )
            title = f"{model}: first inference after a shape change"
            out[model].append(Table(title, header, changes, caption))
    return out


def breakdown_report(records: Sequence[Record]) -> list[Section]:
    """The four sections, each only when some record has its data."""
    sections = [
        Section(
            STAGES_TITLE,
            [t for t, _ in stage_tables(records)],
            unavailable_reasons(records, "stages"),
        ),
        Section(
            OPS_TITLE,
            [t for pair in op_tables(records) for t in pair[:2]],
            unavailable_reasons(records, "op_profile"),
        ),
        Section(MEMORY_TITLE, list(memory_tables(records).values())),
        Section(SHAPES_TITLE, [t for tables in shape_tables(records).values() for t in tables]),
    ]
    return [s for s in sections if s.tables or s.unavailable]
