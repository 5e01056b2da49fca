"""Device x framework tables from records: what `run` and `show` print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from edgebench.results.records import Record
from edgebench.runners.backends import KNOWN_FRAMEWORKS


@dataclass(frozen=True)
class Metric:
    title: str
    unit: str
    value: Callable[[Record], float | None]
    lower_is_better: bool = True


def _latency(key: str) -> Callable[[Record], float | None]:
    return lambda r: (r.latency_ms or {}).get(key)


METRICS: dict[str, Metric] = {
    "p50": Metric("p50 latency", "ms", _latency("p50")),
    "p90": Metric("p90 latency", "ms", _latency("p90")),
    "p99": Metric("p99 latency", "ms", _latency("p99")),
    "mean": Metric("mean latency", "ms", _latency("mean")),
    "throughput": Metric("throughput", "inf/s", lambda r: r.throughput_ips, False),
    "memory": Metric("peak RSS", "MB", lambda r: r.peak_rss_mb),
    "energy": Metric("energy per inference", "mJ", lambda r: r.energy_mj_per_inf),
}

# Skipped cells say why in one or two words; other statuses speak for themselves.
SKIP_LABELS = {
    "not_installed": "not installed",
    "toolchain_missing": "no toolchain",
    "other_format": "-",
}
STATUS_LABELS = {
    "skipped": "skipped",
    "failed": "FAILED",
    "unsupported": "unsupported",
    "mismatch": "MISMATCH",
}


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _framework_order(records: Sequence[Record]) -> list[str]:
    present = list(dict.fromkeys(r.framework for r in records))
    known = [f for f in KNOWN_FRAMEWORKS if f in present]
    return known + [f for f in present if f not in known]


def _group_key(r: Record) -> tuple:
    return (r.model, r.precision, r.threads, r.cores, r.concurrency)


def _group_title(key: tuple, metric: Metric) -> str:
    model, precision, threads, cores, concurrency = key
    parts = [model, precision, f"{threads} thread{'s' if threads != 1 else ''}", f"cores {cores}"]
    if concurrency != 1:
        parts.append(f"{concurrency} streams")
    return f"{' · '.join(parts)} — {metric.title} ({metric.unit}), * = best on the device"


def format_matrix(records: Sequence[Record], metric_name: str = "p50") -> str:
    metric = METRICS[metric_name]
    frameworks = _framework_order(records)
    groups: dict[tuple, list[Record]] = {}
    for record in records:
        groups.setdefault(_group_key(record), []).append(record)
    out: list[str] = []
    for key, group in groups.items():
        devices = list(dict.fromkeys(r.device for r in group))
        rows = []
        for device in devices:
            cells = {r.framework: r for r in group if r.device == device}
            values = {f: metric.value(r) for f, r in cells.items() if r.status == "ok"}
            ranked = [v for v in values.values() if v is not None]
            best = (min(ranked) if metric.lower_is_better else max(ranked)) if ranked else None
            row = [device]
            for framework in frameworks:
                record = cells.get(framework)
                if record is None:
                    row.append("")
                elif record.status == "skipped":
                    row.append(SKIP_LABELS.get(record.error_kind or "", "skipped"))
                elif record.status != "ok":
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
        out.append(_group_title(key, metric))
        out.extend(_table(["device", *frameworks], rows))
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
        if r.status == "skipped":
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
        if r.error and r.status != "skipped":
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
    lines = _table(header, rows) if rows else []
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
