"""Reports: HTML (self-contained, escaped, renders in a headless browser), Markdown, CSV,
Parquet and JSON, from a real run and from hand-made records for the edge cases."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html import escape, unescape
from pathlib import Path

import pandas as pd
import pytest
from fakes.chromium import chromium_or_skip, console_problems, open_page, png_distinct_colours
from fakes.real_samples import noisy_tie_case, real_cell

from edgebench.errors import UserError
from edgebench.reporting.html import render_html
from edgebench.reporting.report import FORMATS, render_markdown, write_report
from edgebench.results.record_warnings import unclassified
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore, RunDir

EVIL = "<script>alert(1)</script>"


def _record(**changes) -> Record:
    base = dict(
        run_id="20260101-000000-abcd",
        cell_id="x",
        device="pixel",
        model="mobilenet",
        framework="onnxruntime",
        precision="fp32",
        threads=4,
        cores="big",
        status="ok",
    )
    base.update(changes)
    return Record(**base)


def _ok(framework: str, p50: float, device: str = "pixel", **changes) -> Record:
    samples = [int((p50 + 0.05 * ((i * 7) % 11)) * 1e6) for i in range(200)]
    t0 = 1_000_000_000
    ts = [t0 + i * 50_000_000 for i in range(40)]
    telemetry = {
        "schema": "edgebench.telemetry/1",
        "t_perf_ns": ts,
        "power_w": [2.0 + 0.1 * (i % 5) for i in range(40)],
        "temp_c": {"cpu-big": [40 + i * 0.2 for i in range(40)], "battery": [30.0] * 40},
        "freq_khz": {"4": [2_400_000 - (i // 10) * 100_000 for i in range(40)], "0": [None] * 40},
        "marks": {"window_start": ts[5], "window_end": ts[35]},
    }
    fields = dict(
        framework=framework,
        device=device,
        latency_ms={"min": p50 * 0.9, "p50": p50, "p90": p50 * 1.1, "p95": p50 * 1.2,
                    "p99": p50 * 1.5, "mean": p50, "std": 0.1, "cv": 0.05},
        samples_ns=samples,
        n_samples=len(samples),
        throughput_ips=1000 / p50,
        peak_rss_mb=100 + p50,
        energy_mj_per_inf=p50 * 3,
        avg_power_w=2.2,
        energy_flags=["coarse sampling"],
        warnings=[unclassified("high variance")],
        output_check={"reference": "onnxruntime", "tolerance": 1e-3, "passed": True,
                      "max_abs_diff": 1e-6, "rel_error": 1e-7, "cosine": 1.0,
                      "top1_agreement": 1.0},
        telemetry=telemetry,
        device_info={"cpu_model": "Cortex-A78", "machine": "aarch64"},
    )  # fmt: skip
    fields.update(changes)
    return _record(**fields)


def _edge_records() -> list[Record]:
    return [
        _ok("onnxruntime", 4.0),
        _ok("tflite", 3.0),
        _ok("ncnn", 5.0, model=EVIL, device=EVIL),
        _record(
            framework="openvino",
            status="mismatch",
            error="outputs differ: max_abs_diff 0.5 > 0.001",
            latency_ms={"p50": 2.0, "p99": 3.0},
            samples_ns=[2_000_000, 2_100_000, 2_050_000],
            output_check={
                "reference": "onnxruntime",
                "tolerance": 1e-3,
                "passed": False,
                "max_abs_diff": 0.5,
                "cosine": 0.7,
            },
        ),
        _record(framework="mnn", status="failed", error=f"runner crashed {EVIL}"),
        _record(framework="tnn", status="skipped", error="no TNN", error_kind="toolchain_missing"),
        _record(framework="ncnn", status="unsupported", error="op Foo unsupported"),
    ]


def _meta() -> dict:
    return {
        "run_id": "20260101-000000-abcd",
        "created_at": "2026-01-01T00:00:00.000Z",
        "edgebench_version": "0.1.0",
        "devices": {"pixel": {"cpu_model": "Tensor G3", "machine": "aarch64"}},
    }


def _store_run(tmp_path: Path, records: list[Record]) -> RunDir:
    """A stored run of ``records``, each under a cell id of its own (a run's report shows the
    last record of each cell id)."""
    run = ResultsStore(tmp_path / "res").create_run({"edgebench_version": "0.1.0"})
    for i, r in enumerate(records):
        run.append(replace(r, cell_id=f"{r.cell_id}-{i}"))
    return run


# --------------------------------------------------------------------------------------------
# HTML content


def test_html_is_self_contained_and_escaped() -> None:
    records = _edge_records()
    page = render_html(records, _meta())
    assert page.startswith("<!DOCTYPE html>")
    # No URL of any kind: nothing can be fetched (and the CSP forbids it anyway).
    assert "http://" not in page and "https://" not in page
    links = re.findall(r"""\b(?:src|href|action|xlink:href)\s*=\s*["']([^"']*)""", page)
    assert links and all(link.startswith("#") for link in links), "only in-page links"
    assert "<script" not in page.lower()
    assert escape(EVIL, quote=True) in page
    # Heatmaps: one per metric per model group, with the status words in non-ok cells.
    assert page.count('<table class="heatmap">') == 5 * 2
    for word in ("mismatch", "failed", "unsupported", "no toolchain"):
        assert word in page
    assert "st-mismatch" in page and "st-failed" in page
    assert 'title="outputs differ: max_abs_diff 0.5 &gt; 0.001"' in page
    assert "★" in page
    # Every cell with samples has a CDF; the telemetry cells also have three traces.
    with_samples = [r for r in records if r.samples_ns]
    assert page.count("latency CDF") >= len(with_samples)
    charts = len(with_samples) + 3 * sum(1 for r in records if r.telemetry)
    assert page.count("<svg") == charts + 2, "and the summary's chart of each of the 2 models"
    assert page.count("<details") == len(records)
    for label in ("temperature", "CPU frequency", "power", "top1_agreement", "coarse sampling"):
        assert label in page
    assert "Tensor G3" in page and "20260101-000000-abcd" in page


def _summary_rows(page: str) -> dict[str, list[str]]:
    """The summary table's cells as text by device, without the model's (spanning) cell."""
    summary = page.split('<section class="summary">', 1)[1].split("</section>", 1)[0]
    table = summary.split('<table class="answer">', 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], flags=re.S):
        row = re.sub(r'<td class="model".*?</td>', "", row, flags=re.S)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        texts = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]
        rows[texts[0]] = texts[1:]
    return rows


