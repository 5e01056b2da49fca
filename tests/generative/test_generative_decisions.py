"""The decision commands on generative records: recommend, compare, history and the nightly gate
read each metric's direction and unit from its declaration, so a decode speed (tokens/s) that
fell is a regression and the faster one is recommended, a time to first token (ms) that rose is
a regression, and --budget-mb refuses a framework whose peak memory is over it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakes.records import record_of_samples

from edgebench.analysis.compare import DIFFERENT_GENERATION, compare_runs
from edgebench.analysis.night_summary import variant_of
from edgebench.analysis.nightly_gate import MIN_NIGHTS
from edgebench.measure.plan_gate import gate_run
from edgebench.planning.config import RunConfig
from edgebench.planning.plan_file import load_plan
from edgebench.results.generation_part import Generation
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore, RunDir

GEN = 8
MODEL = "llm-tiny"


def generative(
    framework: str,
    decode: float,
    ttft_ms: float,
    rss_mb: float,
    *,
    seed: int = 0,
    run_id: str = "r",
    device: str = "local",
    gen: int = GEN,
    energy_mj: float | None = None,
) -> Record:
    """A generative cell decoding at ``decode`` tokens/s: its per-token latencies (the raw
    samples, three repetitions) around 1/decode, its prefill of 16 tokens in ``ttft_ms``."""
    per_token_ms = 1000.0 / decode
    rng = np.random.default_rng(seed)
    samples = (per_token_ms * 1e6 * rng.lognormal(0.0, 0.02, 3 * (gen - 1))).astype(np.int64)
    walls = [(gen - 1) * per_token_ms] * 3  # so the decode speed is exactly ``decode``
    generation = Generation(
        "f16",
        ttft_prompt_tokens=[16, 16, 16],
        ttft_ms=[ttft_ms * f for f in (0.99, 1.0, 1.01)],
        gen_tokens=gen,
        decode_wall_ms=walls,
    )
    return record_of_samples(
        device,
        framework,
        samples.tolist(),
        model=MODEL,
        run_id=run_id,
        generation=generation,
        peak_rss_mb=rss_mb,
        throughput_ips=decode,
        energy_mj_per_inf=energy_mj,
    )


def store_run(
    results: Path,
    cells: list[tuple[str, float, float, float]],
    gen: int = GEN,
    energy_mj: float | None = None,
    **meta,
) -> RunDir:
    """A stored run of one generative cell per (framework, decode, ttft, rss) on ``local``."""
    run = ResultsStore(results).create_run({"edgebench_version": "test", **meta})
    for i, (framework, decode, ttft, rss) in enumerate(cells):
        cell = generative(
            framework, decode, ttft, rss, seed=i, run_id=run.run_id, gen=gen, energy_mj=energy_mj
        )
        run.append(cell)
    return run


#: llama.cpp decodes faster but needs more memory; openvino-genai has the shorter first token.
CELLS = [("llama.cpp", 200.0, 9.0, 900.0), ("openvino-genai", 120.0, 5.0, 300.0)]


def test_recommend_ranks_decode_highest_first_ttft_lowest_and_keeps_the_memory_budget(
    run_cli, eb_env
):
    run = store_run(Path(eb_env["EDGEBENCH_RESULTS"]), CELLS)
    base = ["recommend", "--run", run.run_id, "--devices", "local", "--model", MODEL]
    decode = run_cli([*base, "--metric", "decode"])
    assert decode.returncode == 0, decode.stderr
    assert "recommendation: llama.cpp" in decode.stdout
    assert "recommend llama.cpp: worst case 200 tok/s on local" in decode.stdout
    assert "worst decode 120 tok/s on local" in decode.stdout  # openvino-genai's row: tok/s

    ttft = run_cli([*base, "--metric", "ttft"])
    assert ttft.returncode == 0, ttft.stderr
    assert "recommendation: openvino-genai" in ttft.stdout
    assert "worst case 5 ms on local" in ttft.stdout

    budget = run_cli([*base, "--metric", "decode", "--budget-mb", "512"])
    assert budget.returncode == 0, budget.stderr
    assert "recommendation: openvino-genai" in budget.stdout
    assert "with a peak memory budget of 512 MB" in budget.stdout
    (refused,) = [ln for ln in budget.stdout.splitlines() if ln.startswith("  - llama.cpp:")]
    assert "peak RSS over the 512 MB budget on local 900 MB" in refused
    assert re.search(r"budget 512MB", budget.stdout)

    nobody = run_cli([*base, "--metric", "decode", "--budget-mb", "100"])
    assert nobody.returncode == 0, nobody.stderr
    assert "recommendation: none" in nobody.stdout
    assert "no framework meets the budget on every device" in nobody.stdout

    for bad in ("0", "-5", "inf"):
        refused_value = run_cli([*base, "--budget-mb", bad])
        assert refused_value.returncode == 2
        (line,) = refused_value.stderr.strip().splitlines()
        assert "--budget-mb" in line and "positive number of MB" in line, line


def test_compare_flags_a_decode_speed_that_fell_and_a_ttft_that_rose(run_cli, eb_env, tmp_path):
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    base = store_run(results, [("llama.cpp", 200.0, 9.0, 900.0)])
    slower = store_run(results, [("llama.cpp", 150.0, 12.0, 900.0)])
    faster = store_run(results, [("llama.cpp", 260.0, 7.0, 900.0)])

    fell = run_cli(["compare", base.run_id, slower.run_id, "--metric", "decode"])
    assert fell.returncode == 1, fell.stdout + fell.stderr
    assert "base decode tok/s" in fell.stdout
    assert "regressed" in fell.stdout and "decode 200 -> 150 tok/s (-25.0%)" in fell.stdout
    rose = run_cli(["compare", base.run_id, faster.run_id, "--metric", "decode"])
    assert rose.returncode == 0, rose.stdout + rose.stderr
    assert "1 improved" in rose.stdout

    ttft = run_cli(["compare", base.run_id, slower.run_id, "--metric", "ttft"])
    assert ttft.returncode == 1 and "ttft 9 -> 12 ms (+33.3%)" in ttft.stdout, ttft.stdout

    # p50 of a generative record is per generated token, tested on the raw samples.
    (per_token,) = compare_runs(base.records(), slower.records(), metric="p50")
    assert per_token.verdict == "regressed" and per_token.p_value is not None
    assert per_token.reason.startswith("slower: p50 +33")
    (per_token,) = compare_runs(base.records(), faster.records(), metric="p50")
    assert per_token.verdict == "improved"


def test_history_shows_decode_with_its_unit(run_cli, eb_env, tmp_path):
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    runs = [store_run(results, [("llama.cpp", rate, 9.0, 900.0)]) for rate in (200, 180, 220)]
    plot = tmp_path / "decode.svg"
    shown = run_cli(
        ["history", "--device", "local", "--model", MODEL, "--framework", "llama.cpp",
         "--metric", "decode", "--plot", str(plot)]
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^run\s+created\s+decode \(tok/s\)\s+change", shown.stdout, re.M)
    rows = {ln.split()[0]: ln for ln in shown.stdout.splitlines() if ln.startswith("20")}
    assert [rows[r.run_id].split()[2] for r in runs] == ["200", "180", "220"]
    assert "+22.2%" in rows[runs[2].run_id]
    assert "decode speed (tok/s)" in plot.read_text()


class Verdicts:
    """The gate's output: the verdicts it printed."""

    def __init__(self) -> None:
        self.verdicts: list = []

    def comparison(self, verdicts, plan_name, junit) -> None:
        self.verdicts = verdicts


