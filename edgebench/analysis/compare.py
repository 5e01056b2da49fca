"""Compare two runs cell by cell: significance (Mann-Whitney U) plus effect size (median ratio).

A cell is flagged only when the difference is both statistically significant on the raw
per-iteration samples and large enough to matter (``min_effect``), and the bootstrap confidence
interval of the ratio excludes 1. Noise alone almost never trips all three.

A cell measured on an emulated CPU or a software device (``ranking.correctness_only``) on
either side is not comparable: its latency says nothing about any chip, so it is never a
regression or an improvement; the reason says which of the two, for which side. Nor is a
cell measured in another clock regime (``results.clock_regime``: the governors, the cores'
frequency limits, Android's fixed-performance mode, a Jetson's power mode or clock lock); its
verdict says what differs. A different NVIDIA driver is noted in the verdict's reason.

Verdicts only: the tests live in analysis.statistics, the metrics in analysis.metrics, and the
text table and JUnit XML of the verdicts in reporting.text and reporting.junit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from edgebench.analysis.metrics import Metric, get_metric, judged_metric
from edgebench.analysis.ranking import correctness_only
from edgebench.analysis.statistics import bootstrap_ratio_ci, mann_whitney_u, sample_statistic
from edgebench.results.clock_regime import clock_regime
from edgebench.results.records import Record
from edgebench.statuses import Status

VERDICTS = ("regressed", "improved", "unchanged", "new", "missing", "not_comparable")
#: How a not-comparable reason starts when two quantized cells used different calibration sets.
DIFFERENT_CALIBRATION = "different calibration sets"
#: How a not-comparable reason starts when the sides ran in different clock regimes.
DIFFERENT_CLOCK_REGIMES = "different clock regimes"
#: How a not-comparable reason starts when two generative cells ran different tests.
DIFFERENT_GENERATION = "different generation settings"


@dataclass
class CellVerdict:
    cell_id: str
    verdict: str
    base_p50_ms: float | None
    new_p50_ms: float | None
    #: new / base of the compared metric (for throughput: >1 means faster).
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    reason: str
    metric: str = "p50"
    #: The compared metric on each side (``metric``'s unit), shown in the verdict table.
    base_value: float | None = None
    new_value: float | None = None
    n_base: int = 0
    n_new: int = 0
    #: What differs between the sides' clock regimes (``ClockRegime.differences``), base ->
    #: new; the cell is then not comparable.
    regime_changes: list[str] = field(default_factory=list)
    #: The compared metric's unit as this cell's kind means it (a generative cell's energy:
    #: mJ/tok); "" reads the metric's own.
    unit: str = ""

    @property
    def value_unit(self) -> str:
        """The unit of ``base_value`` and ``new_value``."""
        return self.unit or get_metric(self.metric).bare_unit


def record_p50_ms(record: Record) -> float | None:
    """The p50 from the raw samples, else the stored one (None for a NaN or an infinity)."""
    if record.samples_ns:
        return float(np.median(np.asarray(record.samples_ns, dtype=np.float64))) / 1e6
    return get_metric("p50").stored(record)


def _by_cell(records: Iterable[Record]) -> dict[str, Record]:
    """Last record per cell id (a re-run cell supersedes the earlier one)."""
    out: dict[str, Record] = {}
    for r in records:
        out[r.cell_id] = r
    return out


def _calibration_sha(record: Record) -> str | None:
    calibration = record.quant.calibration if record.quant is not None else None
    return calibration.sha256 if calibration is not None else None


def generation_settings(record: Record) -> str:
    """What a generative cell's tests were (``pp16,32 tg8``, `` d512`` at a context depth): its
    time to first token and speeds change with them; "" for a tensor cell."""
    g = record.generation
    if g is None:
        return ""
    depth = f" d{g.context_depth}" if g.context_depth else ""
    return f"pp{','.join(str(n) for n in g.prompt_lengths)} tg{g.gen_tokens}{depth}"


def regime_reason(changes: list[str]) -> str:
    """The not-comparable reason of a cell whose clock regime changed."""
    return (
        f"{DIFFERENT_CLOCK_REGIMES}: {'; '.join(changes)}; measure both in one clock regime "
        "to compare them"
    )


def driver_note(b: Record, n: Record) -> str:
    """A note for the reason when the two sides ran on different NVIDIA drivers."""
    base = b.nvidia.driver if b.nvidia is not None else None
    new = n.nvidia.driver if n.nvidia is not None else None
    if base and new and base != new:
        return f"; warning: NVIDIA driver {base} in base, {new} in new"
    return ""


def _correctness_only_sides(b: Record, n: Record) -> str:
    """``emulated CPU (base and new)``, ``software device (new)``, or both kinds (``emulated
    CPU (base), software device (new)``); "" when both sides ran on real chips."""
    sides: dict[str, list[str]] = {}
    for side, record in (("base", b), ("new", n)):
        if kind := correctness_only(record):
            sides.setdefault(kind, []).append(side)
    return ", ".join(f"{kind} ({' and '.join(names)})" for kind, names in sides.items())


def _compare_cell(
    b: Record, n: Record, *, min_effect: float, alpha: float, metric: Metric
) -> CellVerdict:
    verdict = _judge_cell(b, n, min_effect=min_effect, alpha=alpha, metric=metric)
    verdict.reason += driver_note(b, n)
    return verdict


def _judge_cell(
    b: Record, n: Record, *, min_effect: float, alpha: float, metric: Metric
) -> CellVerdict:
    verdict = CellVerdict(
        cell_id=b.cell_id,
        verdict="not_comparable",
        base_p50_ms=record_p50_ms(b),
        new_p50_ms=record_p50_ms(n),
        ratio=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        reason="",
        metric=metric.name,
        unit=metric.bare_unit,
        base_value=metric.value(b),
        new_value=metric.value(n),
        n_base=len(b.samples_ns),
        n_new=len(n.samples_ns),
    )
    if b.status != Status.OK or n.status != Status.OK:
        verdict.reason = f"status base={b.status} new={n.status}; only ok cells are compared"
        return verdict
    stand_ins = _correctness_only_sides(b, n)
    if stand_ins:
        verdict.reason = f"{stand_ins}: latency is for correctness only"
        return verdict
    changes = clock_regime(b).differences(clock_regime(n))
    if changes:
        verdict.regime_changes = changes
        verdict.reason = regime_reason(changes)
        return verdict
    base_set, new_set = _calibration_sha(b), _calibration_sha(n)
    if base_set != new_set:
        verdict.reason = (
            f"{DIFFERENT_CALIBRATION}: base {str(base_set)[:12]}, new {str(new_set)[:12]}; "
            "quantized cells compare only when calibrated on the same set"
        )
        return verdict
    base_tests, new_tests = generation_settings(b), generation_settings(n)
    if base_tests != new_tests:
        verdict.reason = (
            f"{DIFFERENT_GENERATION}: base {base_tests or 'none'}, new {new_tests or 'none'}; "
            "generative cells compare only at the same prompt lengths, generated tokens and "
            "context depth"
        )
        return verdict

    if not metric.sampled:
        return _compare_scalar(verdict, b, n, min_effect=min_effect, metric=metric)

    if not b.samples_ns or not n.samples_ns:
        side = "base" if not b.samples_ns else "new"
        verdict.reason = f"no raw samples in {side} run"
        return verdict
    base_ms, new_ms = metric.samples_ms(b), metric.samples_ms(n)
    quantile = metric.quantile
    base_stat = float(sample_statistic(base_ms, quantile))
    verdict.base_value = base_stat
    verdict.new_value = float(sample_statistic(new_ms, quantile))
    if base_stat <= 0:
        verdict.reason = f"base {metric.name} is {base_stat:g} ms; a ratio is meaningless"
        return verdict
    _, p = mann_whitney_u(base_ms, new_ms)
    ratio, lo, hi = bootstrap_ratio_ci(base_ms, new_ms, quantile=quantile)
    verdict.ratio, verdict.ci_low, verdict.ci_high, verdict.p_value = ratio, lo, hi, p
    change = f"{metric.name} {ratio - 1:+.1%} (95% CI {lo - 1:+.1%}..{hi - 1:+.1%}), p={p:.2g}"
    significant = p < alpha
    if significant and ratio >= 1 + min_effect and lo > 1:
        verdict.verdict = "regressed"
        verdict.reason = f"slower: {change}"
    elif significant and ratio <= 1 - min_effect and hi < 1:
        verdict.verdict = "improved"
        verdict.reason = f"faster: {change}"
    else:
        verdict.verdict = "unchanged"
        why = []
        if not significant:
            why.append(f"p>={alpha:g}")
        if abs(ratio - 1) < min_effect:
            why.append(f"|effect|<{min_effect:.0%}")
        if lo <= 1 <= hi:
            why.append("CI spans 1")
        verdict.reason = f"{change}; " + (", ".join(why) or "criteria not all met")
    return verdict


def _compare_scalar(
    verdict: CellVerdict, b: Record, n: Record, *, min_effect: float, metric: Metric
) -> CellVerdict:
    lower_better, unit = metric.lower_is_better, metric.bare_unit
    bv, nv = metric.stored(b), metric.stored(n)
    verdict.base_value, verdict.new_value = bv, nv
    if bv is None or nv is None:
        side = "base" if bv is None else "new"
        verdict.reason = f"no {metric.name} value in {side} run"
        return verdict
    if bv <= 0:
        verdict.reason = f"base {metric.name} is {bv:g} {unit}; a ratio is meaningless"
        return verdict
    ratio = float(nv) / float(bv)
    verdict.ratio = ratio
    worse = ratio >= 1 + min_effect if lower_better else ratio <= 1 - min_effect
    better = ratio <= 1 - min_effect if lower_better else ratio >= 1 + min_effect
    change = (
        f"{metric.name} {bv:.4g} -> {nv:.4g} {unit} ({ratio - 1:+.1%}); "
        "single value per run, no significance test"
    )
    verdict.verdict = "regressed" if worse else "improved" if better else "unchanged"
    if verdict.verdict == "unchanged":
        change += f", |effect|<{min_effect:.0%}"
    verdict.reason = change
    return verdict


def compare_runs(
    base: list[Record],
    new: list[Record],
    *,
    min_effect: float = 0.05,
    alpha: float = 0.01,
    metric: str = "p50",
) -> list[CellVerdict]:
    """One verdict per cell id present in either run, base order first, then new-only cells.
    Each cell is judged on ``metric`` as its framework means it (``judged_metric``: a
    generative cell's throughput is its decode speed), named so in its verdict."""
    get_metric(metric)  # an unknown metric is refused here, by name
    base_cells, new_cells = _by_cell(base), _by_cell(new)
    out: list[CellVerdict] = []
    for cell_id, b in base_cells.items():
        n = new_cells.get(cell_id)
        judged_on = judged_metric(metric, [b.framework])
        if n is None:
            out.append(
                CellVerdict(
                    cell_id,
                    "missing",
                    record_p50_ms(b),
                    None,
                    None,
                    None,
                    None,
                    None,
                    "only in base run",
                    metric=judged_on.name,
                    unit=judged_on.bare_unit,
                    base_value=judged_on.value(b),
                    n_base=len(b.samples_ns),
                )
            )
            continue
        out.append(_compare_cell(b, n, min_effect=min_effect, alpha=alpha, metric=judged_on))
    for cell_id, n in new_cells.items():
        if cell_id not in base_cells:
            judged_on = judged_metric(metric, [n.framework])
            out.append(
                CellVerdict(
                    cell_id,
                    "new",
                    None,
                    record_p50_ms(n),
                    None,
                    None,
                    None,
                    None,
                    "only in new run",
                    metric=judged_on.name,
                    unit=judged_on.bare_unit,
                    new_value=judged_on.value(n),
                    n_new=len(n.samples_ns),
                )
            )
    return out


def any_regression(verdicts: Iterable[CellVerdict]) -> bool:
    return any(v.verdict == "regressed" for v in verdicts)
