"""Pick a framework for a model that has to run on a list of devices.

Only cells with status ``ok`` count: a framework that mismatched, failed, was unsupported or
skipped on a device has no result there and ranks after every framework that covers all devices.
The choice is by: meets the latency budget on every device, then the worst case across devices
(max latency / min throughput), then the mean per-device rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from edgebench.analysis.metrics import RECOMMEND_METRICS, get_metric, metric_value
from edgebench.results.records import Record


@dataclass
class DeviceResult:
    """The best ok cell of one framework on one device."""

    device: str
    cell_id: str
    value: float
    #: Latency used for the budget (p50 or p99 when that is the metric, else p50), ms.
    budget_latency_ms: float | None
    meets_budget: bool | None
    rank: int = 0
    #: How many ok cells (sweep points) there were to choose from.
    candidates: int = 1


@dataclass
class FrameworkScore:
    framework: str
    position: int = 0
    complete: bool = False
    per_device: dict[str, DeviceResult] = field(default_factory=dict)
    #: device -> why there is no ok cell there.
    missing: dict[str, str] = field(default_factory=dict)
    worst: float | None = None
    worst_device: str | None = None
    mean_rank: float | None = None
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


def cell_suffix(cell_id: str) -> str:
    """``device/model/framework/fp32/t4/cbig/s1`` -> ``fp32/t4/cbig/s1``."""
    parts = cell_id.split("/")
    return "/".join(parts[3:]) if len(parts) > 3 else cell_id


def _missing_reason(records: list[Record]) -> str:
    if not records:
        return "no cell"
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    if statuses.get("ok"):
        return "ok cells have no value for the metric"
    return "no ok cell (" + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + ")"


def recommend(
    records: Iterable[Record],
    devices: list[str],
    model: str,
    *,
    metric: str = "p50",
    budget_ms: float | None = None,
) -> Recommendation:
    if metric not in RECOMMEND_METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {RECOMMEND_METRICS}")
    if not devices:
        raise ValueError("recommend needs at least one device")
    ranked_by = get_metric(metric)
    lower = ranked_by.lower_is_better
    budget_metric = metric if ranked_by.sampled else "p50"
    wanted = list(dict.fromkeys(devices))
    relevant = [r for r in records if r.model == model and r.device in wanted]
    frameworks = sorted({r.framework for r in relevant})
    unit = ranked_by.bare_unit

    scores: dict[str, FrameworkScore] = {}
    for fw in frameworks:
        score = FrameworkScore(framework=fw)
        for dev in wanted:
            cells = [r for r in relevant if r.framework == fw and r.device == dev]
            ok = ranked_by.ok_values(cells)
            if not ok:
                score.missing[dev] = _missing_reason(cells)
                continue
            value, best = ranked_by.best(ok)
            lat = metric_value(best, budget_metric)
            meets = None if budget_ms is None or lat is None else lat <= budget_ms
            score.per_device[dev] = DeviceResult(
                dev, best.cell_id, value, lat, meets, candidates=len(ok)
            )
        scores[fw] = score

    # Per-device ranks among frameworks with an ok cell there (1 = best; ties share a rank).
    for dev in wanted:
        present = [s.per_device[dev] for s in scores.values() if dev in s.per_device]
        for res in present:
            res.rank = 1 + sum(
                1 for o in present if (o.value < res.value if lower else o.value > res.value)
            )

    for s in scores.values():
        s.complete = not s.missing and len(s.per_device) == len(wanted)
        if s.per_device:
            pick = max if lower else min
            s.worst_device = pick(s.per_device, key=lambda d: s.per_device[d].value)
            s.worst = s.per_device[s.worst_device].value
            s.mean_rank = sum(r.rank for r in s.per_device.values()) / len(s.per_device)
        if budget_ms is not None:
            s.devices_meeting_budget = [d for d, r in s.per_device.items() if r.meets_budget]
            s.meets_budget_all = s.complete and len(s.devices_meeting_budget) == len(wanted)

    def key(s: FrameworkScore) -> tuple:
        worst = s.worst if s.worst is not None else float("inf")
        return (
            not s.complete,
            budget_ms is not None and not s.meets_budget_all,
            worst if lower else -worst,
            s.mean_rank if s.mean_rank is not None else float("inf"),
            s.framework,
        )

    table = sorted(scores.values(), key=key)
    for i, s in enumerate(table, 1):
        s.position = i
        s.reason = _score_reason(s, budget_ms, budget_metric, unit, metric)

    reasoning: list[str] = []
    what = f"{model} on {', '.join(wanted)} by worst-case {metric}"
    if budget_ms is not None:
        what += f" with a {budget_metric} budget of {budget_ms:g} ms"
    reasoning.append(f"ranking {len(table)} framework(s) for {what}; only ok cells count")
    best: str | None = None
    complete = [s for s in table if s.complete]
    if not table:
        reasoning.append(f"no records for model {model!r} on these devices")
    elif not complete:
        reasoning.append("no framework has an ok cell on every listed device: no recommendation")
    elif budget_ms is not None and not any(s.meets_budget_all for s in complete):
        closest = complete[0]
        reasoning.append(
            f"no framework meets the budget on every device; closest is {closest.framework} "
            f"(worst {closest.worst:.4g} {unit} on {closest.worst_device}): no recommendation"
        )
    else:
        top = table[0]
        best = top.framework
        line = (
            f"recommend {best}: worst case {top.worst:.4g} {unit} on {top.worst_device}, "
            f"mean rank {top.mean_rank:.2f}"
        )
        if budget_ms is not None:
            line += ", meets the budget on every device"
        reasoning.append(line)
        by_mean = min(complete, key=lambda s: (s.mean_rank, s.framework))
        if by_mean.framework != best:
            reasoning.append(
                f"{by_mean.framework} ranks better on average (mean rank "
                f"{by_mean.mean_rank:.2f}) but its worst case is {by_mean.worst:.4g} {unit} on "
                f"{by_mean.worst_device}"
            )
    for s in table:
        if s.framework != best:
            reasoning.append(f"{s.framework}: {s.reason}")
    swept = [
        f"{s.framework}@{d}" for s in table for d, r in s.per_device.items() if r.candidates > 1
    ]
    if swept:
        reasoning.append("several ok cells (sweep) for " + ", ".join(swept) + ": the best is used")
    return Recommendation(best, table, reasoning, metric, wanted, model, budget_ms)


def _score_reason(
    s: FrameworkScore, budget_ms: float | None, budget_metric: str, unit: str, metric: str
) -> str:
    if s.missing:
        return "ranked last: " + "; ".join(f"{d}: {why}" for d, why in s.missing.items())
    parts = [f"worst {metric} {s.worst:.4g} {unit} on {s.worst_device}"]
    if budget_ms is not None and not s.meets_budget_all:
        over = [d for d in s.per_device if d not in s.devices_meeting_budget]
        parts.append(f"{budget_metric} over {budget_ms:g} ms budget on {', '.join(over)}")
    return ", ".join(parts)
