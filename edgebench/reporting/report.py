"""Write a stored run as report files: HTML, Markdown (for a PR comment), CSV, Parquet, JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from edgebench.analysis.metrics import get_metric
from edgebench.analysis.ranking import RULE_SUMMARY, correctness_only, rank
from edgebench.errors import UserError
from edgebench.reporting.breakdown_tables import Table, breakdown_report
from edgebench.reporting.export import export_run
from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import (
    REPORT_MARKS,
    emulated_mark,
    emulation_notes,
    framework_order,
    group_records,
    group_title,
    legend_for,
    quiet_machine_advice,
    status_word,
)
from edgebench.reporting.precisions import precision_table
from edgebench.reporting.tables import fmt_number, shorten
from edgebench.results.records import Record
from edgebench.results.store import RunDir
from edgebench.statuses import PROBLEMS, Status

FORMATS = ("html", "md", "csv", "parquet", "json")


def _md_cell(text: str) -> str:
    """Markdown table cells: no pipes, no newlines, no HTML tags."""
    return (
        " ".join(text.split())
        .replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(_md_cell(h) for h in header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows),
    ]


def _markdown_precisions(records: Sequence[Record]) -> list[str]:
    header, body = precision_table(records)
    if not body:
        return []
    lines = [
        "**Precisions** — p50 latency (ms), (Nx) = speed-up over fp32; top-1 and dB = "
        "agreement with fp32 ONNX Runtime and SQNR on the evaluation set",
        "",
        *_md_table(header, body),
    ]
    return [*lines, ""]


def _markdown_breakdown_table(section: str, table: Table) -> list[str]:
    caption = f" — {_md_cell(table.caption)}" if table.caption else ""
    lines = [f"**{_md_cell(section)}: {_md_cell(table.title)}**{caption}", ""]
    lines += _md_table(table.header, table.rows)
    lines += ["", *(f"- {_md_cell(note)}" for note in table.notes)]
    return lines + [""] * bool(table.notes)


def _markdown_breakdowns(records: Sequence[Record]) -> list[str]:
    """Stages, top operators, memory vs instances, latency vs input size: the HTML report's
    tables, without its charts."""
    lines = []
    for section in breakdown_report(records):
        for table in section.tables:
            lines += _markdown_breakdown_table(section.title, table)
        if section.unavailable:
            lines += [f"**{_md_cell(section.title)}: not measured**", ""]
            lines += [f"- {_md_cell(reason)}" for reason in section.unavailable] + [""]
    return lines


def render_markdown(records: Sequence[Record], run_id: str = "") -> str:
    """Per model a device x framework table of p50 (ms): ★ marks the best ok cell on the
    device, ≈ each cell of a leading group that is tied (analysis.ranking decides); a cell
    measured on an emulated CPU is marked (emulated) and never ★ or ≈."""
    metric = get_metric("p50")
    frameworks = framework_order(records)
    lines = [f"### edgebench run `{_md_cell(run_id)}`" if run_id else "### edgebench run", ""]
    if not records:
        lines.append("No cells were recorded.")
    for key, group in group_records(records).items():
        group_fw = [f for f in frameworks if any(r.engine == f for r in group)]
        legend = legend_for(group)
        lines += [
            f"**{_md_cell(group_title(key))}** — p50 latency (ms), ★ = best on the device, "
            f"≈ = tied for best{legend}",
            "",
        ]
        lines.append("| device | " + " | ".join(_md_cell(f) for f in group_fw) + " |")
        lines.append("|---|" + "---:|" * len(group_fw))
        for device in dict.fromkeys(r.device for r in group):
            cells = {r.engine: r for r in group if r.device == device}
            values = {
                f: v
                for f, r in cells.items()
                if r.status == Status.OK and (v := metric.stored(r)) is not None
            }
            ranking = rank(cells, metric)
            row = []
            for framework in group_fw:
                r = cells.get(framework)
                if r is None:
                    row.append("")
                elif r.status != Status.OK:
                    row.append(_md_cell(status_word(r)))
                elif correctness_only(r):
                    row.append(fmt_number(values.get(framework)) + emulated_mark(r))
                elif framework in values:
                    mark = REPORT_MARKS.get(ranking.standing(framework), "")
                    row.append(fmt_number(values[framework]) + mark)
                else:
                    row.append("-")
            lines.append(f"| {_md_cell(device)} | " + " | ".join(row) + " |")
        lines.append("")
    if records:
        lines += [f"_★ and ≈: {RULE_SUMMARY}._", ""]
    lines += _markdown_precisions(records)
    lines += _markdown_breakdowns(records)
    notes = emulation_notes(records)
    if notes:
        lines += [f"- {_md_cell(note)}" for note in notes] + [""]
    advice = quiet_machine_advice(records)
    if advice:
        lines += ["**Noise**: " + " ".join(advice), ""]
    problems = [r for r in records if r.status in PROBLEMS]
    if problems:
        lines += ["**Problems**", ""]
        for r in problems:
            reason = (
                (r.error or r.status).strip().splitlines()[0]
                if (r.error or "").strip()
                else r.status
            )
            reason = shorten(reason, 200)
            lines.append(
                f"- {_md_cell(r.device)} / {_md_cell(r.model)} / {_md_cell(r.engine)}: "
                f"{r.status} — {_md_cell(reason)}"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_report(run_dir: RunDir, formats: Sequence[str], out_dir: Path) -> list[Path]:
    """Write ``<run_id>.<ext>`` into ``out_dir`` for each format; return the paths written."""
    wanted = [f.strip().lower() for f in formats if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown or not wanted:
        shown = ", ".join(repr(f) for f in unknown) or "none"
        raise UserError(f"unknown report format {shown}; valid formats: {', '.join(FORMATS)}")
    records = run_dir.current_records()
    meta = run_dir.metadata()
    run_id = run_dir.run_id
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create report dir {out_dir}: {exc.strerror}") from exc
    written: list[Path] = []
    for fmt in dict.fromkeys(wanted):
        target = out_dir / f"{run_id}.{fmt}"
        if fmt == "html":
            target.write_text(render_html(records, {"run_id": run_id, **meta}), encoding="utf-8")
        elif fmt == "md":
            target.write_text(render_markdown(records, run_id), encoding="utf-8")
        elif fmt in ("csv", "parquet"):
            export_run(records, target, fmt)
        else:
            data = [r.to_dict() for r in records]
            target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        written.append(target)
    return written
