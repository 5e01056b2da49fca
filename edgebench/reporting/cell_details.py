"""The HTML report's per-cell details: a folded block per cell with its latency CDF,
telemetry traces, statistics, output check, accuracy, warnings and the stderr of a failure.
Every text is escaped: names, errors and warnings come from untrusted records."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from edgebench.analysis.metrics import energy_metric
from edgebench.analysis.ranking import EMULATED_RULE, correctness_only, correctness_only_evidence
from edgebench.reporting.charts import latency_cdf_svg, telemetry_svgs
from edgebench.reporting.matrix import group_warnings, rate_unit, status_word
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number
from edgebench.results.quant_parts import Quant
from edgebench.results.records import Record
from edgebench.statuses import MEASURED, Status


def kv_table(rows: Iterable[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta">{body}</table>' if body else ""


def cell_details(r: Record, anchor: str, expand: bool = False) -> str:
    lat = r.latency_ms or {}
    stand_in = correctness_only(r)
    open_attr = " open" if expand or r.status != Status.OK else ""
    out = [
        f'<details id="{anchor}"{open_attr}><summary>{esc(r.device)} / {esc(r.engine)} '
        f'<span class="status {esc(r.status)}">{esc(status_word(r))}</span>'
        + (f'<span class="status emu">{stand_in}</span>' if stand_in else ""),
        f" <span class='muted'>p50 {esc(fmt_number(lat.get('p50'), 'ms'))}</span></summary>",
    ]
    if r.error:
        out.append(f'<div class="err">{esc(r.error)}</div>')
    stats: list[tuple[str, Any]] = [
        (key, fmt_number(lat.get(key), "ms"))
        for key in ("min", "p50", "p90", "p95", "p99", "mean", "std")
        if lat.get(key) is not None
    ]
    if lat.get("cv") is not None:
        stats.append(("cv", f"{lat['cv']:.1%}"))
    stats += [
        ("samples", r.n_samples or len(r.samples_ns) or "-"),
        ("throughput", fmt_number(r.throughput_ips, rate_unit(r))),
        ("peak RSS", fmt_number(r.peak_rss_mb if r.status in MEASURED else None, "MB")),
        (energy_metric(r.framework).label, fmt_number(r.energy_mj_per_inf, "mJ")),
        ("average power", fmt_number(r.avg_power_w, "W")),
        ("CPU time / inference", fmt_number(r.cpu_ms_per_inf, "ms")),
        ("first inference", fmt_number(r.first_inference_ms, "ms")),
        ("framework version", r.framework_version or "-"),
    ]
    if r.nvidia is not None:
        stats.insert(0, ("NVIDIA", r.nvidia.describe()))
    if r.accelerator is not None:
        stats.insert(0, ("accelerator", r.accelerator.describe()))
    if stand_in:
        evidence = correctness_only_evidence(r) or "yes"
        stats.insert(0, (stand_in, f"{evidence}: {EMULATED_RULE}"))
    hatch = f"{anchor}-emulated" if stand_in else ""
    charts = [
        latency_cdf_svg(r.samples_ns, lat, hatch=hatch),
        *telemetry_svgs(r.telemetry, hatch=hatch),
    ]
    charts = [c for c in charts if c]
    if charts:
        out.append('<div class="charts">' + "".join(charts) + "</div>")
    else:
        out.append('<p class="muted">no latency samples or telemetry for this cell</p>')
    out.append("<h3>statistics</h3>" + kv_table(stats))
    if r.output_check is not None:
        check = r.output_check.to_dict()
        rows: list[tuple[str, Any]] = [
            (k, check[k])
            for k in (
                "passed",
                "reference",
                "tolerance",
                "max_abs_diff",
                "rel_error",
                "cosine",
                "top1_agreement",
            )
            if k in check
        ]
        out.append("<h3>output check</h3>" + kv_table(rows))
    if r.accuracy or r.quant:
        quant = r.quant or Quant(method=None)
        calibration = quant.calibration
        accuracy = dataclasses.asdict(r.accuracy) if r.accuracy is not None else {}
        rows = [(k, v) for k, v in accuracy.items() if k != "passed"]
        rows += [
            ("quantization", quant.method),
            ("granularity", quant.granularity),
            ("fp32 fallback ops", ", ".join(quant.fp32_fallback_ops) or "none"),
            (
                "calibration set",
                f"{calibration.n} samples, sha256 {str(calibration.sha256)[:12]}"
                + (" (synthetic)" if calibration.synthetic else "")
                if calibration
                else "-",
            ),
        ]
        out.append("<h3>accuracy vs fp32 ONNX Runtime</h3>" + kv_table(rows))
    if r.warnings:
        out.append(
            "<h3>warnings</h3><ul>"
            + "".join(f"<li>{esc(w)}</li>" for w in group_warnings(r.warnings))
            + "</ul>"
        )
    if r.energy_flags:
        out.append(
            "<h3>energy flags</h3><ul>"
            + "".join(f"<li>{esc(f)}</li>" for f in r.energy_flags)
            + "</ul>"
        )
    if r.stderr_tail and r.status != Status.OK:
        out.append(f'<h3>stderr (tail)</h3><div class="err">{esc(r.stderr_tail)}</div>')
    out.append("</details>")
    return "".join(out)
