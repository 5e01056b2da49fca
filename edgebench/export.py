"""Flat tables of records for pandas, spreadsheets and Parquet readers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .errors import UserError
from .records import Record

# Raw arrays stay in the JSON Lines file; a flat table carries their size only.
_NESTED = ("samples_ns", "warmup_samples_ns", "outputs", "device_info", "inputs")


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
        for key in _NESTED:
            if key != "inputs":
                row.pop(key, None)
        rows.append(row)
    return pd.DataFrame(rows)


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