class Messages:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def nightly_config(folder: Path) -> RunConfig:
    """The configuration of a plan whose gate follows the decode speed."""
    plan_file = folder / "nightly.toml"
    plan_file.write_text(
        'name = "nightly"\nmodels = ["llm-tiny"]\n[thresholds]\nmetric = "decode"\n'
        "min_effect = 0.1\n"
    )
    return load_plan(plan_file).apply(RunConfig())


@pytest.mark.parametrize(
    ("tonight", "verdict", "fails"), [(150.0, "regressed", True), (260.0, "improved", False)]
)
def test_the_nightly_gate_fails_a_plan_whose_decode_dropped(
    eb_env, tmp_path, tonight, verdict, fails
):
    config = nightly_config(tmp_path)
    assert config.thresholds.metric == "decode" and config.plan_name == "nightly"
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    store = ResultsStore(results)
    meta = {"plan": "nightly", "status": "complete", "good": True}
    rates = 200.0 * (1 + np.random.default_rng(5).uniform(-0.01, 0.01, MIN_NIGHTS + 1))
    for rate in rates:
        store_run(results, [("llama.cpp", float(rate), 9.0, 900.0)], **meta)
    run = store_run(results, [("llama.cpp", tonight, 9.0, 900.0)], plan="nightly")
    output, progress = Verdicts(), Messages()
    assert gate_run(config, store, run, run.records(), output, progress) is fails
    (judged,) = output.verdicts
    assert judged.verdict == verdict and judged.metric == "decode", judged.reason
    assert judged.new_value == pytest.approx(tonight, rel=0.02)
    assert any("judged against their recent good nights" in line for line in progress.lines)


