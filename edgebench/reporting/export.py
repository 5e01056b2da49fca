"""Flat tables of records for pandas, spreadsheets and Parquet readers.

One row per record, one column per field. Raw arrays and bulky detail (samples, outputs,
telemetry, device facts) stay in the JSON Lines file; the few figures readers want from them
get columns of their own. What is left nested (``quant``, ``accuracy``, ``stages``,
``instances``, ...) is written as compact JSON text, without its raw ``samples_ns`` arrays, so
any reader can parse it back with ``json.loads``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from edgebench.analysis.metrics import get_metric
from edgebench.errors import UserError
from edgebench.results.records import Record

# Raw arrays and nested detail stay in the JSON Lines file; the flat table keeps scalars.
_NESTED = (
    "samples_ns",
    "warmup_samples_ns",
    "outputs",
    "device_info",
    "inputs",
    "telemetry",
    "energy",
    "output_check",
    "artifact",
    "native",
)

#: A generative record's figures (analysis.metrics), each a column named with its unit
#: (``decode_tok_per_s``, ``ttft_ms``); the whole ``generation`` part stays a JSON column.
_GENERATIVE = tuple(get_metric(name) for name in ("decode", "prefill", "ttft"))


def records_frame(records: Sequence[Record]) -> pd.DataFrame:
    rows = []
    for record in records:
        row = record.to_dict()
        for key, value in (row.pop("latency_ms") or {}).items():
            row[f"latency_ms_{key}"] = value
        info = row.get("device_info") or {}
        row["cpu_model"] = info.get("cpu_model")
        row["kernel"] = info.get("kernel")
        row["governor"] = ",".join(info.get("governors") or [])
        row["inputs"] = ";".join(
            f"{i['name']}={'x'.join(str(d) for d in i['shape'])}" for i in row.get("inputs") or []
        )
        row["cores_effective"] = ",".join(str(c) for c in row.get("cores_effective") or [])
        row["warnings"] = " | ".join(row.get("warnings") or [])
        row["energy_flags"] = " | ".join(row.get("energy_flags") or [])
        check = row.get("output_check") or {}
        for key in ("max_abs_diff", "rel_error", "cosine", "top1_agreement", "passed"):
            row[f"output_{key}"] = check.get(key)
        artifact = row.get("artifact") or {}
        row["artifact_format"] = artifact.get("format")
        row["artifact_converter_version"] = artifact.get("converter_version")
        row["native_tool"] = (row.get("native") or {}).get("tool")
        row["baseline_power_w"] = (row.get("energy") or {}).get("baseline_power_w")
        if record.generation is not None:
            for metric in _GENERATIVE:
                row[f"{metric.name}_{metric.unit.replace('/', '_per_')}"] = metric.value(record)
        for key in _NESTED:
            if key != "inputs":
                row.pop(key, None)
        rows.append({key: _flat(value) for key, value in row.items()})
    return pd.DataFrame(rows)


def _without_samples(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_samples(v) for k, v in value.items() if k != "samples_ns"}
    if isinstance(value, list):
        return [_without_samples(v) for v in value]
    return value


def _flat(value: Any) -> Any:
    """A cell of the flat table: scalars as they are, a dict or list as JSON text."""
    if isinstance(value, dict | list):
        return json.dumps(_without_samples(value), separators=(",", ":"))
    return value


def export_run(records: Sequence[Record], target: Path, fmt: str) -> int:
    frame = records_frame(records)
    if fmt == "csv":
        frame.to_csv(target, index=False)
    elif fmt == "parquet":
        try:
            frame.to_parquet(target, index=False)
        except ImportError as exc:
            raise UserError(
                "Parquet export needs pyarrow: pip install 'edgebench[parquet]'"
            ) from exc
    else:
        raise UserError(f"unknown export format {fmt!r}; use csv or parquet")
    return len(frame)
