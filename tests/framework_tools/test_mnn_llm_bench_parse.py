"""llm_bench's adapter on its real output (tests/data/mnn_llm_bench/, captured from the llm_bench
edgebench compiles against this host's edgebench-native): the command line it builds for a
generative cell, the figures it reads from the Markdown table between MNN's log lines, what it
says the tool does not give, and one line for output that is not llm_bench's table."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from edgebench.framework_tools import ADAPTERS, ToolCell, ToolParseError
from edgebench.framework_tools.base import clean_lines
from edgebench.framework_tools.mnn_llm_bench import (
    NO_PER_TOKEN,
    NO_REPETITIONS,
    NO_TTFT,
    LlmBenchAdapter,
    parse_llm_bench_table,
)
from edgebench.measure.methods.framework_tools import generation_of_tool
from edgebench.planning.generative_workload import GenerativeWorkload
from edgebench.results.generation_part import Generation

DATA = Path(__file__).resolve().parent.parent / "data" / "mnn_llm_bench"
SAMPLE = DATA / "llm-tiny-f16.txt"
FAILED = DATA / "no-weights.txt"
FOLDER = "/data/local/tmp/edgebench/models/llm-tiny-f16"
#: The sample's rows as it prints them: test -> [mean tok/s, standard deviation].
ROWS = {"pp16": [6112.99, 6290.51], "pp32": [20624.96, 2020.62], "tg8": [223.47, 60.37]}


def sample_text() -> str:
    return SAMPLE.read_text()


def adapter(repetitions: int = 2) -> LlmBenchAdapter:
    """The adapter as ``prepare`` leaves it for the sample's cell (f16 folder, 2 repetitions)."""
    return LlmBenchAdapter(weight_type="f16", repetitions=repetitions)


def generation_of(stdout: str) -> Generation:
    figures = adapter().parse(stdout).generation
    assert figures is not None
    return generation_of_tool(figures)


def tool_cell(workload: GenerativeWorkload) -> ToolCell:
    return ToolCell(
        model_path=f"{FOLDER}/llm.mnn",
        model_dir=FOLDER,
        threads=2,
        warmup=1,
        iterations=10,
        cores=[0, 1],
        precision="f16",
        generation=workload,
    )


def test_mnn_llm_names_llm_bench_as_its_tool() -> None:
    assert ADAPTERS["mnn-llm"] is LlmBenchAdapter
    assert {"f16", "q8_0"} <= set(LlmBenchAdapter.precisions)


def test_the_command_line_carries_the_cells_workload_quoted_and_pinned() -> None:
    cell = tool_cell(GenerativeWorkload((16, 32), gen_tokens=8, context_depth=0, repetitions=2))
    argv = LlmBenchAdapter().command("/data/local/tmp/bin/llm_bench", cell)
    assert argv == [
        "/data/local/tmp/bin/llm_bench",
        *("-m", f"{FOLDER}/config.json", "-a", "cpu", "-c", "2", "-t", "2"),
        *("-p", "16,32", "-n", "8", "-rep", "2", "-kv", "false"),
    ]
    line = LlmBenchAdapter().shell_command("/tmp/a dir/llm_bench", cell)
    assert line.startswith(f"cd {FOLDER} && taskset 3 ")
    assert shlex.split(line)[5:] == ["/tmp/a dir/llm_bench", *argv[1:]]


def test_a_context_depth_and_a_tensor_cell_are_refused() -> None:
    deep = GenerativeWorkload((16,), gen_tokens=8, context_depth=64)
    refusal = LlmBenchAdapter.workload_refusal(deep)
    assert refusal is not None and refusal.startswith("llm_bench has no context depth")
    assert LlmBenchAdapter.workload_refusal(GenerativeWorkload((16,), gen_tokens=8)) is None
    with pytest.raises(ValueError, match="no context depth"):
        LlmBenchAdapter().command("llm_bench", tool_cell(deep))
    tensor = ToolCell(model_path="m.mnn", model_dir=".", threads=1, warmup=1, iterations=1)
    with pytest.raises(ValueError, match="generative cells"):
        LlmBenchAdapter().command("llm_bench", tensor)


