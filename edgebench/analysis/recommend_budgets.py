"""recommend's budgets: the latency and peak memory a framework's chosen cell must keep on
each listed device (``--budget-ms``, ``--budget-mb``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgebench.analysis.metrics import get_metric
from edgebench.results.records import Record

if TYPE_CHECKING:
    from edgebench.analysis.recommend import FrameworkScore

_MEMORY = get_metric("memory")


@dataclass(frozen=True)
class Budgets:
    """The limits a framework's chosen cell must keep on each device; None: no such limit."""

    latency_ms: float | None = None
    #: Which latency the latency budget is checked on (p50, or p99 when ranking by p99).
    latency_metric: str = "p50"
    memory_mb: float | None = None

    @property
    def any(self) -> bool:
        return self.latency_ms is not None or self.memory_mb is not None

    def meets(self, latency_ms: float | None, rss_mb: float | None) -> bool | None:
        """False when a figure is over its budget, None when one a budget needs is missing,
        True when every budget is kept; None without budgets."""
        checks = [(latency_ms, self.latency_ms), (rss_mb, self.memory_mb)]
        wanted = [(value, limit) for value, limit in checks if limit is not None]
        if not wanted:
            return None
        if any(value is not None and value > limit for value, limit in wanted):
            return False
        return None if any(value is None for value, _ in wanted) else True

    def fitting(self, ok: list[tuple[float, Record]]) -> list[tuple[float, Record]]:
        """The sweep points within the memory budget (a framework may ship the setting that
        fits), or all of them when none does (the best is then shown over the budget)."""
        if self.memory_mb is None:
            return ok
        limit = self.memory_mb
        fits = [(v, r) for v, r in ok if (rss := _MEMORY.value(r)) is not None and rss <= limit]
        return fits or ok

    def describe(self) -> str:
        """`` with a p50 budget of 16.7 ms and a peak memory budget of 500 MB``."""
        parts = []
        if self.latency_ms is not None:
            parts.append(f"a {self.latency_metric} budget of {self.latency_ms:g} ms")
        if self.memory_mb is not None:
            parts.append(f"a peak memory budget of {self.memory_mb:g} MB")
        return f" with {' and '.join(parts)}" if parts else ""

    def misses(self, score: FrameworkScore) -> list[str]:
        """What keeps a framework from its budgets: per budget, the devices over it (with the
        figure) and those without the figure to check."""
        out = []
        for what, limit, unit, read in (
            (self.latency_metric, self.latency_ms, "ms", lambda r: r.budget_latency_ms),
            ("peak RSS", self.memory_mb, "MB", lambda r: r.peak_rss_mb),
        ):
            if limit is None:
                continue
            figures = {d: read(r) for d, r in score.per_device.items()}
            over = [
                f"{d} {v:.4g} {unit}" for d, v in figures.items() if v is not None and v > limit
            ]
            unknown = [d for d, v in figures.items() if v is None]
            if over:
                out.append(f"{what} over the {limit:g} {unit} budget on {', '.join(over)}")
            if unknown:
                out.append(
                    f"no {what} to check the {limit:g} {unit} budget on {', '.join(unknown)}"
                )
        return out
