"""The breakdown reports: stages, top operators, memory vs instances, latency vs input size.

The figures are checked through analysis.breakdowns, the pages by reading their tables back
(an HTML parser, no expected markup) and the Markdown by its table rows.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from html import escape, unescape
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest
from fakes.records import sampled_record, variant_record

from edgebench.analysis.breakdown_series import (
    CLIFF_FACTOR,
    ShapePoint,
    cliffs,
    memory_series,
    shape_series,
)
from edgebench.analysis.breakdowns import (
    UNATTRIBUTED,
    compare_ops,
    op_breakdown,
    op_family,
    stage_summary,
)
from edgebench.analysis.statistics import latency_stats
from edgebench.reporting.breakdown_tables import (
    MEMORY_TITLE,
    OPS_TITLE,
    SHAPES_TITLE,
    STAGES_TITLE,
    breakdown_report,
)
from edgebench.reporting.breakdowns import breakdown_sections
from edgebench.reporting.html import render_html
from edgebench.reporting.report import render_markdown
from edgebench.results.records import Record

EVIL = "<script>alert(1)</script>"
TITLES = (STAGES_TITLE, OPS_TITLE, MEMORY_TITLE, SHAPES_TITLE)
ORT_BOUNDARIES = {
    "copy_in": "IOBinding.bind_cpu_input per input",
    "compute": "InferenceSession.run_with_iobinding",
    "copy_out": "IOBinding.copy_outputs_to_cpu",
}
NCNN_BOUNDARIES = {
    "copy_in": "Extractor.input (numpy -> Mat)",
    "compute": "Extractor.extract: ncnn runs the graph lazily here",
    "copy_out": "Mat -> numpy copy only",
}


# ---------------------------------------------------------------------------------------------
# Records


def _stages(
    seed: int, boundaries: dict[str, str], n: int = 200, **medians_ms: float
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    samples, p50, p99 = {}, {}, {}
    for stage, ms in medians_ms.items():
        values = (ms * 1e6 * rng.lognormal(0.0, 0.02, n)).astype(np.int64)
        samples[stage] = values.tolist()
        p50[stage] = float(np.percentile(values, 50)) / 1e6
        p99[stage] = float(np.percentile(values, 99)) / 1e6
    return {"samples_ns": samples, "p50_ms": p50, "p99_ms": p99, "boundaries": boundaries}


def _stage_record(
    framework: str,
    total_ms: float,
    seed: int,
    boundaries: dict[str, str],
    *,
    device: str = "pixel",
    model: str = "vit-tiny",
    aligned: bool = True,
    **medians_ms: float,
) -> Record:
    """``aligned``: each iteration's sample is its stages' sum plus a gap of about ``total_ms``
    less the stages' medians (time no stage covers), as a runner records them; otherwise the
    stage samples are drawn apart from the iteration's and do not line up with them."""
    n = 300 if aligned else 200
    stages = _stages(seed, boundaries, n, **medians_ms)
    record = sampled_record(device, framework, total_ms, seed, model=model, stages=stages, n=300)
    if aligned:
        gap_ms = max(0.0, total_ms - sum(medians_ms.values()))
        spread = np.random.default_rng(seed + 1000).lognormal(0.0, 0.02, n)
        stage_sum = np.sum([stages["samples_ns"][s] for s in medians_ms], axis=0)
        summed = stage_sum + gap_ms * 1e6 * spread
        samples = summed.astype(np.int64).tolist()
        return replace(record, samples_ns=samples, latency_ms=latency_stats(samples).as_record())
    return record


def _profile(ops: list[tuple[str, str, str | None, float]]) -> dict[str, Any]:
    total = sum(op[3] for op in ops)
    return {
        "iterations": 20,
        "source": "framework profiler",
        "ops": [
            {"name": name, "type": kind, "impl": impl, "time_ms": ms, "count": 1}
            for name, kind, impl, ms in ops
        ],
        "total_ms": total,
        "inference_ms": total * 1.05,
    }


