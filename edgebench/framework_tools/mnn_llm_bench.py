"""MNN's ``llm_bench`` (transformers/llm/engine/tools/llm_bench.cpp), for mnn-llm cells: the
model folder's ``config.json``.

Command (each test loads the model anew, then runs one untimed repetition and ``-rep`` timed
ones)::

    llm_bench -m FOLDER/config.json -a cpu -c 2 -t THREADS -p 128,512 -n 128 -rep REPS -kv false

It copies llama-bench's tests (``-kv false``): one prompt test per ``-p`` length (``ppN``: the
prompt of N copies of token 16 in one forward, timed from after the embedding lookup to the
logits, the KV cache emptied before each repetition; the first token's sampling and the decode
after it are not timed) and one generation test per ``-n`` (``tgN``: a one-token prompt, whose
forward is not timed, then N single-token forwards, positions 1 to N; each forward is timed
with the detokenising of its token, the sampling between them is not). ``-c 2`` is
``precision: low``, as the folders edgebench writes say; memory (low), flash attention (on: the
engine's attention mode 8) and mmap (off) are the tool's defaults, the same as those folders'.
One thing differs from edgebench's cell and cannot be set: the generation test loads the model
with ``dynamic_option`` 8 (the prompt tests with 0), which only changes low-memory
(block-quantized) weights. Cores are pinned by ``taskset`` as for every tool. There is no
context depth (the cell is refused) and the warm-up is always one repetition.

Output (stdout, after and between MNN's log lines), a Markdown table (its padding shortened
here; tests/data/mnn_llm_bench/ has a real one)::

    The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0
    | model | modelSize | backend | threads | precision | test | t/s |
    | ----- | --------: | ------- | ------: | --------- | ---- | --: |
    | llm-tiny-f16 | 19.27 MiB | CPU | 1 | Low | pp16 | 6112.99 ± 6290.51 |
    | llm-tiny-f16 | 19.27 MiB | CPU | 1 | Low | tg8 | 223.47 ± 60.37 |

``model`` is the name of the folder holding config.json, ``t/s`` the mean and the sample standard
deviation of the repetitions' tokens per second (N over each repetition's time), to two
decimals. Its ``-j FILE`` JSON holds the same two figures per test, so the table is read.

What it gives and what it does not: per test, only the mean rate over the repetitions, not
each repetition's time. The record's prefill and decode times are one per test, the time the
mean rate implies (N / rate: exact with one repetition); with several repetitions their spread
is the table's standard deviation, kept in ``native.raw_lines``. It gives no time to first
token (the sampling and the embedding lookup are outside its prompt time), no per-token times
and no version: the record's ``generation.unavailable`` says so.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from edgebench.builds.llm_bench import BUILD_COMMAND
from edgebench.runners.protocol.model_folders import (
    FOLDER_WEIGHT_TYPES,
    MNN_LLM_CONFIG_FILE,
    MNN_LLM_OWN_FOLDER,
    read_weight_type,
)

from .base import NUMBER, ToolAdapter, ToolCell, ToolParseError, ToolResult, streams
from .generative import GenerativeWork, SizedTest, ToolGeneration
from .site import ToolSite

TOOL = "llm_bench"
RESULT_LINE = "'| model | ... | test | t/s |' table"
#: ``precision: low``, as the folders edgebench writes say (-c: 0 normal, 1 high, 2 low).
LOW_PRECISION = "2"
#: What llm_bench does not measure, as a generative record states it.
NO_TTFT = (
    "llm_bench times the prompt's forward alone (not the embedding lookup before it nor the "
    "first token's sampling after it): prefill tokens/s is its figure, time to first token is "
    "not measured"
)
NO_PER_TOKEN = (
    "llm_bench prints each test's mean tokens/s over its repetitions, not each token's time: "
    "no per-token p50/p90/p99"
)
NO_REPETITIONS = (
    "llm_bench prints the mean and standard deviation of the repetitions' tokens/s, not each "
    "repetition's time: prefill_ms and decode_wall_ms hold one time per test, the mean rate's"
)

#: ``pp16``, ``tg8``, and ``pp16+tg8`` (its ``-pg`` test, which is not asked for).
_TEST_RE = re.compile(r"pp(?P<prompt>\d+)(?:\+tg(?P<gen>\d+))?|tg(?P<only>\d+)", re.ASCII)
_RATE_RE = re.compile(rf"(?P<mean>{NUMBER})\s*±\s*(?P<std>{NUMBER})\Z", re.ASCII)
_ERROR_RE = re.compile(r"error|fail|invalid|not exist|not found|can't|cannot", re.IGNORECASE)


@dataclass(frozen=True)
class LlmBenchTest(SizedTest):
    """One row of llm_bench's table: a test's sizes and its mean rate over the repetitions."""

    n_prompt: int
    n_gen: int
    tokens_per_s: float
    std_tokens_per_s: float
    #: The folder's name (llm_bench names a model by it).
    model: str
    line: str

    @property
    def tokens(self) -> int:
        return self.n_prompt + self.n_gen

    @property
    def ms(self) -> float:
        """The time the mean rate implies for the test's tokens."""
        return self.tokens * 1000.0 / self.tokens_per_s


def parse_llm_bench_table(lines: Sequence[str]) -> list[LlmBenchTest]:
    """The rows of llm_bench's table in one stream's cleaned lines (MNN's log lines between
    them are skipped); [] when the stream has no table. ToolParseError naming the row when a
    row's test or rate is not llm_bench's."""
    header: list[str] | None = None
    tests: list[LlmBenchTest] = []
    for line in lines:
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            if {"model", "test", "t/s"} <= set(cells):
                header = cells
            continue
        if len(cells) != len(header) or set("".join(cells)) <= set("-: "):
            continue  # the separator row, or a line that is not a row of this table
        tests.append(_row(dict(zip(header, cells, strict=True)), line))
    return tests


