"""Plain-text renderings of analysis results: compare verdicts, a recommendation, history."""

from __future__ import annotations

from collections.abc import Sequence

from edgebench.analysis.compare import (
    DIFFERENT_CLOCK_REGIMES,
    VERDICTS,
    CellVerdict,
    regime_reason,
)
from edgebench.analysis.history import HistoryPoint, RunSummary
from edgebench.analysis.metrics import Metric, get_metric
from edgebench.analysis.ranking import EMULATED_CPU, EMULATED_RULE
from edgebench.analysis.recommend import Recommendation, cell_suffix
from edgebench.reporting.tables import fmt_or_dash, format_table
from edgebench.terminal import printable_lines


def format_comparison(verdicts: Sequence[CellVerdict]) -> str:
    """A plain-text table, one row per cell, and a one-line summary. The base and new columns
    hold the compared metric, named with its unit in their headings; where cells were judged
    on different metrics (a generative cell's throughput is its decode speed), each value
    carries its own unit instead."""
    judged = list(dict.fromkeys((v.metric, v.value_unit) for v in verdicts)) or [("p50", "ms")]
    one = judged[0] if len(judged) == 1 else None
    heads = [f"{side} {one[0]} {one[1]}" if one else side for side in ("base", "new")]
    headers = ["cell", "verdict", *heads, "ratio", "95% CI", "p", "reason"]
    rows = []
    for v in verdicts:
        metric = get_metric(v.metric)
        value_format = ".3f" if metric.sampled else ".4g"
        unit = "" if one else f" {v.value_unit}"
        ci = "-" if v.ci_low is None else f"{v.ci_low:.3f}..{v.ci_high:.3f}"
        rows.append(
            [
                v.cell_id,
                v.verdict,
                "-" if v.base_value is None else f"{v.base_value:{value_format}}{unit}",
                "-" if v.new_value is None else f"{v.new_value:{value_format}}{unit}",
                fmt_or_dash(v.ratio, ".3f"),
                ci,
                fmt_or_dash(v.p_value, ".2g"),
                f"{DIFFERENT_CLOCK_REGIMES} (below)" if v.regime_changes else v.reason,
            ]
        )
    out = format_table(headers, rows, right={2, 3, 4, 6})
    counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in VERDICTS}
    out.append("")
    out.append(", ".join(f"{counts[k]} {k}" for k in VERDICTS if counts[k]) or "no cells")
    return printable_lines(out + _regime_lines(verdicts))


def _regime_lines(verdicts: Sequence[CellVerdict]) -> list[str]:
    """Each change of clock regime once, with how many cells it kept from being compared."""
    cells: dict[tuple[str, ...], int] = {}
    for v in verdicts:
        if v.regime_changes:
            key = tuple(v.regime_changes)
            cells[key] = cells.get(key, 0) + 1
    return [
        f"{count} {'cell' if count == 1 else 'cells'} not comparable, "
        f"{regime_reason(list(changes))}"
        for changes, count in cells.items()
    ]


def format_recommendation(rec: Recommendation) -> str:
    """One table (a row per framework, a column per device showing value, rank and chosen
    cell; * marks the recommendation, ≈ the frameworks of a tie; a refused emulated device
    shows only whether the framework ran ok there), then the reasoning lines."""
    unit = rec.unit or get_metric(rec.metric).bare_unit
    headers = ["#", "framework", f"worst {rec.metric}", "mean rank"]
    if rec.budgeted:
        limits = [f"{rec.budget_ms:g}ms"] if rec.budget_ms is not None else []
        limits += [f"{rec.budget_mb:g}MB"] if rec.budget_mb is not None else []
        headers.append(f"budget {' '.join(limits)}")
    headers += [*rec.devices, *(f"{d} (emulated)" for d in rec.refused), "note"]
    rows = []
    for s in rec.table:
        row = [
            str(s.position),
            s.framework
            + (" *" if s.framework == rec.best else " ≈" if s.framework in rec.tied else ""),
            "-" if s.worst is None else f"{s.worst:.4g} {unit}",
            fmt_or_dash(s.mean_rank, ".2f"),
        ]
        if rec.budgeted:
            row.append(f"{len(s.devices_meeting_budget)}/{len(rec.devices)}")
        for dev in rec.devices:
            r = s.per_device.get(dev)
            if r is None:
                row.append(f"no {rec.metric}" if dev in s.without_value else "no ok cell")
            else:
                mark = "" if r.meets_budget is None else (" ok" if r.meets_budget else " over")
                row.append(f"{r.value:.4g} #{r.rank} [{cell_suffix(r.cell_id)}]{mark}")
        row += [f"{s.emulated.get(dev, 'no cell')}, not ranked" for dev in rec.refused]
        row.append(s.reason if s.missing or s.meets_budget_all is False else "")
        rows.append(row)
    out = [*format_table(headers, rows), ""] if rows or not rec.refused else []
    if rec.tied:
        out.append(f"recommendation: none, a tie between {', '.join(rec.tied)} (≈)")
    elif rec.refused and not rec.devices:
        out.append("recommendation: none, refused: every listed device has an emulated CPU")
    else:
        out.append(f"recommendation: {rec.best or 'none'}")
    out += [f"  - {r}" for r in rec.reasoning]
    return printable_lines(out)


def format_history(points: list[HistoryPoint], metric: str | Metric = "p50") -> str:
    """One row per run with the metric (headed by its name and unit: pass the cell's
    ``judged_metric`` for its kind's unit) and its change from the previous ok run of the same
    series; one table per series (precision, ...), headed by its name when there are
    several."""
    if not points:
        return "no runs with this cell"
    series = list(dict.fromkeys(p.series for p in points))
    out: list[str] = []
    for name in series:
        if len(series) > 1:
            out += [*([""] if out else []), f"{name}:"]
        shown = metric if isinstance(metric, Metric) else get_metric(metric)
        out += _history_table([p for p in points if p.series == name], shown)
    for kind in sorted({p.correctness_only for p in points} - {""}):
        article = "an" if kind == EMULATED_CPU else "a"
        out.append(f"({kind}): measured on {article} {kind}, {EMULATED_RULE}")
    return printable_lines(out)


def _history_table(points: list[HistoryPoint], metric: Metric) -> list[str]:
    headers = ["run", "created", f"{metric.name} ({metric.bare_unit})", "change", "status", "cell"]
    rows = []
    # The previous value per kind: a change between an emulated (or software) and a real
    # measurement means nothing, so each is compared with the last of its own kind.
    prev: dict[str, float] = {}
    for p in points:
        change = "-"
        if p.value is not None and prev.get(p.correctness_only):
            change = f"{p.value / prev[p.correctness_only] - 1:+.1%}"
        rows.append(
            [
                p.run_id,
                p.created_at or "-",
                fmt_or_dash(p.value, ".4g"),
                change,
                f"{p.status} ({p.correctness_only})" if p.correctness_only else p.status,
                p.cell_id or "-",
            ]
        )
        if p.value is not None:
            prev[p.correctness_only] = p.value
    return format_table(headers, rows)


def format_run_index(runs: Sequence[RunSummary]) -> list[str]:
    """The stored runs, one line each: date, git sha, plan, lab, devices, cells, status."""
    rows = [
        (
            r.run_id,
            (r.created_at or "-")[:19],
            (r.git_sha or "-")[:10],
            r.plan or "-",
            r.lab_path or "-",
            ",".join(r.devices) or "-",
            str(r.n_records),
            r.status or "-",
        )
        for r in runs
    ]
    header = ("run", "created", "git", "plan", "lab", "devices", "cells", "status")
    return format_table(header, rows, underline=False)