def test_the_summary_comes_first_names_the_best_per_device_and_says_ties() -> None:
    records = [
        _ok("onnxruntime", 4.0),
        _ok("tflite", 3.0),  # 25% ahead, on 200 samples: the best on pixel
        _ok("onnxruntime", 5.0, device="board"),
        _ok("tflite", 5.05, device="board"),  # 1% apart: a tie
        _record(framework="mnn", device="board", status="failed", error="crashed"),
        _ok("onnxruntime", 6.0, device="solo"),
    ]
    page = render_html(records, _meta())
    order = [page.index(f'<section class="{name}">') for name in ("summary", "matrices", "cells")]
    assert order == sorted(order), "the answer first, then the matrices, then each cell"
    rows = _summary_rows(page)
    assert "every cell: fp32 · 4 threads · cores big." in page, "shared settings said once"
    assert '<td class="model" rowspan="3">mobilenet</td>' in page
    assert rows["pixel"] == ["★ tflite 3.00 ms", "onnxruntime +33%", ""]
    assert rows["board"] == ["≈ tie: onnxruntime 5.00 ms, tflite 5.05 ms", "", "mnn (failed)"]
    assert rows["solo"] == ["onnxruntime 6.00 ms (the only cell ranked)", "", ""]
    # The chart: a bar per cell that has a p50, green for the answers (best, tied, the only
    # one), mnn named as failed.
    chart = re.search(r'<svg class="chart summary-chart".*?</svg>', page, flags=re.S)
    assert chart is not None
    bars = re.findall(r'<rect class="p50"[^>]* fill="(#\w+)"', chart.group(0))
    assert sorted(bars) == sorted(["#2ca02c", "#8ea8c3", "#2ca02c", "#2ca02c", "#2ca02c"])
    assert chart.group(0).count("<line x1") >= 4, "a p99 whisker per bar"
    assert ">failed</text>" in chart.group(0)


