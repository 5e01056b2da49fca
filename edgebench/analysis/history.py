"""Across stored runs: an index of runs and one cell's metric over time (text and SVG)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from edgebench.analysis.compare import lower_is_better, metric_names, metric_value
from edgebench.results.store import ResultsStore, RunDir


@dataclass
class RunSummary:
    run_id: str
    created_at: str | None
    git_sha: str | None
    lab_path: str | None
    plan: str | None
    devices: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    n_records: int = 0
    status: str | None = None


@dataclass
class HistoryPoint:
    run_id: str
    created_at: str | None
    #: The metric of the best ok cell in that run; None when no cell was ok.
    value: float | None
    status: str
    cell_id: str | None = None


def _plan_name(plan: Any) -> str | None:
    if plan is None:
        return None
    if isinstance(plan, dict):
        name = plan.get("name") or plan.get("path")
        return None if name is None else str(name)
    return str(plan)


def _runs_in_time_order(store: ResultsStore) -> list[tuple[RunDir, dict[str, Any]]]:
    """Runs with their metadata, by ``created_at`` then run id (ids created in the same second
    sort by their random suffix, not by time)."""
    runs = [(run, run.metadata()) for run in store.runs()]
    return sorted(runs, key=lambda rm: (str(rm[1].get("created_at") or ""), rm[0].run_id))


def build_index(store: ResultsStore) -> list[RunSummary]:
    """One summary per stored run, oldest first."""
    out = []
    for run, meta in _runs_in_time_order(store):
        records = run.records()
        devices = sorted({r.device for r in records})
        if not devices and isinstance(meta.get("devices"), dict):
            devices = sorted(meta["devices"])
        models = sorted({r.model for r in records})
        if not models and isinstance(meta.get("models"), dict):
            models = sorted(meta["models"])
        lab = meta.get("lab_path") or meta.get("lab")
        out.append(
            RunSummary(
                run_id=run.run_id,
                created_at=meta.get("created_at"),
                git_sha=meta.get("git_sha"),
                lab_path=None if lab is None else str(lab),
                plan=_plan_name(meta.get("plan")),
                devices=devices,
                models=models,
                n_records=len(records),
                status=meta.get("status"),
            )
        )
    return out


def history(
    store: ResultsStore, device: str, model: str, framework: str, metric: str = "p50"
) -> list[HistoryPoint]:
    """The metric for device/model/framework in every run that has such a cell, oldest first.

    When a run swept several cells (threads, cores, ...) the best ok one is used; a run with
    cells but none ok gives a point with ``value=None`` and the first cell's status.
    """
    if metric not in metric_names():
        raise ValueError(f"unknown metric {metric!r}; one of {metric_names()}")
    lower = lower_is_better(metric)
    points = []
    for run, meta in _runs_in_time_order(store):
        cells = [
            r
            for r in run.records()
            if r.device == device and r.model == model and r.framework == framework
        ]
        if not cells:
            continue
        created = meta.get("created_at")
        ok = [
            (v, r) for r in cells if r.status == "ok" and (v := metric_value(r, metric)) is not None
        ]
        if ok:
            value, best = (min if lower else max)(ok, key=lambda vr: vr[0])
            points.append(HistoryPoint(run.run_id, created, value, "ok", best.cell_id))
        else:
            points.append(
                HistoryPoint(run.run_id, created, None, cells[0].status, cells[0].cell_id)
            )
    return points


def format_history(points: list[HistoryPoint]) -> str:
    if not points:
        return "no runs with this cell"
    headers = ["run", "created", "value", "change", "status", "cell"]
    rows = []
    prev: float | None = None
    for p in points:
        change = "-"
        if p.value is not None and prev:
            change = f"{p.value / prev - 1:+.1%}"
        rows.append(
            [
                p.run_id,
                p.created_at or "-",
                "-" if p.value is None else f"{p.value:.4g}",
                change,
                p.status,
                p.cell_id or "-",
            ]
        )
        if p.value is not None:
            prev = p.value
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def plot_history(
    points: list[HistoryPoint], path: Path, *, title: str = "", unit: str = ""
) -> Path:
    """A self-contained SVG line chart; runs without an ok value are red marks on the axis."""
    width, height = 720, 360
    left, right, top, bottom = 70, 20, 40, 80
    pw, ph = width - left - right, height - top - bottom
    values = [p.value for p in points if p.value is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi == lo:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    else:
        pad = (hi - lo) * 0.1
        lo, hi = max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad

    def x_of(i: int) -> float:
        return left + (pw / 2 if len(points) <= 1 else pw * i / (len(points) - 1))

    def y_of(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
        f"{escape(title or 'history')}</text>",
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        y = y_of(v)
        svg.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        svg.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.4g}</text>')
    svg.append(
        f'<line x1="{left}" y1="{top + ph}" x2="{width - right}" y2="{top + ph}" stroke="#333"/>'
    )
    svg.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>')
    if unit:
        svg.append(
            f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" '
            f'text-anchor="middle">{escape(unit)}</text>'
        )
    coords = [(x_of(i), y_of(p.value)) for i, p in enumerate(points) if p.value is not None]
    if len(coords) > 1:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        svg.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for i, p in enumerate(points):
        x = x_of(i)
        label = escape(p.run_id)
        if p.value is None:
            y = top + ph
            svg.append(
                f'<path d="M{x - 4:.1f},{y - 4:.1f} l8,8 m0,-8 l-8,8" stroke="#d62728" '
                f'stroke-width="2"><title>{label}: {escape(p.status)}</title></path>'
            )
        else:
            svg.append(
                f'<circle cx="{x:.1f}" cy="{y_of(p.value):.1f}" r="3.5" fill="#1f77b4">'
                f"<title>{label}: {p.value:.4g}</title></circle>"
            )
        ty = top + ph + 12
        svg.append(
            f'<text x="{x:.1f}" y="{ty}" text-anchor="end" '
            f'transform="rotate(-35 {x:.1f} {ty})">{escape((p.created_at or p.run_id)[:19])}</text>'
        )
    svg.append("</svg>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(svg) + "\n", encoding="utf-8")
    return path
