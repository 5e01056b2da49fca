"""Which cells lead a comparison, and whether their lead is real: the one ranking rule.

The matrix, the HTML and Markdown reports and ``recommend`` all ask the same question: of
these cells (one per framework on a device, say), which is best? ``rank`` answers it. The
cell with the best value is the front runner; every other cell is tested against it. The
*leading group* is then:

1. the front runner and every cell that is not clearly worse than it (``separate``), and
2. every cell whose value is at least as good as the value of a cell in (1).

Every other cell is *behind*. (2) makes the verdicts monotone in the value: a cell is behind
only when it and every cell with a worse value are clearly worse than the front runner, so a
faster cell is never behind a slower one that ties, however noisy the slower one is. (Its own
samples may set it apart from the front runner: a quiet cell 6% behind is; but a slower,
noisier cell that cannot be told from the front runner makes the whole stretch between them a
tie, since any cell of it may be the best once the noisy cell is measured better.) One cell in
the leading group is the best; more than one is a tie, whatever the values say to the
hundredth of a millisecond.

"Clearly worse" (``separate``) depends on what the records hold:

* latency metrics with raw samples on both sides (``Metric.sampled``): the other cell is at
  least ``MIN_LEAD`` (5%) worse on the metric, the two-sided Mann-Whitney U test on the pooled
  samples gives p < ``ALPHA`` (0.01), and the distribution-free 95% confidence intervals of
  the metric (order statistics of the quantile; normal interval for the mean) do not overlap.
  These are compare's test and defaults (analysis.compare), except that the bootstrap CI of
  the ratio is replaced by two order-statistic CIs, which need one sort instead of thousands
  of resamples: the matrix ranks every row of every table. Small samples need no floor of
  their own: with a handful of samples neither the test nor the intervals can separate cells,
  so they tie.
* metrics without raw samples (throughput, peak RSS, energy, or a native tool's latency):
  there is one number per cell and nothing to test, so the other cell is clearly worse only
  when it trails by at least ``MIN_LEAD``; closer values tie.

A cell measured on an emulated CPU (``Record.emulated``: qemu user mode on another
architecture) or on a software device (``Record.software_device``: an accelerator API served by
the CPU, lavapipe or pocl) is never ranked: its figures say nothing about any chip, so it is
left out like a cell that did not run ok, and the other cells on the device are ranked among
themselves. The two are never worded one for the other (``correctness_only``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Generic, TypeVar

import numpy as np

from edgebench.analysis.metrics import Metric
from edgebench.analysis.statistics import mann_whitney_u
from edgebench.results.measurement_kind import MeasurementKind
from edgebench.results.records import Record
from edgebench.statuses import Status

#: Significance level of the Mann-Whitney U test (compare's default).
ALPHA = 0.01
#: The smallest lead that counts (compare's default ``min_effect``); also the margin for
#: metrics without raw samples.
MIN_LEAD = 0.05
#: Confidence level of the metric's intervals.
CI_LEVEL = 0.95

SAMPLES = "samples"
MARGIN = "margin"

#: What an emulated cell's figures are good for, said wherever one is shown.
EMULATED_RULE = "latencies are for correctness only, never ranked"
#: Why a cell's latency is for correctness only, in the words every command uses.
EMULATED_CPU = MeasurementKind.EMULATED_CPU
SOFTWARE_DEVICE = MeasurementKind.SOFTWARE_DEVICE

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Separation:
    """One cell against the front runner."""

    #: How far behind the front runner, as a factor >= 1 (1.08: 8% worse on the metric).
    behind: float
    #: True when the cell is clearly worse, so it is out of the leading group.
    separated: bool
    #: ``SAMPLES`` (tested on raw samples) or ``MARGIN`` (one value per cell).
    test: str
    p_value: float | None = None
    #: False when the metric's confidence intervals overlap (sample test only).
    cis_apart: bool | None = None
    min_lead: float = MIN_LEAD
    alpha: float = ALPHA

    @property
    def gap(self) -> str:
        return "∞" if math.isinf(self.behind) else f"{self.behind - 1:.1%}"

    def describe(self) -> str:
        """``+1.2% (p=0.41, CIs overlap)``: the gap and what decided it."""
        if self.test == MARGIN:
            rule = "one value per cell" if self.separated else f"within {self.min_lead:.0%}"
            return f"+{self.gap} ({rule})"
        details = [f"p={self.p_value:.2g}"]
        if not self.separated:
            if self.behind < 1 + self.min_lead:
                details.append(f"under {self.min_lead:.0%}")
            if self.cis_apart is False:
                details.append("CIs overlap")
        return f"+{self.gap} ({', '.join(details)})"

    @property
    def more_samples_could_separate(self) -> bool:
        """The gap is large enough to matter but the samples cannot show it is real."""
        return self.test == SAMPLES and not self.separated and self.behind >= 1 + self.min_lead


@dataclass(frozen=True)
class Ranking(Generic[K]):
    """The candidates that have a value for the metric, front runner first."""

    metric: str
    order: tuple[K, ...]
    values: Mapping[K, float]
    #: Every candidate after the first, against the first.
    versus: Mapping[K, Separation]

    @property
    def boundary(self) -> K | None:
        """The worst-valued candidate not clearly worse than the front runner (the front runner
        itself when every other candidate is): the leading group ends with it."""
        unseparated = [
            k for k in self.order if k not in self.versus or not self.versus[k].separated
        ]
        return unseparated[-1] if unseparated else None

    @property
    def leaders(self) -> tuple[K, ...]:
        """Every candidate up to the boundary in value order, and any whose value equals the
        boundary's (module docstring): monotone in the value."""
        if self.boundary is None:
            return ()
        limit = self.values[self.boundary]
        end = self.order.index(self.boundary) + 1
        while end < len(self.order) and self.values[self.order[end]] == limit:
            end += 1
        return self.order[:end]

    def behind(self, key: K) -> bool:
        """Whether a ranked candidate trails the leading group."""
        return key in self.values and key not in self.leaders

    def tied_through(self, key: K) -> K | None:
        """For a leader that is itself clearly worse than the front runner, the worse-valued
        candidate that ties it (the boundary); None for any other candidate."""
        versus = self.versus.get(key)
        if versus is None or not versus.separated or key not in self.leaders:
            return None
        return self.boundary

    def verdict(self, key: K) -> str:
        """Why a candidate stands where it does, against the front runner:
        ``tied with a: +1.2% (p=0.41, CIs overlap)``, ``behind a: +30% (p=1e-40)``, or
        ``tied: +6.0% (p=1e-12) behind a, but b, slower, is not clearly behind a``; "" for
        the front runner and for a candidate without a value."""
        versus = self.versus.get(key)
        if versus is None:
            return ""
        front = self.order[0]
        through = self.tied_through(key)
        if through is not None:
            return (
                f"tied: {versus.describe()} behind {front}, but {through}, slower, "
                f"is not clearly behind {front}"
            )
        relation = "behind" if self.behind(key) else "tied with"
        return f"{relation} {front}: {versus.describe()}"

    @property
    def best(self) -> K | None:
        """The one candidate ahead of all others; None for a tie or fewer than two candidates."""
        return self.order[0] if len(self.order) > 1 and len(self.leaders) == 1 else None

    @property
    def tied(self) -> bool:
        return len(self.leaders) > 1

    def standing(self, key: K) -> str:
        """``"best"``, ``"tied"`` (one of a leading group of several) or ``""``."""
        if key == self.best:
            return "best"
        return "tied" if self.tied and key in self.leaders else ""

    @property
    def tests(self) -> set[str]:
        return {s.test for s in self.versus.values()}