def test_the_summary_chart_never_draws_a_grey_bar_shorter_than_a_green_one() -> None:
    """Real timings: a quiet cell clearly behind the fastest, and a slower, noisy cell that
    cannot be told from it. The slower cell ties, so the faster one does too; a clearly slower
    quiet cell stays grey, and behind."""
    cells = noisy_tie_case("pixel")
    records = [*cells.values(), real_cell("d", 140, 0.01, 300, seed=34, device="pixel")]
    page = render_html(records, _meta())
    rows = _summary_rows(page)
    assert re.fullmatch(r"≈ tie: a [\d.]+ ms, c [\d.]+ ms, b [\d.]+ ms", rows["pixel"][0]), rows
    assert rows["pixel"][1] == "d +40%"
    chart = re.search(r'<svg class="chart summary-chart".*?</svg>', page, flags=re.S)
    assert chart is not None
    bars = re.findall(r'<rect class="p50"[^>]* width="([\d.]+)"[^>]* fill="(#\w+)"', chart[0])
    green = [float(w) for w, fill in bars if fill == "#2ca02c"]
    grey = [float(w) for w, fill in bars if fill == "#8ea8c3"]
    assert len(green) == 3 and len(grey) == 1
    assert max(green) < min(grey)


def test_each_note_is_given_once_and_pointed_to() -> None:
    records = [_ok("onnxruntime", 4.0), _ok("tflite", 3.0)]
    records += [_ok(f, p50, model="resnet") for f, p50 in (("onnxruntime", 40.0), ("tflite", 30.0))]
    page = render_html(records, _meta())
    assert page.count("significantly so on the raw samples") == 1, "the ranking rule, once"
    assert page.count("Colour is scaled per table") == 1, "the heatmaps' legend, once"
    refs = set(re.findall(r'href="#(note-\d+)"', page))
    assert refs and all(page.count(f'id="{ref}"') == 1 for ref in refs)


def test_a_metric_no_cell_measured_is_named_not_drawn_as_an_empty_table() -> None:
    with_energy = [_ok("onnxruntime", 4.0), _ok("tflite", 3.0)]
    without = [_ok(f, 30.0 + i, model="resnet", energy_mj_per_inf=None, avg_power_w=None)
               for i, f in enumerate(("onnxruntime", "tflite"))]  # fmt: skip
    page = render_html([*with_energy, *without], _meta())
    assert page.count('<table class="heatmap">') == 5 + 4
    assert page.count("Not measured in these cells: energy per inference.") == 1
    assert "Not measured in this run" not in page
    page = render_html(without, _meta())
    assert page.count('<table class="heatmap">') == 4
    assert "Not measured in this run: energy per inference." in page
    assert "Not measured in these cells" not in page, "said once for the run, not per model"


def test_html_without_records_or_meta() -> None:
    page = render_html([], {})
    assert "no records" in page