def _op_record(
    framework: str,
    p50: float,
    ops: list[tuple[str, str, str | None, float]],
    *,
    device: str = "pixel",
    model: str = "vit-tiny",
) -> Record:
    return sampled_record(device, framework, p50, 7, model=model, op_profile=_profile(ops))


def _vit_profiles(model: str = "vit-tiny", device: str = "pixel") -> list[Record]:
    """MNN slower than ONNX Runtime on a ViT, because of its MatMul and Softmax."""
    ort = [
        ("blocks.0.attn.qkv", "MatMul", "MlasGemm", 2.0),
        ("blocks.0.mlp.fc1", "MatMul", "MlasGemm", 1.5),
        ("blocks.0.attn.softmax", "Softmax", None, 0.5),
        ("blocks.0.norm1", "LayerNormalization", None, 0.4),
        ("patch_embed", "Conv", "MlasConv", 0.6),
    ]
    mnn = [
        ("blocks.0.attn.qkv", "MatMul", "Arm82Gemm", 4.5),
        ("blocks.0.mlp.fc1", "MatMul", "Arm82Gemm", 3.0),
        ("blocks.0.attn.softmax", "Softmax", None, 1.6),
        ("blocks.0.norm1", "LayerNorm", None, 0.3),
        ("patch_embed", "Convolution", "Conv1x1Strassen", 0.7),
    ]
    tflite = [
        ("qkv", "FULLY_CONNECTED", "xnnpack", 2.6),
        ("fc1", "FULLY_CONNECTED", "xnnpack", 1.9),
        ("softmax", "SOFTMAX", None, 0.6),
        ("norm1", "MEAN", None, 0.5),
        ("patch", "CONV_2D", "xnnpack", 0.5),
    ]
    return [
        _op_record("onnxruntime", 5.2, ort, device=device, model=model),
        _op_record("mnn", 10.5, mnn, device=device, model=model),
        _op_record("tflite", 6.3, tflite, device=device, model=model),
    ]


def _instance_record(
    framework: str, mode: str, n: int, p50: float, seed: int, *, per_instance: float
) -> Record:
    after = [80.0 + per_instance * (i + 1) for i in range(n)]
    return variant_record(
        "pixel",
        framework,
        p50,
        seed,
        variant=f"i{n}-{mode}",
        model="mobilenet",
        concurrency=n,
        throughput_ips=n * 1000 / p50,
        instances={
            "count": n,
            "mode": mode,
            "rss_before_load_mb": 80.0,
            "rss_after_load_mb": after,
            "rss_running_mb": after[-1] + 4 * n,
            "per_instance_mb": per_instance,
        },
    )


def _instance_records() -> list[Record]:
    out = []
    for framework, separate_mb, shared_mb in (("onnxruntime", 30.0, 6.0), ("mnn", 20.0, 4.0)):
        for i, n in enumerate((1, 2, 4)):
            p50 = 4.0 + n
            out.append(_instance_record(framework, "separate", n, p50, i, per_instance=separate_mb))
            out.append(_instance_record(framework, "shared", n, p50, i + 9, per_instance=shared_mb))
    return out


def _shape_record(
    framework: str,
    mode: str,
    side: int,
    p50: float,
    seed: int,
    *,
    previous: int | None = None,
    model: str = "resnet",
) -> Record:
    dims = [1, 3, side, side]
    change = None
    if previous is not None:
        before = [{"name": "input", "shape": [1, 3, previous, previous], "dtype": "float32"}]
        change = {"from": before, "resize_ms": 1.5, "first_ms": p50 * 3}
    return variant_record(
        "pixel",
        framework,
        p50,
        seed,
        variant=f"shape-1x3x{side}x{side}-{mode}",
        model=model,
        inputs=[{"name": "input", "shape": dims, "dtype": "float32"}],
        shape={"mode": mode, "pixels": math.prod(dims), "change": change},
    )


SIDES = (160, 224, 320)