def _worse_by(leader: float, other: float, lower_is_better: bool) -> float:
    """How many times worse ``other`` is than ``leader`` (>= 1 when the leader is better)."""
    worse, better = (other, leader) if lower_is_better else (leader, other)
    if better > 0:
        return worse / better
    return 1.0 if worse == better else math.inf


def metric_ci(
    values_ms: np.ndarray, quantile: float | None, level: float = CI_LEVEL
) -> tuple[float, float]:
    """Distribution-free CI of a quantile (order statistics, normal approximation to the
    binomial, widened by one order statistic on each side; infinite on a side the samples
    cannot bound), or the normal CI of the mean for ``quantile=None``."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    n = values_ms.size
    if quantile is None:
        mean = float(values_ms.mean())
        half = z * float(values_ms.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
        return mean - half, mean + half
    ordered = np.sort(values_ms)
    spread = z * math.sqrt(n * quantile * (1.0 - quantile))
    lo = math.floor(n * quantile - spread) - 1
    hi = math.ceil(n * quantile + spread)
    # Too few samples to bound the quantile on a side (p99 from 100 samples): unbounded there.
    return (
        float(ordered[lo]) if lo >= 0 else -math.inf,
        float(ordered[hi]) if hi < n else math.inf,
    )


def separate(
    leader: Record,
    other: Record,
    metric: Metric,
    *,
    alpha: float = ALPHA,
    min_lead: float = MIN_LEAD,
) -> Separation:
    """Whether ``other`` is clearly worse than ``leader`` on ``metric`` (module docstring)."""
    lead_value, other_value = metric.value(leader), metric.value(other)
    if lead_value is None or other_value is None:
        raise ValueError("separate needs a value for the metric on both records")
    behind = _worse_by(lead_value, other_value, metric.lower_is_better)
    if not (metric.sampled and leader.samples_ns and other.samples_ns):
        return Separation(behind, behind >= 1 + min_lead, MARGIN, min_lead=min_lead, alpha=alpha)
    a, b = metric.samples_ms(leader), metric.samples_ms(other)
    _, p = mann_whitney_u(a, b)
    (a_lo, a_hi), (b_lo, b_hi) = metric_ci(a, metric.quantile), metric_ci(b, metric.quantile)
    apart = b_lo > a_hi if metric.lower_is_better else b_hi < a_lo
    separated = p < alpha and behind >= 1 + min_lead and apart
    return Separation(behind, separated, SAMPLES, p, apart, min_lead, alpha)


def correctness_only(record: Record) -> MeasurementKind:
    """Why a cell's latency is for correctness only: its ``MeasurementKind``, which is falsy
    (``REAL``, "") for a real chip."""
    return record.measurement_kind


def correctness_only_evidence(record: Record) -> str:
    """What ran the cell, for ``correctness_only``'s word: the software device's name
    (``llvmpipe (LLVM 15.0.6, 256 bits)``), or how the CPU was known to be emulated ("" when
    no record says)."""
    if record.software_device and record.accelerator is not None:
        return record.accelerator.device or record.accelerator.api
    return " ".join((record.emulation or "").split()) if record.emulated else ""


def rankable(record: Record) -> bool:
    """Whether a cell may lead or trail a comparison: ok, and measured on a real chip
    (``correctness_only``)."""
    return record.status == Status.OK and not correctness_only(record)


def emulated_devices(records: Iterable[Record]) -> dict[str, str]:
    """Devices with a cell measured on an emulated CPU -> how that was known (the first
    ``Record.emulation`` given, whitespace collapsed; "" when none says), in order of appearance.
    Cells on a software accelerator are ``software_devices``'."""
    out: dict[str, str] = {}
    for r in records:
        if r.measurement_kind is EMULATED_CPU and not out.get(r.device):
            out[r.device] = " ".join((r.emulation or "").split())[:200]
    return out


