"""Records for analysis and reporting tests: a cell with seeded latency samples."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.analysis.statistics import latency_stats
from edgebench.results.records import Record


def sampled_record(
    device: str,
    framework: str,
    median_ms: float,
    seed: int,
    *,
    cv: float = 0.02,
    n: int = 300,
    model: str = "net",
    run_id: str = "r",
    status: str = "ok",
    **fields: Any,
) -> Record:
    """An fp32, 4-thread cell with ``n`` seeded lognormal samples (spread ``cv``) around
    ``median_ms`` and the statistics computed from them; ``fields`` set any other field."""
    rng = np.random.default_rng(seed)
    samples = (median_ms * 1e6 * rng.lognormal(0.0, cv, n)).astype(np.int64).tolist()
    return record_of_samples(
        device, framework, samples, model=model, run_id=run_id, status=status, **fields
    )


def record_of_samples(device: str, framework: str, samples: list[int], **fields: Any) -> Record:
    """An fp32, 4-thread cell with these samples (ns) and the statistics computed from them;
    ``fields`` set any other field (``model`` "net", ``run_id`` "r", ``status`` "ok" unless
    given)."""
    stats = latency_stats(samples)
    given = {"model": "net", "run_id": "r", "status": "ok", **fields}
    return Record(
        cell_id=f"{device}/{given['model']}/{framework}/fp32/t4/call/s1",
        device=device,
        framework=framework,
        precision="fp32",
        threads=4,
        cores="all",
        samples_ns=samples,
        n_samples=len(samples),
        latency_ms=stats.as_record() if stats else None,
        **given,
    )


def stored_records(results: Path) -> list[dict[str, Any]]:
    """Every record that runs under ``results`` (a results dir) stored, as JSON objects."""
    return [
        json.loads(line)
        for path in sorted(results.glob("*/records.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def variant_record(
    device: str, framework: str, median_ms: float, seed: int, *, variant: str, **fields: Any
) -> Record:
    """``sampled_record`` for one variant of a cell: its cell id names the streams
    (``concurrency``) and ends in ``variant`` (``i4-shared``, ``shape-1x3x160x160-dynamic``)."""
    record = sampled_record(device, framework, median_ms, seed, **fields)
    base = record.cell_id.rsplit("/", 1)[0]
    return replace(record, cell_id=f"{base}/s{record.concurrency}/{variant}")
