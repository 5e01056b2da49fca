"""A generative cell's figures carry its own units wherever they are shown: ``--metric
throughput`` is judged, ranked and charted as its decode speed (tok/s, higher is better) by
compare, recommend, history and the nightly gate, and its energy, which is per decoded token,
is labelled so (mJ/tok) in the details table, the HTML report and the progress line."""

from __future__ import annotations

import re
from pathlib import Path

from fakes.records import sampled_record
from test_generative_units import generative  # a generative cell of llm-tiny

from edgebench.analysis.night_summary import summarize
from edgebench.analysis.nightly import RunInfo
from edgebench.analysis.nightly_gate import MIN_NIGHTS, GateSettings, gate_cells
from edgebench.measure.progress import describe_outcome
from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import format_details, format_matrix
from edgebench.reporting.text import format_comparison
from edgebench.results.store import ResultsStore, RunDir


def tensor(framework: str = "onnxruntime", **fields):
    return sampled_record("local", framework, 2.0, 1, throughput_ips=500.0, **fields)


def stored_run(results: Path, decode: float, with_tensor: bool = False) -> RunDir:
    run = ResultsStore(results).create_run({"edgebench_version": "test"})
    run.append(generative("llama.cpp", decode, run_id=run.run_id))
    if with_tensor:
        run.append(tensor(run_id=run.run_id))
    return run


def test_compare_judges_a_generative_throughput_as_its_decode_speed(run_cli, eb_env):
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    base, slower = stored_run(results, 200.0), stored_run(results, 150.0)
    fell = run_cli(["compare", base.run_id, slower.run_id, "--metric", "throughput"])
    assert fell.returncode == 1, fell.stdout + fell.stderr  # fewer tokens/s: regressed
    assert "base decode tok/s" in fell.stdout and "new decode tok/s" in fell.stdout
    assert "decode 200 -> 150 tok/s (-25.0%)" in fell.stdout
    assert "inf/s" not in fell.stdout

    # A run of both kinds: each value carries its own unit.
    mixed_base, mixed_new = stored_run(results, 200.0, True), stored_run(results, 200.0, True)
    mixed = run_cli(["compare", mixed_base.run_id, mixed_new.run_id, "--metric", "throughput"])
    assert mixed.returncode == 0, mixed.stdout + mixed.stderr
    rows = {line.split()[0]: line for line in mixed.stdout.splitlines() if "local/" in line}
    (generative_row,) = [row for cell, row in rows.items() if "llama.cpp" in cell]
    (tensor_row,) = [row for cell, row in rows.items() if "onnxruntime" in cell]
    assert "200 tok/s" in generative_row and "inf/s" not in generative_row
    assert "500 inf/s" in tensor_row and "tok/s" not in tensor_row


def test_recommend_and_history_show_a_generative_throughput_in_tokens(run_cli, eb_env):
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    run = ResultsStore(results).create_run({"edgebench_version": "test"})
    run.append(generative("llama.cpp", 200.0, run_id=run.run_id))
    run.append(generative("openvino-genai", 120.0, run_id=run.run_id))
    ranked = run_cli(
        ["recommend", "--run", run.run_id, "--devices", "local", "--model", "llm-tiny",
         "--metric", "throughput"]
    )  # fmt: skip
    assert ranked.returncode == 0, ranked.stderr
    assert "recommendation: llama.cpp" in ranked.stdout  # higher is better
    assert "recommend llama.cpp: worst case 200 tok/s on local" in ranked.stdout
    assert "inf/s" not in ranked.stdout

    later = stored_run(results, 180.0)
    trend = run_cli(
        ["history", "--device", "local", "--model", "llm-tiny", "--framework", "llama.cpp",
         "--metric", "throughput", "--plot", str(results.parent / "trend.svg")]
    )  # fmt: skip
    assert trend.returncode == 0, trend.stderr
    assert re.search(r"^run\s+created\s+decode \(tok/s\)\s+change", trend.stdout, re.M)
    assert re.search(rf"^{later.run_id}\s.*\s180\s+-10\.0%", trend.stdout, re.M), trend.stdout
    assert "inf/s" not in trend.stdout


def test_the_nightly_gate_judges_a_generative_throughput_as_its_decode_speed():
    cell = generative("llama.cpp", 200.0)
    nights = [
        (RunInfo(f"n{i}", ""), summarize(generative("llama.cpp", 200.0 + i, run_id=f"n{i}")))
        for i in range(MIN_NIGHTS + 1)
    ]
    tonight = [(RunInfo("t", ""), summarize(generative("llama.cpp", 150.0, run_id="t")))]
    verdicts, too_short = gate_cells(
        tonight, {cell.cell_id: nights}, GateSettings("throughput", min_effect=0.1)
    )
    assert too_short == []
    (judged,) = verdicts
    assert (judged.verdict, judged.metric) == ("regressed", "decode"), judged.reason
    shown = format_comparison(verdicts)
    assert "base decode tok/s" in shown and "inf/s" not in shown


def test_a_generative_cells_energy_is_per_decoded_token_where_it_is_shown():
    records = [
        generative("llama.cpp", energy_mj_per_inf=3.0, duration_s=1.0),
        generative("openvino-genai", 150.0, energy_mj_per_inf=4.0, duration_s=1.0),
    ]
    details = format_details(records)
    assert "mJ/tok" in details.splitlines()[0].split() and "mJ/inf" not in details

    mixed = format_details([tensor(energy_mj_per_inf=7.0), records[0]])
    assert mixed.splitlines()[0].split()[-2] == "mJ"  # the heading names no per-what ...
    rows = mixed.splitlines()[2:4]
    assert any("llama.cpp" in row and "3.00/tok" in row for row in rows)  # ... each value does
    assert any("onnxruntime" in row and "7.00/inf" in row for row in rows)

    assert "energy per decoded token (mJ)" in format_matrix(records, "energy")

    html = render_html(records)
    captions = [
        re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<div class="cap">(.*?)</div>', html)
    ]
    assert "energy per decoded token (mJ) lower is better" in captions
    assert "energy per inference" not in html  # neither the heatmap nor a cell's details

    assert describe_outcome(records[0]).endswith("3 mJ/tok")
    assert describe_outcome(tensor(energy_mj_per_inf=7.0, duration_s=1.0)).endswith("7 mJ/inf")
