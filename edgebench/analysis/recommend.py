"""Pick a framework for a model that has to run on a list of devices.

Only cells with status ``ok`` count: a framework that mismatched, failed, was unsupported or
skipped on a device has no result there and ranks after every framework that covers all devices.
The choice is by: meets the budgets on every device (latency ``budget_ms``, peak memory
``budget_mb``), then the worst case across devices (the worst value by the metric's own
direction: max latency, min tokens/s), then the mean per-device rank.

Cells measured on an emulated CPU or a software device (``ranking.correctness_only``) never
count: their latency is for correctness only, and the reasons say which of the two. A listed
device whose cells all ran on an emulated CPU is refused, with the reason, and the frameworks
are ranked on the other devices; when every listed device is emulated there is no
recommendation.

Differences within noise do not decide anything (analysis.ranking, the rule the matrix marks
its best cells by): frameworks that tie on a device share its rank, and worst cases that tie
are decided by the mean rank. Frameworks still equal after that are reported as a tie, with
what would separate them, instead of picking one by a hair.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from edgebench.analysis.metrics import (
    RECOMMEND_METRICS,
    Metric,
    get_metric,
    judged_metric,
    metric_value,
)
from edgebench.analysis.ranking import (
    EMULATED_RULE,
    Ranking,
    correctness_only,
    emulated_devices,
    rank,
    separation_hint,
    tie_rule,
    tiers,
)
from edgebench.analysis.recommend_budgets import Budgets
from edgebench.results.records import Record
from edgebench.statuses import Status


@dataclass
class DeviceResult:
    """The best ok cell of one framework on one device."""

    device: str
    cell_id: str
    value: float
    #: Latency used for the budget (the metric when it is a latency in ms, else p50), ms.
    budget_latency_ms: float | None
    meets_budget: bool | None
    #: 1 = best on the device; frameworks that tie there (analysis.ranking) share a rank.
    rank: int = 0
    #: How many ok cells (sweep points) there were to choose from.
    candidates: int = 1
    #: Peak RSS of the chosen cell, MB (what the memory budget is checked on).
    peak_rss_mb: float | None = None


@dataclass
class FrameworkScore:
    framework: str
    position: int = 0
    complete: bool = False
    per_device: dict[str, DeviceResult] = field(default_factory=dict)
    #: device -> why there is no ok cell there.
    missing: dict[str, str] = field(default_factory=dict)
    #: Devices where ok cells ran but none has a value for the metric (energy unmeasured).
    without_value: list[str] = field(default_factory=list)
    worst: float | None = None
    worst_device: str | None = None
    mean_rank: float | None = None
    #: Refused (emulated) device -> how the framework fared there: "ok", or its statuses.
    emulated: dict[str, str] = field(default_factory=dict)
    devices_meeting_budget: list[str] = field(default_factory=list)
    meets_budget_all: bool | None = None
    reason: str = ""


@dataclass
class Recommendation:
    best: str | None
    table: list[FrameworkScore]
    reasoning: list[str]
    metric: str = "p50"
    devices: list[str] = field(default_factory=list)
    model: str = ""
    budget_ms: float | None = None
    #: The frameworks that tie for first (``best`` is then None); empty otherwise.
    tied: list[str] = field(default_factory=list)
    #: Listed devices left out because all their cells ran on an emulated CPU -> how that was
    #: known ("" when the records do not say). ``devices`` holds the others.
    refused: dict[str, str] = field(default_factory=dict)
    #: Peak memory budget per device, MB (the chosen cell's peak RSS must not exceed it).
    budget_mb: float | None = None
    #: The ranked metric's unit as the model's kind means it (generative energy: mJ/tok).
    unit: str = ""

    @property
    def budgeted(self) -> bool:
        return self.budget_ms is not None or self.budget_mb is not None


def cell_suffix(cell_id: str) -> str:
    """``device/model/framework/fp32/t4/cbig/s1`` -> ``fp32/t4/cbig/s1``."""
    parts = cell_id.split("/")
    return "/".join(parts[3:]) if len(parts) > 3 else cell_id


def _status_counts(records: list[Record]) -> str:
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))


def _missing_reason(records: list[Record], metric: Metric) -> str:
    if not records:
        return "no cell"
    if any(r.status == Status.OK and not correctness_only(r) for r in records):
        return f"its ok cells have no {metric.label} ({metric.unit})"
    kinds = dict.fromkeys(correctness_only(r) for r in records if r.status == Status.OK)
    if kinds:
        on = " or ".join(f"an {k}" if k[0] in "aeiou" else f"a {k}" for k in kinds)
        return f"its only ok cells ran on {on} ({EMULATED_RULE})"
    return f"no ok cell ({_status_counts(records)})"


def _refused_devices(relevant: list[Record], wanted: list[str]) -> dict[str, str]:
    """Listed devices that have cells, all of them on an emulated CPU -> how that was known."""
    how = emulated_devices(relevant)
    return {
        d: how[d] for d in wanted if d in how and all(r.emulated for r in relevant if r.device == d)
    }


def _refusal(device: str, how: str) -> str:
    evidence = f" ({how})" if how else ""
    return (
        f"refusing {device}: its CPU is emulated{evidence}, so its latencies are for "
        "correctness only and rank nothing"
    )


def accuracy_drop(record: Record) -> float | None:
    """A quantized cell's top-1 loss against fp32 (1 - top-1 agreement on the evaluation
    set); 0 for a cell that is not quantized; None when a quantized cell has no top-1 figure."""
    if record.accuracy is None and record.quant is None:
        return 0.0
    top1 = record.accuracy.top1_agreement if record.accuracy is not None else None
    return None if top1 is None else 1.0 - top1


def _within_accuracy(records: list[Record], max_drop: float) -> tuple[list[Record], list[str]]:
    """The ok cells that keep accuracy within ``max_drop``, and a line per refused cell."""
    kept, lines = [], []
    for r in records:
        drop = accuracy_drop(r) if r.status == Status.OK else 0.0
        if drop is not None and drop <= max_drop + 1e-12:
            kept.append(r)
            continue
        why = (
            f"top-1 agreement drops by {drop:.1%}"
            if drop is not None
            else "it is quantized and has no top-1 figure to bound"
        )
        lines.append(f"refusing {r.cell_id}: {why} (--max-accuracy-drop {max_drop:.1%})")
    return kept, lines


def recommend(
    records: Iterable[Record],
    devices: list[str],
    model: str,
    *,
    metric: str = "p50",
    budget_ms: float | None = None,
    max_accuracy_drop: float | None = None,
    budget_mb: float | None = None,
) -> Recommendation:
    if metric not in RECOMMEND_METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {RECOMMEND_METRICS}")
    if not devices:
        raise ValueError("recommend needs at least one device")
    records = [r for r in records if r.model == model]
    ranked_by = judged_metric(metric, {r.framework for r in records})
    metric = ranked_by.name  # a generative model's throughput is ranked as its decode speed
    lower = ranked_by.lower_is_better
    # The latency budget is on the ranked metric when that is a latency (p99, ttft), else p50.
    latency = ranked_by.sampled or ranked_by.unit == "ms"
    budgets = Budgets(budget_ms, metric if latency else "p50", budget_mb)
    listed = list(dict.fromkeys(devices))
    relevant = [r for r in records if r.model == model and r.device in listed]
    accuracy_refusals: list[str] = []
    if max_accuracy_drop is not None:
        relevant, accuracy_refusals = _within_accuracy(relevant, max_accuracy_drop)
    refused = _refused_devices(relevant, listed)
    wanted = [d for d in listed if d not in refused]
    on_emulated = [r for r in relevant if r.device in refused]
    relevant = [r for r in relevant if r.device not in refused]
    frameworks = sorted({r.engine for r in relevant})
    unit = ranked_by.bare_unit
    refusals = accuracy_refusals + [_refusal(d, how) for d, how in refused.items()]
    if refused and not wanted:
        refusals.append(
            f"every listed device runs on an emulated CPU: nothing to rank {model} on, "
            "no recommendation (measure on the real boards)"
        )
        return Recommendation(
            None,
            [],
            refusals,
            metric,
            [],
            model,
            budget_ms,
            refused=refused,
            budget_mb=budget_mb,
            unit=unit,
        )

    scores: dict[str, FrameworkScore] = {}
    chosen: dict[tuple[str, str], Record] = {}
    for fw in frameworks:
        score = FrameworkScore(framework=fw)
        for dev in wanted:
            cells = [r for r in relevant if r.engine == fw and r.device == dev]
            ok = ranked_by.ok_values(r for r in cells if not correctness_only(r))
            if not ok:
                score.missing[dev] = _missing_reason(cells, ranked_by)
                if any(r.status == Status.OK and not correctness_only(r) for r in cells):
                    score.without_value.append(dev)
                continue
            value, best_cell = ranked_by.best(budgets.fitting(ok))
            chosen[(fw, dev)] = best_cell
            lat = metric_value(best_cell, budgets.latency_metric)
            rss = get_metric("memory").value(best_cell)
            score.per_device[dev] = DeviceResult(
                dev,
                best_cell.cell_id,
                value,
                lat,
                budgets.meets(lat, rss),
                candidates=len(ok),
                peak_rss_mb=rss,
            )
        for dev in refused:
            there = [r for r in on_emulated if r.engine == fw and r.device == dev]
            ok_there = any(r.status == Status.OK for r in there)
            score.emulated[dev] = "ok" if ok_there else _status_counts(there) or "no cell"
        scores[fw] = score

    # Per-device ranks (1 = best): frameworks in one tier (a leading group) share a rank.
    for dev in wanted:
        present = {fw: chosen[(fw, dev)] for fw in scores if (fw, dev) in chosen}
        place = 1
        for tier in tiers(present, ranked_by):
            for fw in tier:
                scores[fw].per_device[dev].rank = place
            place += len(tier)

    for s in scores.values():
        s.complete = not s.missing and len(s.per_device) == len(wanted)
        if s.per_device:
            pick = max if lower else min
            s.worst_device = pick(s.per_device, key=lambda d: s.per_device[d].value)
            s.worst = s.per_device[s.worst_device].value
            s.mean_rank = sum(r.rank for r in s.per_device.values()) / len(s.per_device)
        if budgets.any:
            s.devices_meeting_budget = [d for d, r in s.per_device.items() if r.meets_budget]
            s.meets_budget_all = s.complete and len(s.devices_meeting_budget) == len(wanted)

    def key(s: FrameworkScore) -> tuple:
        worst = s.worst if s.worst is not None else float("inf")
        return (
            not s.complete,
            budgets.any and not s.meets_budget_all,
            worst if lower else -worst,
            s.mean_rank if s.mean_rank is not None else float("inf"),
            s.framework,
        )

    table = sorted(scores.values(), key=key)
    # Worst cases within noise of the front runner's are equal: the mean rank decides.
    eligible = [s for s in table if s.complete and (not budgets.any or s.meets_budget_all)]
    worst_cases = rank(
        {s.framework: chosen[(s.framework, s.worst_device)] for s in eligible if s.worst_device},
        ranked_by,
    )
    front = sorted(
        (s for s in eligible if s.framework in worst_cases.leaders),
        key=lambda s: (s.mean_rank, key(s)),
    )
    table = front + [s for s in table if s not in front]
    tied = [s.framework for s in front if s.mean_rank == front[0].mean_rank]
    tied = tied if len(tied) > 1 else []
    for i, s in enumerate(table, 1):
        s.position = 1 if s.framework in tied else i
        s.reason = _score_reason(s, budgets, unit, metric, worst_cases)

    reasoning: list[str] = list(refusals)
    what = f"{model} on {', '.join(wanted)} by worst-case {metric}{budgets.describe()}"
    reasoning.append(
        f"ranking {len(table)} framework(s) for {what}; only ok cells count; differences "
        f"within noise ({tie_rule(ranked_by, [worst_cases])}) are ties"
    )
    best: str | None = None
    complete = [s for s in table if s.complete]
    if not table:
        reasoning.append(f"no records for model {model!r} on these devices")
    elif not complete:
        reasoning.append(_incomplete_line(table, ranked_by))
    elif budgets.any and not any(s.meets_budget_all for s in complete):
        closest = complete[0]
        reasoning.append(
            f"no framework meets the budget on every device; closest is {closest.framework} "
            f"(worst {closest.worst:.4g} {unit} on {closest.worst_device}): no recommendation"
        )
    elif tied:
        reasoning += _tie_lines(tied, front, worst_cases, unit)
    else:
        top = table[0]
        best = top.framework
        line = (
            f"recommend {best}: worst case {top.worst:.4g} {unit} on {top.worst_device}, "
            f"mean rank {top.mean_rank:.2f}"
        )
        if budgets.any:
            line += ", meets the budget on every device"
        reasoning.append(line)
        others = [s for s in front if s is not top]
        if others:
            reasoning.append(
                f"its worst case ties with {', '.join(s.framework for s in others)}'s; it ranks "
                "better across the devices (mean rank "
                + ", ".join(f"{s.framework} {s.mean_rank:.2f}" for s in others)
                + ")"
            )
        within = [s for s in complete if not budgets.any or s.meets_budget_all]
        by_mean = min(within, key=lambda s: (s.mean_rank, s.framework))
        if by_mean.framework != best:
            reasoning.append(
                f"{by_mean.framework} ranks better on average (mean rank "
                f"{by_mean.mean_rank:.2f}) but its worst case is {by_mean.worst:.4g} {unit} on "
                f"{by_mean.worst_device}"
            )
    for s in table:
        if s.framework != best:
            reasoning.append(f"{s.framework}: {s.reason}")
    not_ok = [f"{s.framework} on {d} ({why})" for s in table for d, why in s.emulated.items()]
    not_ok = [line for line in not_ok if not line.endswith("(ok)")]
    if not_ok:
        reasoning.append(
            "not ok on an emulated device (its statuses count, its latency does not): "
            + ", ".join(not_ok)
        )
    swept = [
        f"{s.framework}@{d}" for s in table for d, r in s.per_device.items() if r.candidates > 1
    ]
    if swept:
        reasoning.append("several ok cells (sweep) for " + ", ".join(swept) + ": the best is used")
    return Recommendation(
        best, table, reasoning, metric, wanted, model, budget_ms, tied, refused, budget_mb, unit
    )


def _incomplete_line(table: list[FrameworkScore], metric: Metric) -> str:
    """Why no framework is complete: no ok cell somewhere, or ok cells without the figure."""
    if any(s.without_value for s in table):
        line = (
            f"no framework has {metric.label} on every listed device (ok cells without it: "
            + ", ".join(
                f"{s.framework} on {', '.join(s.without_value)}" for s in table if s.without_value
            )
            + ")"
        )
        if metric.how_to_get:
            line += f"; to rank by {metric.name}, {metric.how_to_get}"
        return line + ": no recommendation"
    return "no framework has an ok cell on every listed device: no recommendation"


def _tie_lines(
    tied: list[str], front: list[FrameworkScore], worst_cases: Ranking[str], unit: str
) -> list[str]:
    """Why the tie is a tie, and what would separate the frameworks."""
    scores = {s.framework: s for s in front}
    worst = ", ".join(
        f"{fw} {scores[fw].worst:.4g} {unit} on {scores[fw].worst_device}" for fw in tied
    )
    return [
        f"no single recommendation: {', '.join(tied)} tie (worst cases {worst}; "
        f"mean rank {scores[tied[0]].mean_rank:.2f} each): any of them will do",
        "to separate them: "
        + separation_hint(worst_cases.versus[fw] for fw in tied if fw in worst_cases.versus),
    ]


def _score_reason(
    s: FrameworkScore,
    budgets: Budgets,
    unit: str,
    metric: str,
    worst_cases: Ranking[str],
) -> str:
    if s.missing:
        return "ranked last: " + "; ".join(f"{d}: {why}" for d, why in s.missing.items())
    parts = [f"worst {metric} {s.worst:.4g} {unit} on {s.worst_device}"]
    if budgets.any and not s.meets_budget_all:
        parts += budgets.misses(s)
    versus = worst_cases.versus.get(s.framework)
    if versus is not None:
        relation = "behind" if worst_cases.behind(s.framework) else "tied with"
        line = f"{relation} {worst_cases.order[0]}'s worst case: {versus.describe()}"
        through = worst_cases.tied_through(s.framework)
        if through is not None:
            line += f", tied through {through}'s, slower and not clearly behind"
        parts.append(line)
    return ", ".join(parts)