def _shape_records() -> list[Record]:
    """ONNX Runtime scales with the pixels (fixed and dynamic); MNN's dynamic artifact falls
    off a cliff from 224 to 320."""
    out = []
    for i, side in enumerate(SIDES):
        linear = 4.0 * side * side / 160**2
        out.append(_shape_record("onnxruntime", "fixed", side, linear, i))
        out.append(_shape_record("onnxruntime", "dynamic", side, linear * 1.05, i + 3,
                                 previous=SIDES[i - 1] if i else None))  # fmt: skip
        mnn = linear * (4.0 if side == 320 else 1.0)
        out.append(_shape_record("mnn", "dynamic", side, mnn, i + 6,
                                 previous=SIDES[i - 1] if i else None))  # fmt: skip
    return out


def _stage_records() -> list[Record]:
    return [
        _stage_record("onnxruntime", 6.0, 1, ORT_BOUNDARIES,
                      copy_in=0.3, compute=5.0, copy_out=0.2),
        _stage_record("ncnn", 8.0, 2, NCNN_BOUNDARIES, copy_in=0.4, compute=7.0, copy_out=0.1),
        # TFLite: invoke() writes straight into the output tensor, so copy-out is merged.
        _stage_record("tflite", 7.0, 3, {"copy_out": "merged into compute (invoke)"},
                      copy_in=0.5, compute=6.5),
        sampled_record("pixel", "openvino", 5.0, 4, model="vit-tiny",
                       stages={"unavailable": "the native tool times whole inferences only"}),
    ]  # fmt: skip


def demo_records() -> list[Record]:
    """Every breakdown, for the demo page and the section tests."""
    return [*_stage_records(), *_vit_profiles(), *_instance_records(), *_shape_records()]


# ---------------------------------------------------------------------------------------------
# Reading pages back


class _Tables(HTMLParser):
    """Each table of an HTML fragment as rows of (text, class) cells."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: list[list[list[tuple[str, str]]]] = []
        self._cell: list[str] | None = None
        self._class = ""
        self._svg = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._class = [], dict(attrs).get("class") or ""
        elif tag == "svg":
            self._svg += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(("".join(self._cell).strip(), self._class))
            self._cell = None
        elif tag == "svg":
            self._svg -= 1

    def handle_data(self, data: str) -> None:
        if self._cell is not None and not self._svg:
            self._cell.append(data)


def _section(page: str, title: str) -> str:
    """The HTML of the breakdown section titled ``title`` ("" when absent)."""
    for part in page.split('<section class="bd ')[1:]:
        if part.split("<h2>", 1)[1].startswith(escape(title)):
            return part.split("</section>", 1)[0]
    return ""


def _rows(table: list[list[tuple[str, str]]]) -> list[dict[str, tuple[str, str]]]:
    header = [text for text, _ in table[0]]
    return [dict(zip(header, row, strict=False)) for row in table[1:]]


def _md_rows(md: str, heading: str) -> list[dict[str, str]]:
    """The rows of the Markdown table under the bold line starting with ``heading``."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"**{heading}"))
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip("|").split(" | ")])
    return [dict(zip(table[0], row, strict=True)) for row in table[2:]]


# ---------------------------------------------------------------------------------------------
# Stages


def test_stage_shares_add_up_with_the_unattributed_remainder() -> None:
    record = _stage_record("onnxruntime", 6.0, 1, ORT_BOUNDARIES, copy_in=0.3, compute=5.0,
                           copy_out=0.2)  # fmt: skip
    summary = stage_summary(record)
    assert summary is not None and summary.total_ms == record.latency_ms["p50"]
    assert summary.p50_ms["compute"] == pytest.approx(5.0, rel=0.02)
    assert summary.remainder_ms == pytest.approx(0.5, abs=0.1)
    assert sum(summary.shares.values()) == pytest.approx(1.0)
    assert summary.shares[UNATTRIBUTED] == pytest.approx(
        summary.remainder_ms / summary.total_ms, rel=0.03
    )
    assert summary.shares["compute"] == pytest.approx(5.0 / 6.0, rel=0.03)