def test_markdown_table_and_problems() -> None:
    md = render_markdown(_edge_records(), "run-1")
    rows = [line for line in md.splitlines() if line.startswith("| pixel |")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    header = next(line for line in md.splitlines() if line.startswith("| device |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    by_fw = dict(zip(names, cells, strict=True))
    assert by_fw["tflite"] == "3.00 ★"
    assert by_fw["onnxruntime"] == "4.00"
    assert by_fw["openvino"] == "mismatch"
    assert by_fw["mnn"] == "failed"
    assert by_fw["tnn"] == "no toolchain"
    assert "- pixel / mobilenet / openvino: mismatch — outputs differ" in md
    assert "- pixel / mobilenet / mnn: failed — runner crashed &lt;script&gt;" in md
    assert "<script>" not in md


def test_unknown_format_is_a_user_error(tmp_path: Path) -> None:
    run = _store_run(tmp_path, _edge_records())
    with pytest.raises(UserError) as info:
        write_report(run, ["html", "pdf"], tmp_path / "out")
    message = str(info.value)
    assert "\n" not in message and "'pdf'" in message
    assert all(f in message for f in FORMATS)
    assert not (tmp_path / "out").exists(), "nothing written when a format is unknown"


# --------------------------------------------------------------------------------------------
# From a real run


def test_write_report_from_real_run(run_cli, conv_model: Path, eb_env, tmp_path: Path) -> None:
    result = run_cli(
        ["run", "--models", str(conv_model), "--frameworks", "onnxruntime,openvino",
         "--warmup", "1", "--iterations", "20", "--min-time", "0"]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run = ResultsStore(Path(eb_env["EDGEBENCH_RESULTS"])).open(None)
    records = run.records()
    assert len(records) == 2
    out = tmp_path / "reports"
    paths = write_report(run, list(FORMATS), out)
    assert [p.name for p in paths] == [f"{run.run_id}.{ext}" for ext in FORMATS]

    page = paths[0].read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert page.count("<svg") >= len(records)
    assert '<table class="heatmap">' in page and run.run_id in page

    md = paths[1].read_text(encoding="utf-8")
    assert "| device | onnxruntime | openvino |" in md
    assert re.search(r"^\| local \| [0-9.]+.* \| [0-9.]+.* \|$", md, re.M), md
    assert "★" in md

    frame = pd.read_csv(paths[2])
    assert len(frame) == 2 and set(frame["framework"]) == {"onnxruntime", "openvino"}
    assert len(pd.read_parquet(paths[3])) == 2
    data = json.loads(paths[4].read_text(encoding="utf-8"))
    assert len(data) == 2 and all(len(d["samples_ns"]) == 20 for d in data)


# --------------------------------------------------------------------------------------------
# Headless browser


def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    exe = chromium_or_skip()
    run = _store_run(tmp_path, _edge_records())
    (report,) = write_report(run, ["html"], tmp_path / "out")
    assert not re.search(r"https?://", report.read_text(encoding="utf-8"))
    shot = tmp_path / "shot.png"
    proc = open_page(exe, report, tmp_path / "profile", screenshot=shot, size="1200,2000")
    assert shot.exists(), proc.stderr[-2000:]
    assert not console_problems(proc.stderr), console_problems(proc.stderr)
    width, height, colours = png_distinct_colours(shot.read_bytes())
    assert (width, height) == (1200, 2000)
    assert colours > 20, f"screenshot looks blank ({colours} colours)"


def test_the_rendered_page_opens_with_the_answer_and_folds_what_says_nothing(
    tmp_path: Path,
) -> None:
    exe = chromium_or_skip()
    # Compute is 98% of every iteration here: the stage split says nothing and is folded.
    stages = {
        "p50_ms": {"copy_in": 0.04, "compute": 3.9, "copy_out": 0.04},
        "boundaries": {"compute": "InferenceSession.run"},
    }
    records = [
        *_edge_records()[:3],
        _ok("onnxruntime", 4.0, device="qemu", emulated=True, emulation="qemu-aarch64"),
        _ok("onnxruntime", 4.0, model="resnet", stages=stages),
        _ok("tflite", 3.0, model="resnet", stages=stages),
    ]
    (report,) = write_report(_store_run(tmp_path, records), ["html"], tmp_path / "out")
    proc = open_page(exe, report, tmp_path / "profile")
    assert not console_problems(proc.stderr), console_problems(proc.stderr)
    dom = proc.stdout
    sections = re.findall(r'<section class="(?:bd )?(\w+)">', dom)
    assert sections[:3] == ["summary", "matrices", "stages"], sections
    assert dom.count('class="chart summary-chart"') == 3, "one per model"
    assert "emulated CPU, not ranked" in dom
    fold = re.search(r"<details class=\"fold\"[^>]*>\s*<summary>([^<]*)</summary>", dom)
    assert fold is not None and " open" not in fold.group(0), "folded, closed"
    assert re.fullmatch(r"stages: compute 9[5-9]–?\d*% in every cell", fold.group(1))
    shot = tmp_path / "top.png"
    open_page(exe, report, tmp_path / "profile", screenshot=shot, size="1200,900")
    _, _, colours = png_distinct_colours(shot.read_bytes())
    assert colours > 20, f"the top of the page looks blank ({colours} colours)"