def software_devices(records: Iterable[Record]) -> dict[str, str]:
    """``device · backend`` -> the software accelerator its cells ran on (lavapipe, pocl),
    in order of appearance."""
    out: dict[str, str] = {}
    for r in records:
        if r.measurement_kind is SOFTWARE_DEVICE and r.accelerator is not None:
            out.setdefault(f"{r.device} · {r.backend}", r.accelerator.device or r.accelerator.api)
    return out


def emulation_note(device: str, how: str = "") -> str:
    """``pi runs on an emulated CPU (qemu-aarch64): latencies are for correctness only, ...``"""
    evidence = f" ({how})" if how else ""
    return f"{device} runs on an emulated CPU{evidence}: {EMULATED_RULE}"


def software_note(device_backend: str, device_name: str) -> str:
    """``local · vulkan ran on a software device (llvmpipe ...): latencies are for ...``"""
    return f"{device_backend} ran on a software device ({device_name}): {EMULATED_RULE}"


def rank(
    candidates: Mapping[K, Record],
    metric: Metric,
    *,
    alpha: float = ALPHA,
    min_lead: float = MIN_LEAD,
) -> Ranking[K]:
    """Rank the ok candidates (``rankable``) that have a finite value; the others are left out.

    Equal values keep the candidates' order, so the front runner of a dead heat is the first
    one given (it is tied with the other anyway).
    """
    values: dict[K, float] = {}
    for key, record in candidates.items():
        value = metric.value(record) if rankable(record) else None
        if value is not None and math.isfinite(value):
            values[key] = value
    sign = 1.0 if metric.lower_is_better else -1.0
    order = tuple(sorted(values, key=lambda k: sign * values[k]))
    versus: dict[K, Separation] = {}
    if order:
        front = candidates[order[0]]
        for key in order[1:]:
            versus[key] = separate(front, candidates[key], metric, alpha=alpha, min_lead=min_lead)
    return Ranking(metric.name, order, values, versus)