def test_stage_samples_that_do_not_line_up_with_the_iterations_leave_no_remainder() -> None:
    # Drawn apart, the stages' p50s sum past the iteration's p50: no per-iteration remainder.
    record = _stage_record("ncnn", 5.0, 2, NCNN_BOUNDARIES, aligned=False, copy_in=0.5,
                           compute=4.8, copy_out=0.2)  # fmt: skip
    summary = stage_summary(record)
    assert summary is not None and summary.remainder_ms == 0.0
    assert UNATTRIBUTED not in summary.shares
    assert sum(summary.shares.values()) == pytest.approx(1.0)


def test_a_merged_stage_and_stages_from_samples_only() -> None:
    record = _stage_record("tflite", 7.0, 3, {}, copy_in=0.5, compute=6.5)
    summary = stage_summary(record)
    assert summary is not None and summary.merged == ["copy_out"]
    record.stages.p50_ms = None  # an older writer: the p50s come from the raw samples
    again = stage_summary(record)
    assert again is not None
    assert again.p50_ms == pytest.approx(summary.p50_ms)


def test_stages_section_rows_bars_boundaries_and_reasons() -> None:
    page = render_html(_stage_records())
    section = _section(page, STAGES_TITLE)
    assert section
    (table,) = _Tables(section).tables
    rows = {row["framework"][0]: row for row in _rows(table)}
    assert set(rows) == {"onnxruntime", "ncnn", "tflite"}, "an unavailable record is no row"
    assert rows["tflite"]["copy-out ms (%)"][0] == "merged"
    columns = ("copy-in ms (%)", "compute ms (%)", "copy-out ms (%)", "unattributed ms (%)")
    shares = [re.search(r"\((\d+)%\)", rows["onnxruntime"][c][0]) for c in columns]
    assert all(shares)
    assert sum(int(m.group(1)) for m in shares if m) == pytest.approx(100, abs=2)
    assert section.count('class="stagebar"') == 3
    assert "ncnn runs the graph lazily here" in section
    assert "the native tool times whole inferences only" in section


def _compute_only_records(model: str) -> list[Record]:
    """Two frameworks whose iterations are all but entirely compute (97-99%)."""
    return [
        _stage_record("onnxruntime", 6.0, 11, ORT_BOUNDARIES, model=model,
                      copy_in=0.05, compute=5.9, copy_out=0.05),
        _stage_record("ncnn", 8.0, 12, NCNN_BOUNDARIES, model=model,
                      copy_in=0.1, compute=7.8, copy_out=0.1),
    ]  # fmt: skip


def test_a_compute_only_stage_split_is_folded_and_one_that_matters_stays_open() -> None:
    folded = _section(render_html(_compute_only_records("resnet50")), STAGES_TITLE)
    (fold,) = re.findall(r"<details[^>]*>.*?</details>", folded, flags=re.S)
    assert fold.startswith('<details class="fold">'), "closed: no open attribute"
    summary = unescape(re.sub(r"<[^>]+>", "", fold.split("</summary>")[0]))
    assert re.fullmatch(r"stages: compute 9[5-9]–(9[5-9]|100)% in every cell", summary), summary
    assert len(_Tables(fold).tables) == 1, "the table is kept inside the fold"

    mixed = render_html([*_stage_records(), *_compute_only_records("resnet50")])
    section = _section(mixed, STAGES_TITLE)
    before_fold, fold = section.split('<details class="fold">')
    assert "<h3>vit-tiny</h3>" in before_fold, "compute 83-93%: the split matters, shown open"
    assert "<summary>stages of resnet50: compute" in '<details class="fold">' + fold
    assert "<h3>resnet50</h3>" in fold


def test_stage_boundaries_and_captions_are_given_once() -> None:
    records = [
        *_stage_records(),
        *(_stage_record("onnxruntime", 6.0, 5, ORT_BOUNDARIES, model=m, copy_in=0.3,
                        compute=5.0, copy_out=0.2) for m in ("resnet50", "detector")),
    ]  # fmt: skip
    section = _section(render_html(records), STAGES_TITLE)
    assert section.count("<h3>") == 3
    assert section.count("IOBinding.copy_outputs_to_cpu") == 1
    assert section.count("ncnn runs the graph lazily here") == 1
    assert section.count("p50 of each stage (its share") == 1
    # Each table points to its frameworks' notes, and every note it points to is listed once.
    refs = re.findall(r'href="#(note-\d+)"', section)
    assert len(refs) == 3 + 1 + 1
    assert all(section.count(f'id="{ref}"') == 1 for ref in refs)


