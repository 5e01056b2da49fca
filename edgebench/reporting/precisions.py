"""fp32, fp16 and int8 side by side: per device, model and framework, each precision's latency
with its speed-up over fp32, and for quantized precisions what it costs in accuracy.

Shown when a run measured more than one precision; the text matrix, the Markdown and the HTML
report all lay out the same rows from ``precision_rows``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from edgebench.analysis.metrics import get_metric
from edgebench.reporting.matrix import STATUS_LABELS, status_word
from edgebench.reporting.tables import fmt_number, format_table
from edgebench.results.records import Record
from edgebench.statuses import Status

PRECISION_ORDER = ("fp32", "fp16", "int8", "int8-weights")
BASELINE = "fp32"


@dataclass
class PrecisionRow:
    device: str
    model: str
    framework: str
    setting: str  # threads, cores, streams when the run swept them
    cells: dict[str, str] = field(default_factory=dict)  # precision -> text


def precisions_of(records: Sequence[Record]) -> list[str]:
    present = list(dict.fromkeys(r.precision for r in records))
    return [p for p in PRECISION_ORDER if p in present] + [
        p for p in present if p not in PRECISION_ORDER
    ]


def accuracy_text(record: Record) -> str:
    """``top-1 98% · 23.1 dB`` from a quantized record's accuracy, or ""."""
    acc = record.accuracy
    parts = []
    if acc is not None and acc.top1_agreement is not None:
        parts.append(f"top-1 {acc.top1_agreement:.0%}")
    if acc is not None and acc.sqnr_db is not None:
        parts.append(f"{acc.sqnr_db:.1f} dB")
    return " · ".join(parts)


def _cell_text(record: Record, baseline: float | None, metric_name: str) -> str:
    metric = get_metric(metric_name)
    accuracy = accuracy_text(record)
    if record.status != Status.OK:
        word = status_word(record) if record.status == Status.SKIPPED else None
        word = word or STATUS_LABELS.get(record.status, record.status)
        return f"{word} ({accuracy})" if accuracy else word
    value = metric.stored(record)
    text = fmt_number(value)
    if record.precision != BASELINE and baseline and value:
        text += f" ({baseline / value:.2f}x)"
    if accuracy:
        text += f" {accuracy}"
    return text


def precision_rows(records: Sequence[Record], metric_name: str = "p50") -> list[PrecisionRow]:
    """One row per (device, model, framework and backend, threads, cores, streams); empty unless the
    records hold more than one precision."""
    if len(precisions_of(records)) < 2:
        return []
    metric = get_metric(metric_name)
    groups: dict[tuple, dict[str, Record]] = {}
    for r in records:
        key = (r.device, r.model, r.engine, r.threads, r.cores, r.concurrency)
        groups.setdefault(key, {})[r.precision] = r
    swept = len({k[3:] for k in groups}) > 1
    rows = []
    for (device, model, framework, threads, cores, streams), by_precision in groups.items():
        base = by_precision.get(BASELINE)
        baseline = metric.stored(base) if base is not None and base.status == Status.OK else None
        setting = f"{threads}t cores {cores}" + (f" s{streams}" if streams > 1 else "")
        row = PrecisionRow(device, model, framework, setting if swept else "")
        for precision, record in by_precision.items():
            row.cells[precision] = _cell_text(record, baseline, metric_name)
        rows.append(row)
    return rows


def precision_table(
    records: Sequence[Record], metric_name: str = "p50"
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the side-by-side table; no rows when one precision was measured.
    Generative records are left out: their weight types are not precisions of one ONNX model
    checked against fp32 ONNX Runtime (each generative table shows its own)."""
    records = [r for r in records if r.generation is None]
    rows = precision_rows(records, metric_name)
    precisions = precisions_of(records)
    setting = any(r.setting for r in rows)
    header = ["device", "model", "framework", *(["setting"] if setting else []), *precisions]
    body = [
        [
            r.device,
            r.model,
            r.framework,
            *([r.setting] if setting else []),
            *(r.cells.get(p, "") for p in precisions),
        ]
        for r in rows
    ]
    return header, body


def format_precisions(records: Sequence[Record], metric_name: str = "p50") -> str:
    """The text table, or "" when only one precision was measured."""
    header, body = precision_table(records, metric_name)
    if not body:
        return ""
    metric = get_metric(metric_name)
    title = (
        f"precisions — {metric.label} ({metric.unit}), (Nx) = speed-up over fp32, "
        "top-1 / dB = agreement with fp32 ONNX Runtime and SQNR on the evaluation set"
    )
    return "\n".join([title, *format_table(header, body), ""])
