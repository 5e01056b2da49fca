"""llama-bench's adapter on its real output (tests/data/llama_bench/, captured from the
llama-bench edgebench builds for this host): the command line it builds for a generative cell,
the generative figures it reads, what it says the tool does not give, and one line for output
that is truncated or not llama-bench's."""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path

import pytest
from fakes.records import record_of_samples

from edgebench.framework_tools import ADAPTERS, ToolCell, ToolParseError
from edgebench.framework_tools.llama_bench import (
    NO_PER_TOKEN,
    NO_TTFT,
    LlamaBenchAdapter,
    parse_llama_bench_json,
)
from edgebench.measure.methods.framework_tools import generation_of_tool
from edgebench.measure.scheduler import merge_rounds
from edgebench.planning.generative_workload import GenerativeWorkload
from edgebench.results.generation_part import Generation

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "llama_bench" / "llm-tiny-q8_0.json"
MODEL = "/data/local/tmp/edgebench/models/llm-tiny-q8_0-w3-s0.gguf"


def sample_text() -> str:
    return SAMPLE.read_text()


def sample_rows() -> list[dict]:
    return json.loads(sample_text())


def row(n_prompt: int, n_gen: int, n_depth: int) -> dict:
    (found,) = [
        r
        for r in sample_rows()
        if (r["n_prompt"], r["n_gen"], r["n_depth"]) == (n_prompt, n_gen, n_depth)
    ]
    return found


def generation_of(stdout: str) -> Generation:
    """The record's generation part from llama-bench's stdout, as the runner kind makes it."""
    figures = LlamaBenchAdapter().parse(stdout).generation
    assert figures is not None
    return generation_of_tool(figures)


def tool_cell(workload: GenerativeWorkload) -> ToolCell:
    return ToolCell(
        model_path=MODEL,
        model_dir="/data/local/tmp/edgebench/models",
        threads=2,
        warmup=1,
        iterations=10,
        cores=[0, 1],
        precision="q8_0",
        generation=workload,
    )


def test_llama_cpp_names_llama_bench_as_its_tool() -> None:
    assert ADAPTERS["llama.cpp"] is LlamaBenchAdapter
    assert "q8_0" in LlamaBenchAdapter.precisions and "f16" in LlamaBenchAdapter.precisions
    assert "benchmarks/llm_fidelity.py --build-only" in (LlamaBenchAdapter.how_to_get or "")


def test_the_command_line_carries_the_cells_workload_quoted_and_pinned() -> None:
    cell = tool_cell(GenerativeWorkload((16, 32), gen_tokens=8, context_depth=0, repetitions=2))
    argv = LlamaBenchAdapter().command("/data/local/tmp/bin/llama-bench", cell)
    assert argv == [
        "/data/local/tmp/bin/llama-bench",
        *("-m", MODEL, "-p", "16,32", "-n", "8", "-d", "0", "-r", "2", "-t", "2", "-o", "json"),
    ]
    line = LlamaBenchAdapter().shell_command("/tmp/a dir/llama-bench", cell)
    assert line.startswith("cd /data/local/tmp/edgebench/models && taskset 3 ")
    assert "'/tmp/a dir/llama-bench'" in line and shlex.split(line)[5:] == [
        "/tmp/a dir/llama-bench",
        *argv[1:],
    ]


def test_a_context_depth_asks_for_depth_0_too_and_no_warm_up_turns_it_off() -> None:
    cell = tool_cell(GenerativeWorkload((16,), gen_tokens=8, context_depth=64, warmup=0))
    argv = LlamaBenchAdapter().command("llama-bench", cell)
    assert argv[argv.index("-d") + 1] == "0,64" and argv[-1] == "--no-warmup"


def test_a_tensor_cell_is_refused() -> None:
    cell = ToolCell(model_path="m.gguf", model_dir=".", threads=1, warmup=1, iterations=1)
    with pytest.raises(ValueError, match="generative cells"):
        LlamaBenchAdapter().command("llama-bench", cell)