# ---------------------------------------------------------------------------------------------
# Operators


def test_ops_are_summed_per_type_with_shares_and_top_ops() -> None:
    ops = [
        ("a", "Conv", "gemm", 2.0),
        ("b", "Conv", "winograd", 3.0),
        ("c", "Relu", None, 1.0),
        ("d", "Add", None, 0.5),
    ]
    b = op_breakdown(_op_record("onnxruntime", 7.0, ops), top=2)
    assert b is not None and b.total_ms == pytest.approx(6.5)
    by_type = {t.family: t for t in b.types}
    assert by_type["Conv"].time_ms == pytest.approx(5.0) and by_type["Conv"].ops == 2
    assert [t.family for t in b.types] == ["Conv", "Relu", "Add"], "slowest type first"
    assert sum(t.share for t in b.types) == pytest.approx(1.0)
    assert [op.name for op in b.top_ops] == ["b", "a"]
    assert [t.family for t in b.top_types(1)] == ["Conv"]


def test_op_types_of_different_frameworks_line_up() -> None:
    assert op_family("CONV_2D") == op_family("Convolution") == op_family("Conv") == "Conv"
    assert op_family("FULLY_CONNECTED") == op_family("InnerProduct") == "MatMul"
    assert op_family("BinaryOp") == "BinaryOp", "an ambiguous type stays itself"


def test_the_slowest_framework_comes_with_the_op_types_that_make_it_slow() -> None:
    breakdowns = [b for r in _vit_profiles() if (b := op_breakdown(r)) is not None]
    comparison = compare_ops(breakdowns)
    assert comparison is not None
    slowest = comparison.columns[comparison.slowest].record.framework
    assert slowest == "mnn"
    assert comparison.families[:2] == ["MatMul", "Softmax"], "ordered by mnn's own times"
    assert comparison.columns[comparison.worst["MatMul"]].record.framework == "mnn"
    assert comparison.columns[comparison.worst["Conv"]].record.framework == "mnn"
    assert comparison.columns[comparison.worst["LayerNorm"]].record.framework == "onnxruntime"
    assert [family for family, _ in comparison.excess][:2] == ["MatMul", "Softmax"]
    assert dict(comparison.excess)["MatMul"] == pytest.approx(7.5 - 3.5)


def test_operators_section_highlights_the_framework_with_the_most_time() -> None:
    section = _section(render_html(_vit_profiles()), OPS_TITLE)
    types, *singles = _Tables(section).tables
    header = [text for text, _ in types[0]]
    assert header[1:] == ["onnxruntime", "mnn", "tflite"]
    rows = {row["op type"][0]: row for row in _rows(types)}
    matmul = next(row for name, row in rows.items() if name.startswith("MatMul"))
    assert "mark" in matmul["mnn"][1] and "mark" not in matmul["onnxruntime"][1]
    assert matmul["mnn"][0].startswith("7.50 (")
    layer_norm = next(row for name, row in rows.items() if name.startswith("LayerNorm"))
    assert "mark" in layer_norm["onnxruntime"][1]
    assert re.search(r"mnn is the slowest.*MatMul \(\+4\.00 ms\), Softmax", section)
    # Each framework's slowest single ops, side by side.
    assert len(singles) == 3
    mnn_ops = _rows(singles[1])
    assert [row["op"][0] for row in mnn_ops[:2]] == ["blocks.0.attn.qkv", "blocks.0.mlp.fc1"]
    assert mnn_ops[0]["impl"][0] == "Arm82Gemm"