def _row(row: dict[str, str], line: str) -> LlmBenchTest:
    test = _TEST_RE.fullmatch(row["test"])
    rate = _RATE_RE.match(row["t/s"])
    if test is None or rate is None:
        raise ToolParseError(TOOL, RESULT_LINE, f"a row that is not llm_bench's: {line.strip()!r}")
    mean, std = float(rate.group("mean")), float(rate.group("std"))
    if not (math.isfinite(mean) and mean > 0 and math.isfinite(1.0 / mean)):
        # A run whose model did not load prints "inf ± -nan" (and exits 0).
        raise ToolParseError(TOOL, "positive t/s", f"{row['test']} row: {row['t/s']}")
    return LlmBenchTest(
        n_prompt=int(test.group("prompt") or 0),
        n_gen=int(test.group("gen") or test.group("only") or 0),
        tokens_per_s=mean,
        std_tokens_per_s=std,
        model=row["model"],
        line=line.strip(),
    )


def generation_of_tests(tests: Sequence[LlmBenchTest], weight_type: str) -> ToolGeneration:
    """The cell's generative figures from llm_bench's rows: each prompt test and the (last)
    generation test."""
    decodes = [t for t in tests if t.is_generation]
    if not decodes:
        raise ToolParseError(TOOL, "generation test (tgN row)", "pass -n")
    decode = decodes[-1]
    prompts = [t for t in tests if t.is_prompt]
    return ToolGeneration(
        weight_type=weight_type,
        gen_tokens=decode.n_gen,
        context_depth=0,
        decode_wall_ms=[decode.ms],
        decode_wall_tokens=decode.n_gen,
        prefill_prompt_tokens=[t.n_prompt for t in prompts],
        prefill_ms=[t.ms for t in prompts],
        unavailable={
            "ttft": NO_TTFT,
            "per_token_latency": NO_PER_TOKEN,
            "repetition_times": NO_REPETITIONS,
        },
    )


@dataclass(kw_only=True, eq=False)
class LlmBenchAdapter(ToolAdapter):
    framework = "mnn-llm"
    binary = TOOL
    result_line = RESULT_LINE
    #: The weight types edgebench's MNN-LLM folders hold (the cell's precision).
    precisions = FOLDER_WEIGHT_TYPES
    no_op_profile = "llm_bench times whole tests (prompt, generation), not operators"
    how_to_get = (
        f"`{BUILD_COMMAND}` compiles it against this host's edgebench-native's MNN library; "
        "add --target aarch64-linux for a phone or board"
    )

    #: The folder's weight type (edgebench_weights.json), read from the host's copy by
    #: :meth:`prepare`: llm_bench does not print it.
    weight_type: str = MNN_LLM_OWN_FOLDER
    #: The cell's repetitions, for the record's count (llm_bench does not print them).
    repetitions: int = 1

    @staticmethod
    def workload_refusal(work: GenerativeWork | None) -> str | None:
        if work is not None and work.context_depth > 0:
            return (
                f"{TOOL} has no context depth (its tests start from an empty cache); measure "
                "--context-depth with the Python runner or edgebench-native"
            )
        return None

    def prepare(self, site: ToolSite, binary: str, cell: ToolCell, model: Path) -> ToolAdapter:
        work = cell.generation
        return dataclasses.replace(
            self,
            weight_type=read_weight_type(str(model.parent), MNN_LLM_OWN_FOLDER),
            repetitions=work.repetitions if work is not None else 1,
        )

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        work = cell.generation
        if work is None:
            raise ValueError("llm_bench runs generative cells (an MNN-LLM folder) only")
        refusal = self.workload_refusal(work)
        if refusal is not None:
            raise ValueError(refusal)
        return [
            binary_path,
            *("-m", f"{cell.model_dir.rstrip('/')}/{MNN_LLM_CONFIG_FILE}"),
            *("-a", "cpu"),
            *("-c", LOW_PRECISION),
            *("-t", str(cell.threads)),
            *("-p", ",".join(str(n) for n in work.prompt_tokens)),
            *("-n", str(work.gen_tokens)),
            *("-rep", str(work.repetitions)),
            *("-kv", "false"),
        ]

    def parse(
        self, stdout: str, stderr: str = "", logcat: str = "", *, model_path: str | None = None
    ) -> ToolResult:
        """The table is on stdout (with MNN's log); the first stream holding it is read."""
        tests = next(
            (found for s in streams(stdout, stderr) if (found := parse_llm_bench_table(s))), []
        )
        if not tests:
            raise ToolParseError(TOOL, RESULT_LINE)
        generation = generation_of_tests(tests, self.weight_type)
        decode = [t for t in tests if t.is_generation][-1]
        result = ToolResult(
            tool=self.tool,
            # The mean rate is what the tool states: its time per token, no percentile.
            count=self.repetitions * decode.n_gen,
            avg_ms=1000.0 / decode.tokens_per_s,
            throughput_ips=decode.tokens_per_s,
            raw_lines=[t.line for t in tests],
            generation=generation,
        )
        return result.finish()

    def failure_reason(self, stdout: str, stderr: str = "") -> str | None:
        """MNN's own words for a run without a table: its first error lines."""
        lines = [line for s in streams(stdout, stderr) for line in s if _ERROR_RE.search(line)]
        said = list(dict.fromkeys(lines))[:2]  # the first two, once each (one per test)
        return f"{TOOL} said: {' / '.join(said)[:300]}" if said else None
