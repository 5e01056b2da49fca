"""A generative model's figures in the reports carry its own units and metrics: throughput in
tokens per second (never inferences), and the HTML report's heatmaps decode speed, prefill
speed and time to first token, each with its direction; runs of other generative workloads
with the same cell id in one results folder stay apart in history."""

from __future__ import annotations

import re

from fakes.records import record_of_samples, sampled_record

from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import format_details, format_matrix
from edgebench.results.generation_part import Generation

DECODE = 200.0  # tokens/s


def generative(
    framework: str, decode: float = DECODE, ttft_ms: float = 12.0, gen: int = 8, **fields
):
    """A generative cell of llm-tiny decoding ``gen`` tokens at ``decode`` tokens/s."""
    per_token_ns = round(1e9 / decode)
    generation = Generation(
        "f16",
        ttft_prompt_tokens=[16, 16, 16],
        ttft_ms=[ttft_ms] * 3,
        gen_tokens=gen,
        decode_wall_ms=[(gen - 1) * 1000.0 / decode] * 3,
    )
    return record_of_samples(
        "local",
        framework,
        [per_token_ns] * 21,
        model="llm-tiny",
        generation=generation,
        throughput_ips=decode,
        **fields,
    )


def tensor(framework: str = "onnxruntime"):
    return sampled_record("local", framework, 2.0, 1, throughput_ips=500.0)


def test_a_generative_runs_throughput_is_tokens_per_second_in_every_text_report():
    records = [generative("llama.cpp"), generative("openvino-genai", decode=150.0)]
    details = format_details(records)
    assert "inf/s" not in details
    header = details.splitlines()[0].split()
    assert "tok/s" in header
    # --metric throughput on a generative model's table is its decode speed, in tokens
    table = format_matrix(records, "throughput")
    assert "decode speed (tok/s)" in table and "inf/s" not in table
    assert "200*" in table.replace(" ", "")


def test_a_mixed_run_names_each_rows_unit_beside_its_throughput():
    details = format_details([tensor(), generative("llama.cpp")])
    rows = {line.split()[0]: line for line in details.splitlines()[2:4]}
    (tensor_row,) = [row for cell, row in rows.items() if "onnxruntime" in cell]
    (generative_row,) = [row for cell, row in rows.items() if "llama.cpp" in cell]
    assert "500 inf" in tensor_row and "tok" not in tensor_row
    assert "200 tok" in generative_row
    assert "rate/s" in details.splitlines()[0]


def test_the_html_report_heatmaps_generative_metrics_with_their_directions():
    html = render_html([generative("llama.cpp"), generative("openvino-genai", 150.0, 20.0)])
    captions = re.findall(r'<div class="cap">(.*?)</div>', html)
    plain = [re.sub(r"<[^>]+>", "", c) for c in captions]
    assert "decode speed (tok/s) higher is better" in plain
    assert "prefill speed (longest prompt) (tok/s) higher is better" in plain
    assert any(c.startswith("time to first token") and c.endswith("lower is better") for c in plain)
    assert not [c for c in plain if c.startswith("throughput")]  # the decode speed, once
    assert "inf/s" not in html
    # a tensor model's heatmaps are unchanged, and name no generative metric as missing
    tensor_html = render_html([tensor(), tensor("openvino")])
    tensor_caps = [
        re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<div class="cap">(.*?)</div>', tensor_html)
    ]
    assert "throughput (inf/s) higher is better" in tensor_caps
    assert "decode speed" not in tensor_html


def test_runs_of_other_generative_workloads_are_separate_series_of_one_cell_id(tmp_path):
    from edgebench.analysis.history import history
    from edgebench.results.store import ResultsStore

    store = ResultsStore(tmp_path / "runs")
    for gen, decode in ((8, 200.0), (32, 150.0), (8, 190.0)):
        run = store.create_run({"edgebench_version": "test"})
        run.append(generative("llama.cpp", decode, gen=gen, run_id=run.run_id))
    points = history(store, "local", "llm-tiny", "llama.cpp", "decode")
    assert len({p.cell_id for p in points}) == 1  # the id names no workload ...
    series = {}
    for p in points:
        series.setdefault(p.series, []).append(p.value)
    # ... and its runs of 8 and of 32 generated tokens are two trends, never one
    assert sorted(map(sorted, series.values())) == [[150.0], [190.0, 200.0]]
    assert all("tg8" in label or "tg32" in label for label in series)