def test_an_unavailable_profile_is_listed() -> None:
    record = sampled_record("pixel", "ncnn", 5.0, 1, op_profile={"unavailable": "no profiler"})
    section = _section(render_html([record]), OPS_TITLE)
    assert "no profiler" in section and "<table" not in section


# ---------------------------------------------------------------------------------------------
# Memory vs instances


def test_memory_series_per_mode_sorted_by_instances() -> None:
    records = _instance_records()
    records.append(_instance_record("onnxruntime", "separate", 8, 9.0, 99, per_instance=30.0))
    records[-1] = replace(records[-1], status="failed")  # only ok records make points
    series = memory_series(records)
    assert {(k.framework, k.mode) for k in series} == {
        ("onnxruntime", "separate"), ("onnxruntime", "shared"),
        ("mnn", "separate"), ("mnn", "shared"),
    }  # fmt: skip
    ort = next(v for k, v in series.items() if k.framework == "onnxruntime" and k.mode == "shared")
    assert [p.n for p in ort] == [1, 2, 4]
    n, running, per_instance, p50, throughput, at_once = ort[-1]
    assert (n, running, per_instance, at_once) == (4, 80.0 + 6.0 * 4 + 16, 6.0, None)
    assert p50 == pytest.approx(8.0, rel=0.02) and throughput == pytest.approx(500.0)


def test_instances_section_draws_a_dashed_line_per_shared_series() -> None:
    section = _section(render_html(_instance_records()), MEMORY_TITLE)
    polylines = re.findall(r"<polyline [^>]*>", section)
    assert len(polylines) == 4
    assert sum("stroke-dasharray" in p for p in polylines) == 2, "shared lines are dashed"
    (table,) = _Tables(section).tables
    rows = _rows(table)
    assert len(rows) == 12
    shared4 = next(
        r for r in rows
        if r["framework"][0] == "mnn" and r["mode"][0] == "shared" and r["N"][0] == "4"
    )  # fmt: skip
    assert shared4["per instance MB"][0] == "4.00" and shared4["throughput inf/s"][0] == "500"


# ---------------------------------------------------------------------------------------------
# Latency vs input size


def test_cliffs_where_latency_outgrows_the_pixels() -> None:
    def points(*p50s: float) -> list[ShapePoint]:
        return [ShapePoint(px, str(px), ms) for px, ms in zip((100, 200, 400), p50s, strict=True)]

    assert cliffs(points(1.0, 2.0, 4.0)) == [], "latency scaling with the pixels"
    assert cliffs(points(1.0, 1.4, 2.0)) == [], "sub-linear scaling"
    assert CLIFF_FACTOR == 1.5, "the documented rule (docs/breakdown-reports.md)"
    assert cliffs(points(1.0, 2.0, 5.8)) == [], "x2.9 for pixels x2: within 1.5x of linear"
    (cliff,) = cliffs(points(1.0, 2.0, 6.2))
    assert (cliff.before.pixels, cliff.after.pixels) == (200, 400)
    assert cliff.describe() == "cliff: 200->400: latency x3.1 for pixels x2.0"
    # Order does not matter, and a size without a p50 is skipped.
    shuffled = [*reversed(points(1.0, 2.0, 6.5)), ShapePoint(300, "300", None)]
    assert len(cliffs(shuffled)) == 1


def test_shape_series_fixed_and_dynamic_with_the_change() -> None:
    series = shape_series(_shape_records())
    assert {(k.framework, k.mode) for k in series} == {
        ("onnxruntime", "fixed"), ("onnxruntime", "dynamic"), ("mnn", "dynamic"),
    }  # fmt: skip
    for key, points in series.items():
        assert [p.label for p in points] == ["160", "224", "320"]
        assert [p.pixels for p in points] == [3 * s * s for s in SIDES]
        found = cliffs(points)
        if key.framework == "mnn":
            assert [(c.before.label, c.after.label) for c in found] == [("224", "320")]
        else:
            assert found == [], key
    dynamic = next(v for k, v in series.items() if k == ("pixel", "resnet", "onnxruntime",
                                                         "fp32", "dynamic", k.setting))  # fmt: skip
    assert dynamic[0].resize_ms is None
    assert (dynamic[1].from_label, dynamic[1].resize_ms) == ("160", 1.5)


