"""The text matrix, the reports' marks and the notes: ties are ties, noise is said once."""

from __future__ import annotations

import re

import numpy as np

from edgebench.analysis.statistics import latency_stats, stats_warnings
from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import format_details, format_matrix, group_warnings
from edgebench.reporting.report import render_markdown
from edgebench.results.record_warnings import (
    CORES_NOT_APPLIED,
    FEW_SAMPLES,
    HIGH_VARIANCE,
    NO_OUTPUT_CHECK,
    unclassified,
)
from edgebench.results.records import Record


def cell(device: str, framework: str, median_ms: float, cv: float, seed: int, **fields) -> Record:
    """A cell pooled from three rounds, with the warnings merge_rounds keeps today: each
    round's statistics warnings, then those of the pooled samples."""
    rng = np.random.default_rng(seed)
    samples = (median_ms * 1e6 * rng.lognormal(0.0, cv, 300)).astype(np.int64).tolist()
    per_round = [w for i in range(3) for w in stats_warnings(latency_stats(samples[i::3]))]
    pooled = latency_stats(samples)
    warnings = [w for w in dict.fromkeys(per_round) if not w.is_a(FEW_SAMPLES)]
    return Record(
        run_id="r",
        cell_id=f"{device}/resnet50/{framework}/fp32/t4/call/s1",
        device=device,
        model="resnet50",
        framework=framework,
        precision="fp32",
        threads=4,
        cores="all",
        status="ok",
        samples_ns=samples,
        n_samples=len(samples),
        latency_ms=pooled.as_record(),
        rounds=3,
        warnings=warnings + stats_warnings(pooled),
        **fields,
    )


def loaded_and_quiet() -> list[Record]:
    return [
        cell("loaded", "onnxruntime", 114, 0.20, seed=1),
        cell("loaded", "mnn", 116, 0.30, seed=2),
        cell("loaded", "openvino", 115, 0.10, seed=3),
        cell("quiet", "onnxruntime", 100, 0.02, seed=4),
        cell("quiet", "mnn", 130, 0.02, seed=5),
        cell("quiet", "openvino", 115, 0.02, seed=6),
    ]


def matrix_rows(text: str) -> dict[str, dict[str, str]]:
    lines = text.splitlines()
    header = lines[1].split()
    return {
        (parts := line.split())[0]: dict(zip(header[1:], parts[1:], strict=True))
        for line in lines[3:]
        if line.strip()
    }


def test_star_only_for_a_real_lead_and_ties_marked_on_each() -> None:
    text = format_matrix(loaded_and_quiet())
    heading = text.splitlines()[0]
    assert heading.endswith(
        "p50 latency (ms), * = best on the device, ≈ = tied for best (no 5% lead at p < 0.01)"
    )
    rows = matrix_rows(text)
    assert all(v.endswith("≈") for v in rows["loaded"].values()), rows["loaded"]
    assert "*" not in "".join(rows["loaded"].values())
    quiet = rows["quiet"]
    assert quiet["onnxruntime"].endswith("*")
    assert not quiet["mnn"].endswith(("*", "≈")) and not quiet["openvino"].endswith(("*", "≈"))


def test_scalar_metrics_tie_within_the_margin() -> None:
    records = [
        cell("d", "onnxruntime", 10, 0.02, seed=7, peak_rss_mb=100.0),
        cell("d", "openvino", 20, 0.02, seed=8, peak_rss_mb=103.0),
        cell("d", "mnn", 30, 0.02, seed=9, peak_rss_mb=150.0),
    ]
    text = format_matrix(records, "memory")
    assert "≈ = tied for best (within 5%)" in text.splitlines()[0]
    assert matrix_rows(text)["d"] == {"onnxruntime": "100≈", "mnn": "150", "openvino": "103≈"}
    # The same cells on latency: one clear best.
    assert matrix_rows(format_matrix(records))["d"]["onnxruntime"].endswith("*")


