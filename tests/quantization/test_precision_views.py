"""What the reports and `recommend` make of quantized cells: precisions side by side with the
speed-up and the accuracy cost, and cells beyond --max-accuracy-drop refused."""

from __future__ import annotations

from dataclasses import replace

from fakes.records import sampled_record

from edgebench.analysis.recommend import recommend
from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import format_details
from edgebench.reporting.precisions import format_precisions, precision_rows
from edgebench.reporting.report import render_markdown
from edgebench.results.records import Record


def quantized(record: Record, precision: str, top1: float | None, sqnr: float) -> Record:
    cell_id = record.cell_id.replace("/fp32/", f"/{precision}/")
    accuracy = {"n": 8, "top1_agreement": top1, "cosine_min": 0.99, "sqnr_db": sqnr}
    quant = {
        "method": "m",
        "granularity": "per-channel",
        "fp32_fallback_ops": ["Softmax"],
        "calibration": {"n": 32, "sha256": "ab" * 32, "synthetic": True},
    }
    return replace(record, precision=precision, cell_id=cell_id, accuracy=accuracy, quant=quant)


def run_records() -> list[Record]:
    fp32_a = sampled_record("phone", "mnn", 20.0, 1)
    fp32_b = sampled_record("phone", "ncnn", 24.0, 2)
    return [
        fp32_a,
        fp32_b,
        quantized(sampled_record("phone", "mnn", 10.0, 3), "int8", 0.875, 21.3),
        quantized(sampled_record("phone", "ncnn", 16.0, 4), "int8", 1.0, 30.1),
    ]


def test_the_precision_table_gives_speed_up_and_accuracy_cost():
    records = run_records()
    rows = {r.framework: r for r in precision_rows(records)}
    assert rows["mnn"].cells["fp32"].startswith("20")
    # 20 ms -> 10 ms is a 2x speed-up; the accuracy cost sits beside it.
    assert rows["mnn"].cells["int8"].startswith("10") and "(2.00x)" in rows["mnn"].cells["int8"]
    assert "top-1 88%" in rows["mnn"].cells["int8"] and "21.3 dB" in rows["mnn"].cells["int8"]
    assert "(1.50x)" in rows["ncnn"].cells["int8"]
    text = format_precisions(records)
    header = text.splitlines()[1].split()
    assert header[-2:] == ["fp32", "int8"]
    assert "precisions" in render_markdown(records).lower()
    assert "(2.00x)" in render_markdown(records)
    html = render_html(records)
    assert "<h2>precisions</h2>" in html and "21.3 dB" in html
    assert "fp32 fallback: Softmax" in format_details(records)


def test_one_precision_shows_no_precision_table():
    records = run_records()[:2]
    assert precision_rows(records) == [] and format_precisions(records) == ""


def test_recommend_refuses_cells_beyond_the_accuracy_drop():
    records = run_records()
    free = recommend(records, ["phone"], "net")
    assert free.best == "mnn"  # its int8 cell (10 ms) is the fastest of all
    strict = recommend(records, ["phone"], "net", max_accuracy_drop=0.05)
    refused = [line for line in strict.reasoning if line.startswith("refusing")]
    assert refused == [
        "refusing phone/net/mnn/int8/t4/call/s1: top-1 agreement drops by 12.5% "
        "(--max-accuracy-drop 5.0%)"
    ]
    # mnn is left with its fp32 cell (20 ms); ncnn keeps its int8 cell (16 ms) and wins.
    assert strict.best == "ncnn"
    assert strict.table[0].per_device["phone"].cell_id.split("/")[3] == "int8"


def test_a_quantized_cell_without_a_top1_figure_cannot_be_bounded():
    detector = quantized(sampled_record("phone", "tflite", 5.0, 9), "int8", None, 25.0)
    result = recommend([detector], ["phone"], "net", max_accuracy_drop=0.1)
    assert result.best is None
    assert any("no top-1 figure to bound" in line for line in result.reasoning)


def test_compare_refuses_int8_cells_calibrated_on_different_sets():
    from edgebench.analysis.compare import compare_runs

    base = quantized(sampled_record("phone", "mnn", 10.0, 3, run_id="a"), "int8", 1.0, 30.0)
    same = quantized(sampled_record("phone", "mnn", 13.0, 5, run_id="b"), "int8", 1.0, 30.0)
    (slower,) = compare_runs([base], [same])
    assert slower.verdict == "regressed"
    other = replace(
        same, quant={**same.quant.to_dict(), "calibration": {"n": 32, "sha256": "cd" * 32}}
    )
    (refused,) = compare_runs([base], [other])
    assert refused.verdict == "not_comparable"
    assert refused.reason.startswith("different calibration sets: base abababababab")