def test_the_json_gives_prefill_per_prompt_length_and_decode_at_the_depth() -> None:
    result = LlamaBenchAdapter().parse(sample_text(), "llama log on stderr\n", model_path=MODEL)
    generation = generation_of(sample_text())
    assert generation.weight_type == "q8_0"
    assert generation.prompt_lengths == [16, 32]
    for n in (16, 32):  # the depth-0 prompt tests, each repetition as the tool timed it
        at_0 = row(n, 0, 0)
        pairs = zip(generation.prefill_prompt_tokens, generation.prefill_ms, strict=True)
        times = [ms for length, ms in pairs if length == n]
        assert times == [ns / 1e6 for ns in at_0["samples_ns"]]
        expected = n * 1e9 / statistics.median(at_0["samples_ns"])
        assert generation.prefill_tokens_per_s(n) == pytest.approx(expected)
    decode = row(0, 8, 8)  # the decode test at the cell's depth, not the depth-0 one
    assert generation.context_depth == 8 and generation.gen_tokens == 8
    assert generation.decode_wall_ms == [ns / 1e6 for ns in decode["samples_ns"]]
    rate = 8 * 1e9 / statistics.median(decode["samples_ns"])
    assert generation.decode_tokens_per_s == pytest.approx(rate)
    assert result.throughput_ips == pytest.approx(rate)
    # llama-bench's own tokens/s agree with the rates read from its times
    assert rate == pytest.approx(statistics.median(decode["samples_ts"]), rel=1e-3)


def test_what_llama_bench_does_not_give_is_said_not_invented() -> None:
    result = LlamaBenchAdapter().parse(sample_text())
    generation = generation_of(sample_text())
    assert generation.ttft_ms == [] and generation.ttft_p50_ms(16) is None
    assert generation.unavailable == {"ttft": NO_TTFT, "per_token_latency": NO_PER_TOKEN}
    decode = row(0, 8, 8)
    # no percentile, no per-token samples: the mean per decoded token the tool states
    assert result.samples_ms is None and result.median_ms is None and result.p95_ms is None
    assert result.avg_ms == pytest.approx(decode["avg_ns"] / 8 / 1e6)
    assert result.count == 8 * len(decode["samples_ns"])
    assert result.tool_version == f"b{decode['build_number']} ({decode['build_commit']})"
    assert result.raw_lines[-1].startswith("tg8 @ d8: ")


def test_the_generation_part_keeps_the_tools_figures_through_a_store_and_rounds() -> None:
    part = generation_of(sample_text())
    again = Generation.from_dict(json.loads(json.dumps(part.to_dict())), "generation")
    assert again == part
    pooled = Generation.merge([part, part])
    assert pooled is not None and pooled.prefill_ms == part.prefill_ms * 2
    assert pooled.decode_tokens_per_s == pytest.approx(part.decode_tokens_per_s)
    assert "pp16" in part.describe() and "TTFT" not in part.describe()


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        (sample_text()[: len(sample_text()) // 2], "truncated or malformed JSON"),
        ("", "empty output"),
        ("main: error: failed to load model 'x.gguf'\n", "not JSON"),
        ("[]", "not a non-empty JSON array"),
        (json.dumps([{**row(0, 8, 0), "samples_ns": []}]), "test 0: samples_ns is []"),
        (json.dumps([{**row(0, 8, 0), "n_gen": "8"}]), "test 0: n_gen is '8', not a count"),
        (json.dumps([row(16, 0, 0)]), "no token-generation test"),
    ],
    ids=["truncated", "empty", "error-text", "empty-array", "no-samples", "bad-count", "no-tg"],
)
def test_output_that_is_not_a_whole_result_is_one_line(stdout: str, said: str) -> None:
    with pytest.raises(ToolParseError) as caught:
        LlamaBenchAdapter().parse(stdout, "")
    message = str(caught.value)
    assert message.startswith("llama-bench: no ") and said in message
    assert "\n" not in message


def test_every_test_is_read_in_the_tools_order() -> None:
    tests = parse_llama_bench_json(sample_text())
    assert [(t.n_prompt, t.n_gen, t.n_depth) for t in tests] == [
        (r["n_prompt"], r["n_gen"], r["n_depth"]) for r in sample_rows()
    ]
    assert tests[0].samples_ts == [float(x) for x in sample_rows()[0]["samples_ts"]]


def test_rounds_of_llama_bench_records_keep_the_decode_rate() -> None:
    # A tool's generative record has no per-token samples: pooled over --rounds, its
    # throughput is still the pooled decode tests' rate, as for one round.
    part = generation_of(sample_text())
    rate = part.decode_tokens_per_s
    rounds = [
        record_of_samples("emu-phone", "llama.cpp", [], generation=part, throughput_ips=rate)
        for _ in range(2)
    ]
    merged = merge_rounds(rounds)
    assert merged.rounds == 2 and merged.samples_ns == []
    assert merged.generation is not None and len(merged.generation.decode_wall_ms) == 4
    assert merged.throughput_ips == pytest.approx(rate)