def test_the_table_is_read_between_mnn_s_log_lines() -> None:
    lines = clean_lines(sample_text())
    tests = parse_llm_bench_table(lines)
    assert [(t.n_prompt, t.n_gen) for t in tests] == [(16, 0), (32, 0), (0, 8)]
    assert {
        t.line.split("|")[-3].strip(): [t.tokens_per_s, t.std_tokens_per_s] for t in tests
    } == ROWS
    # MNN's log lines are in the same stream, before and between the rows
    logged = [line for line in lines if line and not line.startswith("|")]
    assert logged, "the sample holds MNN's log lines"
    assert {t.model for t in tests} == {"llm-tiny-f16"}


def test_the_figures_are_the_table_s_rates() -> None:
    result = adapter().parse(sample_text(), "", model_path=f"{FOLDER}/llm.mnn")
    generation = generation_of(sample_text())
    assert generation.weight_type == "f16"
    assert generation.prompt_lengths == [16, 32]
    for n in (16, 32):
        assert generation.prefill_tokens_per_s(n) == pytest.approx(ROWS[f"pp{n}"][0])
    assert generation.gen_tokens == 8 and generation.decode_wall_tokens == 8
    assert generation.context_depth == 0
    (wall,) = generation.decode_wall_ms
    assert wall == pytest.approx(8 * 1000.0 / ROWS["tg8"][0])
    assert generation.decode_tokens_per_s == pytest.approx(ROWS["tg8"][0])
    assert result.throughput_ips == ROWS["tg8"][0]
    assert result.avg_ms == pytest.approx(1000.0 / ROWS["tg8"][0])
    assert result.count == 2 * 8  # the cell's repetitions of tg8
    assert result.raw_lines[-1].split("|")[-3].strip() == "tg8"


def test_what_llm_bench_does_not_give_is_said_not_invented() -> None:
    result = adapter().parse(sample_text())
    generation = generation_of(sample_text())
    assert generation.ttft_ms == [] and generation.ttft_p50_ms(16) is None
    assert generation.unavailable == {
        "ttft": NO_TTFT,
        "per_token_latency": NO_PER_TOKEN,
        "repetition_times": NO_REPETITIONS,
    }
    assert result.samples_ms is None and result.median_ms is None and result.std_ms is None
    assert result.tool_version is None
    assert result.stats_available == ("count", "avg", "throughput")


def test_a_folder_the_converter_did_not_write_keeps_the_backend_s_name() -> None:
    result = LlmBenchAdapter().parse(sample_text())
    assert result.generation is not None
    assert result.generation.weight_type == "mnn-llm-model"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", ""),
        ("The device supports: i8sdot:0, fp16:0\n", ""),
        # the header alone: the run stopped before its first row
        ("\n".join(sample_text().splitlines()[:2]), ""),
    ],
)
def test_output_without_a_table_is_one_line(text: str, detail: str) -> None:
    with pytest.raises(ToolParseError) as exc:
        adapter().parse(text)
    assert str(exc.value) == "llm_bench: no '| model | ... | test | t/s |' table in the output"


def test_a_mangled_row_or_a_table_without_tg_is_named() -> None:
    lines = sample_text().splitlines()
    rows = [i for i, line in enumerate(lines) if "| tg8 " in line]
    (tg,) = rows
    mangled = lines.copy()
    mangled[tg] = mangled[tg].replace("±", "+-")
    with pytest.raises(ToolParseError, match=r"^llm_bench: .*a row that is not llm_bench's: '\|"):
        adapter().parse("\n".join(mangled))
    without = "\n".join(lines[:tg] + lines[tg + 1 :])
    with pytest.raises(ToolParseError) as exc:
        adapter().parse(without)
    assert str(exc.value) == "llm_bench: no generation test (tgN row) in the output (pass -n)"


def test_a_model_that_did_not_load_is_named_with_mnn_s_words() -> None:
    text = FAILED.read_text()  # exit 0, a table of "inf ± -nan" rows, MNN's errors before each
    with pytest.raises(ToolParseError) as exc:
        adapter().parse(text)
    assert str(exc.value) == "llm_bench: no positive t/s in the output (pp16 row: inf ± -nan)"
    assert adapter().failure_reason(text) == (
        "llm_bench said: File not exist: /tmp/h38/run/no-weights/llm.mnn.weight / "
        "[Error]: LLM weight file not found: /tmp/h38/run/no-weights/llm.mnn.weight"
    )
    assert adapter().failure_reason(sample_text()) is None
