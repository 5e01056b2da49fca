"""The HTML report's first section: the answer, per model (per matrix group).

For each device: the framework with the best p50 (analysis.ranking's rule, so a lead the
samples cannot show is a tie, said as one), how far behind the others are, and which cells
were not ranked and why; beside it a chart of every cell's p50 with its p99 whisker
(reporting.summary_chart). The notes it points to (the ranking rule, emulated and software
devices) are given once, at the end of the section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edgebench.analysis.metrics import METRICS
from edgebench.analysis.ranking import (
    RULE_SUMMARY,
    Ranking,
    correctness_only,
    emulated_devices,
    emulation_note,
    rank,
    software_note,
)
from edgebench.reporting.matrix import (
    GroupKey,
    framework_order,
    group_records,
    group_title,
    status_word,
)
from edgebench.reporting.report_notes import Notes
from edgebench.reporting.summary_chart import Bar, p50_chart
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number
from edgebench.results.measurement_kind import MeasurementKind
from edgebench.results.records import Record
from edgebench.statuses import Status

SUMMARY_TITLE = "Summary: the fastest framework on each device"
METRIC = METRICS["p50"]


def excluded_note(r: Record, emulated: Mapping[str, str]) -> str:
    """The note that says why an emulated or software cell is not ranked ("" for others);
    ``emulated``: the run's ``emulated_devices``, so every cell of a device has one note."""
    kind = r.measurement_kind
    if kind is MeasurementKind.SOFTWARE_DEVICE and r.accelerator is not None:
        device = r.accelerator.device or r.accelerator.api
        return software_note(f"{r.device} · {r.backend}", device)
    if kind is MeasurementKind.EMULATED_CPU:
        return emulation_note(r.device, emulated.get(r.device, ""))
    return ""


def _excluded(r: Record) -> str:
    """Why a cell has no place in the ranking ("" when it has one)."""
    if r.status != Status.OK:
        return status_word(r)
    kind = correctness_only(r)
    if kind:
        return kind
    return "" if METRIC.value(r) is not None else "no p50"


@dataclass(frozen=True)
class DeviceAnswer:
    """One device's cells of a group and their ranking on p50."""

    device: str
    cells: dict[str, Record]
    ranking: Ranking[str]


def answers(group: Sequence[Record]) -> list[DeviceAnswer]:
    """Per device of the group (in order of appearance), its cells ranked on p50."""
    frameworks = framework_order(group)
    out = []
    for device in dict.fromkeys(r.device for r in group):
        on_device = {r.engine: r for r in group if r.device == device}
        cells = {f: on_device[f] for f in frameworks if f in on_device}
        out.append(DeviceAnswer(device, cells, rank(cells, METRIC)))
    return out


def short_titles(keys: Sequence[GroupKey]) -> tuple[str, list[str]]:
    """The settings every group has (``fp32 · 1 thread · cores all``), said once, and each
    group's title without them: its model and what sets it apart."""
    settings = [group_title(key)[len(key[0]) + len(" · ") :].split(" · ") for key in keys]
    common = [p for p in settings[0] if all(p in parts for parts in settings)] if keys else []
    short = [
        " · ".join([key[0], *(p for p in parts if p not in common)])
        for key, parts in zip(keys, settings, strict=True)
    ]
    return " · ".join(common), short


def _ms(ranking: Ranking[str], framework: str) -> str:
    return fmt_number(ranking.values[framework], "ms")


def _answer(answer: DeviceAnswer) -> str:
    """The answer cell of a device's row (HTML)."""
    ranking = answer.ranking
    if ranking.best is not None:
        return f"★ <b>{esc(ranking.best)}</b> {esc(_ms(ranking, ranking.best))}"
    if ranking.tied:
        leaders = ", ".join(f"<b>{esc(f)}</b> {esc(_ms(ranking, f))}" for f in ranking.leaders)
        return f"≈ tie: {leaders}"
    if ranking.order:
        only = ranking.order[0]
        alone = "<span class='muted'>(the only cell ranked)</span>"
        return f"<b>{esc(only)}</b> {esc(_ms(ranking, only))} {alone}"
    if any(r.status == Status.OK and correctness_only(r) for r in answer.cells.values()):
        return (
            "<span class='muted'>nothing ranked: every cell that ran ok ran on an emulated CPU "
            "or a software device</span>"
        )
    return "<span class='muted'>nothing ranked: no cell ran ok</span>"