def test_shapes_section_marks_cliffs_and_lists_first_inferences() -> None:
    section = _section(render_html(_shape_records()), SHAPES_TITLE)
    assert section.count('class="cliff"') == 1
    polylines = re.findall(r"<polyline [^>]*>", section)
    assert sum("stroke-dasharray" in p for p in polylines) == 2, "dynamic lines are dashed"
    sizes, changes = _Tables(section).tables
    steps = [row for row in _rows(sizes) if row["step"][0].startswith("cliff")]
    assert len(steps) == 1 and steps[0]["framework"][0] == "mnn"
    cliff = r"cliff: 224->320: latency x[4-9]\.\d for pixels x2\.0"
    assert re.fullmatch(cliff, steps[0]["step"][0])
    assert "mark" in steps[0]["step"][1]
    change_rows = _rows(changes)
    assert len(change_rows) == 4, "dynamic cells after a change of shape"
    assert {row["from"][0] for row in change_rows} == {"160", "224"}
    assert all(row["resize ms"][0] == "1.50" for row in change_rows)


# ---------------------------------------------------------------------------------------------
# Pages


def test_no_section_without_the_data() -> None:
    records = [sampled_record("pixel", f, 5.0, i) for i, f in enumerate(("onnxruntime", "mnn"))]
    page, md = render_html(records), render_markdown(records)
    for title in TITLES:
        assert escape(title) not in page and title not in md
    assert 'class="bd ' not in page


def test_each_section_only_with_its_own_data() -> None:
    page = render_html(_instance_records())
    assert _section(page, MEMORY_TITLE)
    assert not any(_section(page, t) for t in (STAGES_TITLE, OPS_TITLE, SHAPES_TITLE))


def test_hostile_names_are_escaped() -> None:
    records = [
        _stage_record("onnxruntime", 6.0, 1, {"compute": EVIL}, device=EVIL, model=EVIL,
                      copy_in=0.3, compute=5.0, copy_out=0.2),
        _op_record(EVIL, 5.0, [(EVIL, EVIL, EVIL, 1.0)], device=EVIL, model=EVIL),
        _op_record("mnn", 6.0, [(EVIL, "Conv", None, 2.0)], device=EVIL, model=EVIL),
    ]  # fmt: skip
    for r in _instance_records()[:2] + _shape_records()[:3]:
        records.append(replace(r, model=EVIL, device=EVIL))
    page = render_html(records)
    assert all(_section(page, title) for title in TITLES)
    assert "<script" not in page.lower()
    assert escape(EVIL, quote=True) in page
    md = render_markdown(records)
    assert "<script>" not in md and "&lt;script&gt;" in md


def test_the_page_stays_self_contained() -> None:
    page = render_html(demo_records())
    assert "<script" not in page.lower()
    assert not re.search(r"https?://", page)
    links = re.findall(r"""\b(?:src|href|xlink:href)\s*=\s*["']([^"']*)""", page)
    assert all(link.startswith("#") for link in links)
    assert [page.index(escape(t)) for t in TITLES] == sorted(page.index(escape(t)) for t in TITLES)


def test_markdown_has_the_tables_without_charts() -> None:
    md = render_markdown(demo_records(), "run-1")
    assert "<svg" not in md
    stages = _md_rows(md, f"{STAGES_TITLE}: vit-tiny")
    assert {row["framework"] for row in stages} == {"onnxruntime", "ncnn", "tflite"}
    assert "- ncnn: copy-in: Extractor.input" in md
    assert "the native tool times whole inferences only" in md
    ops = _md_rows(md, f"{OPS_TITLE}: vit-tiny · pixel**")
    matmul = next(row for row in ops if row["op type"].startswith("MatMul"))
    assert matmul["mnn"].endswith("▲") and not matmul["onnxruntime"].endswith("▲")
    assert _md_rows(md, f"{OPS_TITLE}: vit-tiny · pixel: slowest single ops")
    memory = _md_rows(md, f"{MEMORY_TITLE}: mobilenet")
    assert len(memory) == 12 and {row["mode"] for row in memory} == {"separate", "shared"}
    sizes = _md_rows(md, f"{SHAPES_TITLE}: resnet**")
    # Markdown cells carry no raw "<" or ">": the arrow is written as an entity.
    assert sum(unescape(row["step"]).startswith("cliff: 224->320") for row in sizes) == 1
    changes = _md_rows(md, f"{SHAPES_TITLE}: resnet: first inference")
    assert len(changes) == 4


