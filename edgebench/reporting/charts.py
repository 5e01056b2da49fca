"""The report's plots, drawn with ``line_chart`` on the chart engine (``reporting/svg.py``):
the HTML report's latency CDF and telemetry traces, and the history trend of one cell across
runs (written as a standalone .svg file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from edgebench.analysis.history import HistoryPoint
from edgebench.reporting import svg
from edgebench.reporting.line_chart import Series, line_chart
from edgebench.results.telemetry_part import TelemetryTrace

__all__ = ["history_svg", "latency_cdf_svg", "plot_history", "telemetry_svgs"]


def latency_cdf_svg(
    samples_ns: Sequence[int], latency_ms: Mapping[str, float] | None, *, hatch: str = ""
) -> str:
    """Empirical CDF of the per-iteration latencies (ms); ``hatch`` (an id unique in the page)
    for samples from an emulated CPU."""
    if not samples_ns:
        return ""
    values = sorted(v / 1e6 for v in samples_ns)
    n = len(values)
    if n > 2000:  # keep the file small: ~2000 evenly spaced quantiles draw the same curve
        idx = [round(i * (n - 1) / 1999) for i in range(2000)]
        xs = [values[i] for i in idx]
        ys: list[float | None] = [(i + 1) / n for i in idx]
    else:
        xs = values
        ys = [(i + 1) / n for i in range(n)]
    marks = [
        (latency_ms[k], k) for k in ("p50", "p99") if latency_ms and latency_ms.get(k) is not None
    ]
    return line_chart(
        f"latency CDF ({n} samples{', emulated CPU' if hatch else ''})",
        [Series("CDF", xs, ys)],
        "latency (ms)",
        "fraction",
        step=True,
        vlines=marks,
        y_range=(0.0, 1.0),
        hatch=hatch,
    )


def telemetry_svgs(telemetry: TelemetryTrace | None, *, hatch: str = "") -> list[str]:
    """Temperature, CPU frequency and power traces, x in seconds from the first sample;
    ``hatch`` (an id prefix unique in the page) for a cell measured on an emulated CPU."""
    if telemetry is None:
        return []
    ts = telemetry.t_perf_ns
    if len(ts) < 2:
        return []
    t0 = ts[0]
    xs = [(t - t0) / 1e9 for t in ts]
    marks = telemetry.marks
    shade = None
    if marks.get("window_start") is not None and marks.get("window_end") is not None:
        shade = ((marks["window_start"] - t0) / 1e9, (marks["window_end"] - t0) / 1e9)

    def hatched(chart: str) -> str:
        return f"{hatch}-{chart}" if hatch else ""

    def series(data: Mapping[str, Sequence[float | None]], scale: float = 1.0) -> list[Series]:
        out = []
        for name, values in data.items():
            ys = [None if v is None else float(v) * scale for v in values[: len(xs)]]
            if any(v is not None for v in ys):
                out.append(Series(str(name), xs[: len(ys)], ys))
        return out

    charts = []
    temps = series(telemetry.temp_c)
    if temps:
        charts.append(
            line_chart("temperature", temps, "time (s)", "°C", shade=shade, hatch=hatched("t"))
        )
    freqs = series(telemetry.freq_khz, 1e-3)
    if freqs:
        charts.append(
            line_chart("CPU frequency", freqs, "time (s)", "MHz", shade=shade, hatch=hatched("f"))
        )
    power = telemetry.power_w
    if power and any(p is not None for p in power):
        ys = [None if p is None else float(p) for p in power[: len(xs)]]
        charts.append(
            line_chart(
                "power",
                [Series("power", xs[: len(ys)], ys)],
                "time (s)",
                "W",
                shade=shade,
                hatch=hatched("p"),
            )
        )
    return [c for c in charts if c]


def history_svg(points: Sequence[HistoryPoint], *, title: str = "", unit: str = "") -> str:
    """One cell's metric across runs: per series (precision, ...) a dot per ok run joined by a
    line (hollow for a run measured on an emulated CPU), a red cross on the x axis for a run
    without an ok value; each run labelled by its date (or id)."""
    runs = list(dict.fromkeys(p.run_id for p in points))
    x_of = {run_id: float(i) for i, run_id in enumerate(runs)}
    first = {p.run_id: p for p in reversed(points)}
    values = [p.value for p in points if p.value is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    low, high = svg.padded(lo, hi, 0.1)
    trends = []
    for name in dict.fromkeys(p.series for p in points):
        ok = [p for p in points if p.series == name and p.value is not None]
        trends.append(
            Series(
                name or "history",
                [x_of[p.run_id] for p in ok],
                [p.value for p in ok],
                tips=[
                    f"{p.run_id}{f' {name}' if name else ''}: {p.value:.4g}"
                    + (f" ({p.correctness_only}: correctness only)" if p.correctness_only else "")
                    for p in ok
                ],
                hollow=[bool(p.correctness_only) for p in ok],
            )
        )
    return line_chart(
        title or "history",
        trends,
        "",
        unit,
        width=720,
        height=360,
        x_range=(-0.5, len(runs) - 0.5),
        y_range=(max(0.0, low) if lo >= 0 else low, high),
        x_ticks=[(x_of[r], (first[r].created_at or r)[:19]) for r in runs],
        markers=True,
        crosses=[
            (x_of[p.run_id], f"{p.run_id}{f' {p.series}' if p.series else ''}: {p.status}")
            for p in points
            if p.value is None
        ],
        standalone=True,
    )


def plot_history(
    points: Sequence[HistoryPoint], path: Path, *, title: str = "", unit: str = ""
) -> Path:
    """Write ``history_svg`` as a self-contained .svg file; returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history_svg(points, title=title, unit=unit) + "\n", encoding="utf-8")
    return path