def _behind(ranking: Ranking[str]) -> str:
    """``mnn +87%, ncnn +2.1x``: how far each cell outside the leading group trails."""

    def gap(behind: float) -> str:
        return f"+{behind - 1:.0%}" if behind < 3 else f"{behind:.1f}x"

    return ", ".join(
        f"{esc(f)} {esc(gap(ranking.versus[f].behind))}"
        for f in ranking.order
        if f not in ranking.leaders and f in ranking.versus
    )


def _not_ranked(answer: DeviceAnswer, notes: Notes, emulated: Mapping[str, str]) -> str:
    """``onnxruntime, mnn (emulated CPU)[2], tnn (failed)``: the cells left out, by reason."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for framework, r in answer.cells.items():
        why = _excluded(r)
        if why:
            note = excluded_note(r, emulated) if r.status == Status.OK else ""
            by_reason.setdefault((why, note), []).append(framework)
    return ", ".join(
        f"{esc(', '.join(frameworks))} ({esc(why)}){notes.ref(note) if note else ''}"
        for (why, note), frameworks in by_reason.items()
    )


def _bars(answer: DeviceAnswer, anchors: Mapping[int, str]) -> list[Bar]:
    order = answer.ranking.order
    only = order[0] if len(order) == 1 else None
    return [
        Bar(
            answer.device,
            framework,
            METRIC.stored(r),
            METRICS["p99"].stored(r),
            answer.ranking.standing(framework) or ("only" if only == framework else ""),
            _excluded(r),
            anchors[id(r)],
        )
        for framework, r in answer.cells.items()
    ]


def summary_section(records: Sequence[Record], anchors: Mapping[int, str], notes: Notes) -> str:
    """One table with a row per model and device (the best framework, ties, how far the
    others trail, what was not ranked), then a chart per model ("" without records)."""
    if not records:
        return ""
    rule = notes.ref(RULE_SUMMARY)  # numbered first: the first reference on the page
    emulated = emulated_devices(records)
    grouped = group_records(records)
    shared, titles = short_titles(list(grouped))
    groups = [(t, answers(g)) for t, g in zip(titles, grouped.values(), strict=True)]
    excluded = any(_excluded(r) for r in records)
    rows, charts = [], []
    for title, device_answers in groups:
        for i, answer in enumerate(device_answers):
            head = (
                f'<td class="model" rowspan="{len(device_answers)}">{esc(title)}</td>'
                if i == 0
                else ""
            )
            tail = f"<td>{_not_ranked(answer, notes, emulated)}</td>" if excluded else ""
            rows.append(
                f"<tr>{head}<td>{esc(answer.device)}</td><td>{_answer(answer)}</td>"
                f"<td>{_behind(answer.ranking)}</td>{tail}</tr>"
            )
        bars = [b for answer in device_answers for b in _bars(answer, anchors)]
        charts.append(p50_chart(bars, title))
    head = "".join(
        f"<th>{h}</th>"
        for h in ("model", "device", "fastest (p50)", "behind it", "not ranked")[: 4 + excluded]
    )
    return (
        f'<section class="summary"><h2>{esc(SUMMARY_TITLE)}</h2>'
        '<p class="muted">Per model and device, the framework with the lowest p50 latency when '
        "its lead is real: ★ = best, ≈ = tied for best"
        f"{rule}; behind it = how much slower the others are"
        + (f"; every cell: {esc(shared)}" if shared else "")
        + ".</p>"
        f'<table class="answer"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
        "</tbody></table>"
        '<p class="muted">The bars are the p50, the whiskers reach the p99 (green: the best '
        "or tied for best); click a bar for the cell's details.</p>"
        f'<div class="charts">{"".join(charts)}</div>'
        f"{notes.listing('Notes:')}</section>"
    )