def test_malformed_breakdowns_are_skipped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    # Stored records are untrusted JSON: a breakdown part holding a wrong type is left out of
    # its record, with one warning naming the cell and the field, and the record is still shown.
    records = [
        sampled_record("d", "onnxruntime", 5.0, 1,
                       stages={"p50_ms": "x", "boundaries": "y", "samples_ns": {"compute": "z"}}),
        sampled_record("d", "ncnn", 5.0, 2, op_profile={"ops": "bad", "iterations": "x"}),
        sampled_record("d", "tflite", 5.0, 3,
                       op_profile={"ops": [{"name": 1, "time_ms": "1"}, 5, {"time_ms": 2.0}]}),
        sampled_record("d", "openvino", 5.0, 4, instances={"mode": None, "rss_running_mb": "big"}),
        sampled_record("d", "tnn", 5.0, 5, shape={"pixels": -1, "change": "x"},
                       inputs=[{"shape": "x"}]),
    ]  # fmt: skip
    bad = ["stages", "op_profile", "op_profile", "instances", "shape"]
    assert [getattr(r, part) for r, part in zip(records, bad, strict=True)] == [None] * 5
    warnings = [r.getMessage() for r in caplog.records if r.name == "edgebench.results.records"]
    expected = [
        (f"record {r.cell_id}", f"its {p} is left out") for r, p in zip(records, bad, strict=True)
    ]
    assert [(w.split(": field ")[0], w.split("; ")[-1]) for w in warnings] == expected
    assert stage_summary(records[0]) is None
    assert breakdown_report(records) == [] and breakdown_sections(records) == ""
    # Beside sound records, the sections show theirs only; every record is still in the report.
    sound = _stage_records()
    sections = {s.title: s for s in breakdown_report(records + sound)}
    assert list(sections) == [STAGES_TITLE]
    md = render_markdown(records + sound)
    (row,) = _md_rows(md, "net")
    shown = [row[r.framework].strip(" ★≈") for r in records]
    assert shown == [f"{r.latency_ms['p50']:.2f}" for r in records]


def test_empty_and_senseless_breakdowns_are_skipped_not_fatal() -> None:
    # Parts whose values have the right types but are empty, or hold figures that mean
    # nothing, are left out of the reports (wrong types are left out of the record, above).
    records = [
        sampled_record("d", "onnxruntime", 5.0, 1, stages={"p50_ms": {}, "samples_ns": {}}),
        sampled_record("d", "ncnn", 5.0, 2, op_profile={"ops": []}),
        sampled_record("d", "tflite", 5.0, 3,
                       op_profile={"ops": [{"name": "a"}, {"time_ms": -1.0}, {"time_ms": 2.0}]}),
        sampled_record("d", "openvino", 5.0, 4, instances={"mode": None}),
        sampled_record("d", "tnn", 5.0, 5, shape={"pixels": -1}, inputs=[{"shape": "x"}]),
    ]  # fmt: skip
    assert stage_summary(records[0]) is not None and stage_summary(records[0]).unavailable
    sections = {s.title: s for s in breakdown_report(records)}
    assert STAGES_TITLE not in sections or not sections[STAGES_TITLE].tables
    (types, _) = sections[OPS_TITLE].tables
    assert types.header == ["op type", "tflite"]
    assert [row[0] for row in sections[MEMORY_TITLE].tables[0].rows] == ["d"]
    assert SHAPES_TITLE not in sections, "a size without pixels is no point"
    assert breakdown_sections(records)