def test_warnings_are_grouped_per_kind_with_the_worst_value() -> None:
    no_reference = NO_OUTPUT_CHECK.make(reason="no ONNX reference for this model")
    warnings = [
        HIGH_VARIANCE.make(cv=0.12),
        FEW_SAMPLES.make(samples=40),
        HIGH_VARIANCE.make(cv=0.18),
        FEW_SAMPLES.make(samples=33),
        CORES_NOT_APPLIED.make(asked=[0], effective=[1]),
        CORES_NOT_APPLIED.make(asked=[0], effective=[2]),
        HIGH_VARIANCE.make(cv=0.15),
        no_reference,
        no_reference,
    ]
    assert group_warnings(warnings) == [
        "high variance (CV 18%) (worst of 3): pin cores, close other load, or raise --min-time",
        "only 33 samples (worst of 2): p99 is not a real tail (raise --iterations or --min-time)",
        "asked for cores [0] but the runner ran on [1] (+1 similar)",
        "no output check: no ONNX reference for this model",
    ]


def test_warnings_of_a_record_stored_before_kinds_are_shown_as_they_are() -> None:
    """Messages read from an old record have no kind or figures: none is taken for another's
    worse figure, only repeats are dropped."""
    old = [
        "high variance (CV 12%): pin cores, close other load, or raise --min-time",
        "high variance (CV 18%): pin cores, close other load, or raise --min-time",
        "high variance (CV 12%): pin cores, close other load, or raise --min-time",
    ]
    assert group_warnings([unclassified(w) for w in old]) == old[:2]


def test_details_say_each_warning_once_per_cell_and_quiet_runs_get_no_advice() -> None:
    text = format_details(loaded_and_quiet())
    notes = [line for line in text.splitlines() if ": warning: " in line]
    per_cell = [line.split(": warning: ")[0].strip() for line in notes]
    assert len(per_cell) == len(set(per_cell)) == 3  # the three loaded cells, once each
    mnn = next(line for line in notes if "loaded/resnet50/mnn" in line)
    cvs = [int(m) for m in re.findall(r"CV (\d+)%", mnn)]
    record = next(r for r in loaded_and_quiet() if r.cell_id.startswith("loaded/resnet50/mnn"))
    worst = max(int(m) for w in record.warnings for m in re.findall(r"CV (\d+)%", w.message))
    assert cvs == [worst]
    assert "noise:" not in text  # 3 of 6 cells noisy is not most of them


def test_a_mostly_noisy_run_says_once_how_to_quiet_the_machine() -> None:
    records = [
        cell("loaded", "onnxruntime", 114, 0.20, seed=1),
        cell("loaded", "mnn", 116, 0.30, seed=2),
        cell("quiet", "openvino", 115, 0.02, seed=3),
    ]
    text = format_details(records)
    assert text.count("To quiet the machine") == 1
    noise = text[text.index("noise:") :]
    for advice in ("--cores", "other load", "--set-governor performance", "--min-time"):
        assert advice in noise
    assert "--target-ci" in noise and "2 of 3 cells" in noise
    # The per-cell notes keep the figure but leave the advice to that one paragraph.
    notes = [line for line in text.splitlines() if "high variance" in line]
    assert len(notes) == 2 and not any("pin cores" in line for line in notes)
    assert "Noise." in render_html(records) and "**Noise**" in render_markdown(records)


def test_reports_mark_ties_like_the_matrix() -> None:
    records = loaded_and_quiet()
    md = render_markdown(records, "run-1")
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")[1:]]
        for line in md.splitlines()
        if line.startswith(("| loaded", "| quiet"))
    }
    assert all(c.endswith(" ≈") for c in rows["loaded"]), rows
    assert sum(c.endswith(" ★") for c in rows["quiet"]) == 1
    assert not any("★" in c for c in rows["loaded"])
    assert "≈ = tied for best" in md and "Mann-Whitney" in md

    page = render_html(records)
    p50 = page[page.index('<table class="heatmap">') : page.index("p99 latency")]
    loaded_row = p50[p50.index(">loaded<") : p50.index(">quiet<")]
    assert loaded_row.count(" ≈</a>") == 3 and "★" not in loaded_row
    assert p50[p50.index(">quiet<") :].count(" ★</a>") == 1
    assert "tied for best" in page and "behind onnxruntime: +" in page
