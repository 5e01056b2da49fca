"""Device x framework tables from records: what `run` and `show` print.

Also how records are laid out in such tables (groups, framework order, status words), which the
HTML and Markdown reports share. The figures shown are the stored ones (``Metric.stored``).
"""

from __future__ import annotations

from collections.abc import Sequence

from edgebench.analysis.metrics import get_metric
from edgebench.frameworks import display_order
from edgebench.reporting.tables import fmt_number, format_table
from edgebench.results.records import Record
from edgebench.statuses import Status

GroupKey = tuple[str, str, int, str, int]

# Skipped cells say why in one or two words; other statuses speak for themselves.
SKIP_LABELS = {
    "not_installed": "not installed",
    "toolchain_missing": "no toolchain",
    "other_format": "-",
}
STATUS_LABELS = {
    Status.SKIPPED: "skipped",
    Status.FAILED: "FAILED",
    Status.UNSUPPORTED: "unsupported",
    Status.MISMATCH: "MISMATCH",
}


def _fmt(value: float | None) -> str:
    return fmt_number(value, tiny=".2f")


def framework_order(records: Sequence[Record]) -> list[str]:
    """Known frameworks in their registry order, then any others as they first appear."""
    return display_order(r.framework for r in records)


def group_records(records: Sequence[Record]) -> dict[GroupKey, list[Record]]:
    """One table per model, precision, threads, cores and streams, in order of appearance."""
    groups: dict[GroupKey, list[Record]] = {}
    for r in records:
        groups.setdefault((r.model, r.precision, r.threads, r.cores, r.concurrency), []).append(r)
    return groups


def group_title(key: GroupKey) -> str:
    model, precision, threads, cores, concurrency = key
    parts = [model, precision, f"{threads} thread{'s' if threads != 1 else ''}", f"cores {cores}"]
    if concurrency != 1:
        parts.append(f"{concurrency} streams")
    return " · ".join(parts)


def status_word(r: Record) -> str:
    """What a report cell says for a record: its status, or for a skip the short reason."""
    if r.status == Status.SKIPPED:
        return SKIP_LABELS.get(r.error_kind or "", "skipped")
    return r.status


def format_matrix(records: Sequence[Record], metric_name: str = "p50") -> str:
    metric = get_metric(metric_name)
    frameworks = framework_order(records)
    out: list[str] = []
    for key, group in group_records(records).items():
        devices = list(dict.fromkeys(r.device for r in group))
        rows = []
        for device in devices:
            cells = {r.framework: r for r in group if r.device == device}
            values = {f: metric.stored(r) for f, r in cells.items() if r.status == Status.OK}
            ranked = [v for v in values.values() if v is not None]
            best = (min(ranked) if metric.lower_is_better else max(ranked)) if ranked else None
            row = [device]
            for framework in frameworks:
                record = cells.get(framework)
                if record is None:
                    row.append("")
                elif record.status == Status.SKIPPED:
                    row.append(status_word(record))
                elif record.status != Status.OK:
                    row.append(STATUS_LABELS.get(record.status, record.status))
                else:
                    value = values.get(framework)
                    mark = "*" if value is not None and value == best and len(ranked) > 1 else ""
                    if value is None and record.native and (record.latency_ms or {}).get("mean"):
                        # A native tool that printed no percentiles: show its average, labelled.
                        row.append(_fmt(record.latency_ms["mean"]) + " avg")
                    else:
                        row.append(_fmt(value) + mark)
            rows.append(row)
        out.append(f"{group_title(key)} — {metric.label} ({metric.unit}), * = best on the device")
        out.extend(format_table(["device", *frameworks], rows))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def format_details(records: Sequence[Record]) -> str:
    """Every cell with its full statistics, then the reasons for cells that did not run."""
    header = ["cell", "status", "p50", "p90", "p99", "cv", "inf/s", "peak MB", "mJ/inf", "n"]
    rows = []
    notes = []
    skipped: dict[str, str] = {}
    energy_gaps: dict[str, str] = {}
    for r in records:
        if r.status == Status.SKIPPED:
            skipped.setdefault(f"{r.framework} on {r.device}", r.error or "skipped")
            continue
        lat = r.latency_ms or {}
        cv = lat.get("cv")
        rows.append(
            [
                f"{r.device}/{r.model}/{r.framework}",
                r.status,
                _fmt(lat.get("p50")),
                _fmt(lat.get("p90")),
                _fmt(lat.get("p99")),
                "-" if cv is None else f"{cv:.1%}",
                _fmt(r.throughput_ips),
                _fmt(r.peak_rss_mb),
                _fmt(r.energy_mj_per_inf) + ("!" if r.energy_flags and r.energy_mj_per_inf else ""),
                str(r.n_samples or "-"),
            ]
        )
        if r.error and r.status != Status.SKIPPED:
            notes.append(f"  {r.device}/{r.model}/{r.framework}: {r.error}")
        notes.extend(f"  {r.device}/{r.model}/{r.framework}: warning: {w}" for w in r.warnings)
        if r.sustained:
            notes.append(
                f"  {r.device}/{r.model}/{r.framework}: {_describe_sustained(r.sustained)}"
            )
        unavailable = [f for f in r.energy_flags if f.startswith("energy unavailable")]
        if unavailable:
            energy_gaps.setdefault(r.device, unavailable[0][:160])
        notes.extend(
            f"  {r.device}/{r.model}/{r.framework}: energy: {f}"
            for f in r.energy_flags
            if not f.startswith("energy unavailable")
        )
    lines = format_table(header, rows) if rows else []
    if skipped:
        lines += ["", "skipped:", *(f"  {reason}" for reason in skipped.values())]
    if energy_gaps:
        lines += ["", "energy:", *(f"  {d}: {why}" for d, why in energy_gaps.items())]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines) + "\n"


def _describe_sustained(data: dict) -> str:
    from edgebench.analysis.sustained import SustainedSummary

    return SustainedSummary(**data).describe()