def test_the_nightly_gate_judges_a_generative_energy_per_decoded_token(eb_env, tmp_path):
    from edgebench.reporting.text import format_comparison

    plan_file = tmp_path / "nightly.toml"
    plan_file.write_text(
        'name = "nightly"\nmodels = ["llm-tiny"]\n[thresholds]\nmetric = "energy"\n'
    )
    config = load_plan(plan_file).apply(RunConfig())
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    meta = {"plan": "nightly", "status": "complete", "good": True}
    for night in range(MIN_NIGHTS + 1):
        store_run(results, CELLS[:1], energy_mj=2.0 + 0.01 * (night % 3), **meta)
    run = store_run(results, CELLS[:1], energy_mj=3.0, plan="nightly")
    output, progress = Verdicts(), Messages()
    assert gate_run(config, ResultsStore(results), run, run.records(), output, progress) is True
    (judged,) = output.verdicts
    assert judged.verdict == "regressed" and judged.metric == "energy", judged.reason
    assert judged.value_unit == "mJ/tok" and judged.new_value == pytest.approx(3.0)
    table = format_comparison(output.verdicts)
    assert "new energy mJ/tok" in table and "mJ/inf" not in table


def test_the_dashboard_follows_decode_and_calls_its_drop_a_regression(eb_env, tmp_path):
    from edgebench.reporting.site.build import publish_site

    results = Path(eb_env["EDGEBENCH_RESULTS"])
    for night in range(12):
        rate = (200.0 if night < 6 else 150.0) * (1 + 0.004 * (night % 3 - 1))
        store_run(results, [("llama.cpp", rate, 9.0, 900.0)])
    out = tmp_path / "site"
    with open(os.devnull, "w") as quiet:
        summary = publish_site(ResultsStore(results), out, "decode", stream=quiet)
    assert summary.cells == 1 and summary.runs == 12
    index = (out / "index.html").read_text()
    assert "decode speed (tok/s) of 1 cell series" in index
    assert "1 whose latest change point is a regression" in index
    (cell_page,) = [p for p in out.rglob("*.html") if "llama.cpp" in p.name]
    page = cell_page.read_text()
    assert "decode (tok/s)" in page and "p99 (ms)" in page


def test_cells_that_ran_other_generation_tests_are_never_compared():
    base = [generative("llama.cpp", 200.0, 9.0, 900.0)]
    longer = [generative("llama.cpp", 150.0, 9.0, 900.0, gen=32)]
    for metric in ("decode", "ttft", "p50"):
        (verdict,) = compare_runs(base, longer, metric=metric)
        assert verdict.verdict == "not_comparable", verdict.reason
        assert verdict.reason.startswith(f"{DIFFERENT_GENERATION}: base pp16 tg8, new pp16 tg32")
    # history, the dashboard and the nightly gate keep them apart as two series
    assert variant_of(base[0]) == ("fp32", "pp16 tg8", "")
    assert variant_of(longer[0]) == ("fp32", "pp16 tg32", "")


def test_the_gate_never_weighs_nights_of_other_generation_tests(eb_env, tmp_path):
    """Nights that decoded 32 tokens are no history for a night that decodes 8: the cell falls
    back to the last good run, which ran the other tests too, so it is not comparable."""
    results = Path(eb_env["EDGEBENCH_RESULTS"])
    meta = {"plan": "nightly", "status": "complete", "good": True}
    for _ in range(MIN_NIGHTS + 1):
        store_run(results, [("llama.cpp", 300.0, 9.0, 900.0)], gen=32, **meta)
    run = store_run(results, [("llama.cpp", 200.0, 9.0, 900.0)], plan="nightly")
    output, progress = Verdicts(), Messages()
    store = ResultsStore(results)
    assert gate_run(nightly_config(tmp_path), store, run, run.records(), output, progress) is False
    (judged,) = output.verdicts
    assert judged.verdict == "not_comparable"
    assert judged.reason.startswith(f"{DIFFERENT_GENERATION}: base pp16 tg32, new pp16 tg8")
    assert not any("recent good nights" in line for line in progress.lines)


def test_export_gives_the_generative_figures_columns_with_their_units(run_cli, eb_env, tmp_path):
    run = store_run(Path(eb_env["EDGEBENCH_RESULTS"]), CELLS)
    out = tmp_path / "run.csv"
    done = run_cli(["export", run.run_id, "--out", str(out)])
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(out).set_index("framework")
    assert frame.loc["llama.cpp", "decode_tok_per_s"] == pytest.approx(200.0)
    assert frame.loc["openvino-genai", "ttft_ms"] == pytest.approx(5.0)
    assert frame.loc["openvino-genai", "prefill_tok_per_s"] == pytest.approx(16 / 5.0 * 1000)