def tiers(candidates: Mapping[K, Record], metric: Metric, **rule: float) -> list[tuple[K, ...]]:
    """Successive leading groups: the leaders, then the leaders of the rest, and so on."""
    remaining = dict(candidates)
    out: list[tuple[K, ...]] = []
    while True:
        leaders = rank(remaining, metric, **rule).leaders
        if not leaders:
            return out
        out.append(leaders)
        for key in leaders:
            del remaining[key]


def tie_rule(metric: Metric, rankings: Iterable[Ranking] = ()) -> str:
    """What "tied" meant for these rankings, for a legend: ``no 5% lead at p < 0.01``."""
    tests = set().union(*(r.tests for r in rankings)) or {SAMPLES if metric.sampled else MARGIN}
    sampled = f"no {MIN_LEAD:.0%} lead at p < {ALPHA:g}"
    margin = f"within {MIN_LEAD:.0%}"
    if tests == {MARGIN}:
        return margin
    if tests == {SAMPLES}:
        return sampled
    return f"{sampled}; {margin} where a cell has no raw samples"


#: The rule in one sentence, for report legends that cover every metric.
RULE_SUMMARY = (
    f"a cell is best only when every other cell on the device is at least {MIN_LEAD:.0%} "
    "behind it and, for latency, significantly so on the raw samples (Mann-Whitney "
    f"p < {ALPHA:g}, 95% CIs apart); otherwise the cells not clearly behind the fastest tie, "
    "and so does every cell faster than one of them; cells measured on an emulated CPU or a "
    "software device are never ranked"
)


def separation_hint(separations: Iterable[Separation]) -> str:
    """What would tell tied cells apart, or why nothing will. A cell that is clearly behind the
    front runner and ties only through a slower, noisier one (``Ranking.tied_through``) needs
    no more samples of its own: the noisy cell's would separate them."""
    given = list(separations)
    seps = [s for s in given if not s.separated]
    if given and not seps:
        return (
            "more samples of the slower, noisier cell they tie through could separate them: a "
            "longer --min-time, more --rounds, or a --target-ci, on a quiet machine"
        )
    if any(s.more_samples_could_separate for s in seps):
        # Two medians known to +-t% each are apart when they differ by more than 2t%.
        gap_pct = min(max(s.behind for s in seps if s.more_samples_could_separate) - 1, 1) * 100
        target = max(0.5, math.floor(gap_pct) / 2)
        return (
            "more samples could separate them: a longer --min-time, more --rounds, or "
            f"--target-ci {target:g}, on a quiet machine"
        )
    kind = "with one value per cell, " if any(s.test == MARGIN for s in seps) else ""
    return (
        f"nothing in this metric: they measured less than {MIN_LEAD:.0%} apart, {kind}too close "
        "to matter (another --metric may tell them apart)"
    )
